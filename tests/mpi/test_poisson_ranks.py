"""The steady Poisson system on 1, 2 and 3 ranks: the same solution (to 1e-12), the same
iteration counts and residual histories, for each solver variant; `lobatto run` under
mpiexec, including a solve that does not converge (exit 1, one line, from every rank count).

This file is also the script that ``mpiexec`` runs: ``python test_poisson_ranks.py OUT_DIR
PARTITIONER`` runs every variant (lobatto.api.run on COMM_WORLD) into OUT_DIR/<variant>.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

# u = sin(2x) cos(y) exp(z/2) with k = 1 + xy/2, h = 1 + z^2 on a curved 4 x 3 x 2 box whose
# sides stay planes; three Dirichlet and three Neumann sides (as tests/unit/test_poisson.py)
U = "sin(2*x)*cos(y)*exp(0.5*z)"
UX, UY, UZ = "2*cos(2*x)*cos(y)*exp(0.5*z)", "(-sin(2*x)*sin(y)*exp(0.5*z))", "0.5*sin(2*x)*cos(y)*exp(0.5*z)"
K, H = "(1 + 0.5*x*y)", "(1 + z**2)"
CASE = f"""
[physics]
equations = "poisson"
f = "{K}*4.75*{U} - 0.5*y*{UX} - 0.5*x*{UY} + {H}*{U}"
k = "{K}"
h = "{H}"

[mesh]
elements = [4, 3, 2]
[mesh.deform]
x = "0.1*sin(pi*x)*cos(pi*y)*cos(pi*z)"
y = "0.1*sin(pi*y)*cos(pi*z)*cos(pi*x)"
z = "0.1*sin(pi*z)*cos(pi*x)*cos(pi*y)"

[discretization]
order = 5

[boundary.xmin]
value = "{U}"
[boundary.ymin]
value = "{U}"
[boundary.zmax]
value = "{U}"
[boundary.xmax]
flux = "{K}*{UX}"
[boundary.ymax]
flux = "{K}*{UY}"
[boundary.zmin]
flux = "-{K}*{UZ}"

[exact]
u = "{U}"
"""

#: [solver] tables of the variants; each must give the same iterations on every rank count
VARIANTS = {
    "mg_fcg": {"tolerance": 1e-11},
    "mg_cg": {"method": "cg", "tolerance": 1e-11},
    "mg_float32_fcg": {"precision": "float32", "tolerance": 1e-11},
    "mg_iterative_coarse_gmres": {"method": "gmres", "coarse": "pcg", "levels": [5, 2], "tolerance": 1e-11},
    "jacobi_cg": {"method": "cg", "preconditioner": "jacobi", "tolerance": 1e-11},
}


def variant_case(name: str, partitioner: str):
    from lobatto.api import parse_case
    from lobatto.config.schema import tomllib

    data = tomllib.loads(CASE)
    data["solver"] = VARIANTS[name]
    data["parallel"] = {"partitioner": partitioner}
    return parse_case(data, source=f"<{name}>", name=name)


def main(out: str, partitioner: str) -> None:
    from lobatto.api import run

    for name in VARIANTS:
        run(variant_case(name, partitioner), backend="cpu", output_dir=Path(out) / name, comm="world")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    main(sys.argv[1], sys.argv[2])
    sys.exit(0)

from mpirun import SKIP_REASON, describe, read_final, run, run_case  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

def solve_on(nprocs: int, directory: Path, partitioner: str = "rcb") -> dict:
    result = run(nprocs, [os.path.abspath(__file__), str(directory), partitioner], timeout=240)
    assert result.returncode == 0, describe(result)
    return {name: read_final(directory / name) for name in VARIANTS}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return solve_on(1, tmp_path_factory.mktemp("serial"))


@pytest.mark.parametrize("nprocs,partitioner", [(2, "rcb"), (3, "rcb"), (3, "metis")])
def test_ranks_give_the_serial_solution_and_iteration_counts(serial, nprocs, partitioner, tmp_path):
    parallel = solve_on(nprocs, tmp_path, partitioner)
    for name in VARIANTS:
        (s1, ids1, u1), (sp, idsp, up) = serial[name], parallel[name]
        assert s1["ranks"] == 1 and sp["ranks"] == nprocs and s1["converged"] and sp["converged"], name
        assert np.array_equal(ids1, idsp)
        assert sp["iterations"] == s1["iterations"], (name, s1["iterations"], sp["iterations"])
        # reproducible sums (operators/assembly.py): the serial bits on any partition
        difference = np.abs(up - u1).max() / np.abs(u1).max()
        assert np.array_equal(up, u1), f"{name}: solutions differ by {difference:.2e} (relative)"
        assert sp["residuals"] == s1["residuals"] and sp["reference_norm"] == s1["reference_norm"], name
        assert sp["errors"]["u"]["max"] < 1e-5 and sp["unknowns"] == s1["unknowns"]
    # the variants solved the same problem
    reference = serial["mg_fcg"][2]
    for name in VARIANTS:
        assert np.abs(serial[name][2] - reference).max() <= 1e-9 * np.abs(reference).max(), name


def test_lobatto_run_on_ranks_and_a_solve_that_does_not_converge(tmp_path, serial):
    summary, _, fields = run_case(tmp_path / "ok", CASE + '[solver]\ntolerance = 1e-11\n', 2)
    assert summary["ranks"] == 2 and summary["iterations"] == serial["mg_fcg"][0]["iterations"]
    assert np.abs(fields - serial["mg_fcg"][2]).max() <= 1e-12 * np.abs(fields).max()
    directory = tmp_path / "slow"
    directory.mkdir()
    (directory / "case.toml").write_text(CASE + '[solver]\npreconditioner = "jacobi"\nmax_iterations = 5\n')
    result = run(3, ["-m", "lobatto", "run", str(directory / "case.toml"), "-o", str(directory / "out"), "-q"])
    assert result.returncode == 1, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "did not converge" in lines[0] and "max_iterations (now 5)" in lines[0], describe(result)
    saved = json.loads((directory / "out" / "summary.json").read_text())
    assert saved["converged"] is False and saved["ranks"] == 3 and saved["iterations"] == 5
