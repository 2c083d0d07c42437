"""Every number of the Navier-Stokes, Poisson and acoustics tables, [solver.*], [time],
[mesh], [output], [output.probes] and [checkpoint] has a declared range with its reason
(config/ranges.py), checked before any work: a value outside is one line naming the file
and key, exit 2, no RuntimeWarning, on every rank (docs/case-file.md, "Ranges")."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.config.ranges import SECTION_RANGES, Range, kind_range
from lobatto.errors import SolverError
from lobatto.mesh.box import box_mesh
from lobatto.mesh.geometry import compute_geometry
from lobatto.solvers.coarse import DenseCoarseSolve
from lobatto.solvers.multigrid import Level
from lobatto.systems.acoustics.system import SPEC as ACOUSTICS
from lobatto.systems.navier_stokes.spec import SCALAR_KEYS
from lobatto.systems.navier_stokes.spec import SPEC as NAVIER_STOKES
from lobatto.systems.poisson.system import SPEC as POISSON

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "mpi"))
import mpirun  # noqa: E402
from test_navier_stokes_errors import BASE  # noqa: E402

NUMERIC = ("positive", "nonnegative", "number", "expression", "expression_t", "positive_integer", "count")


def all_keys():
    for spec in (NAVIER_STOKES, POISSON, ACOUSTICS):
        for key in spec.keys:
            yield f"{spec.name} [physics] {key.name}", key
        for table, keys in spec.tables.items():
            for key in keys:
                yield f"{spec.name} [{table}] {key.name}", key
        for key in spec.boundary_keys:
            yield f"{spec.name} [boundary.<name>] {key.name}", key
    for key in SCALAR_KEYS:
        yield f"navier_stokes [scalar.<name>] {key.name}", key


@pytest.mark.parametrize("where,key", list(all_keys()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_number_declares_a_range_with_a_reason_that_holds_its_default(where, key):
    if key.kind not in NUMERIC:
        return
    valid = key.valid_range
    assert valid is not None and valid.reason, where
    if key.kind in ("positive_integer", "count"):  # integers: the range is the key's own
        assert key.range is not None and valid.high is not None, where
    default = key.default
    if default is None:
        return
    if key.kind.startswith("expression"):
        default = float(default)
    assert valid.contains(default), (where, default, valid.text())


def test_generic_ranges_have_reasons_and_the_kinds_bound_magnitudes():
    assert all(r.reason for r in SECTION_RANGES.values())
    for kind in ("positive", "nonnegative", "number"):
        r = kind_range(kind)
        assert not r.contains(1e101) and not r.contains(-1e101) and not r.contains(math.nan)
        assert not r.contains(math.inf) and r.contains(1e100)
    assert not kind_range("positive").contains(1e-101) and kind_range("nonnegative").contains(0.0)


def test_range_bounds_and_words():
    r = Range(0.0, 1.0, "why", low_open=True, high_open=True)
    assert [r.contains(v) for v in (0.0, 1e-300, 0.5, 1.0, math.nan, 10**400)] == [False, True, True, False, False,
                                                                                   False]
    assert r.text() == "> 0 and < 1" and r.describe() == "> 0 and < 1 (why)"
    assert Range(1, 50, "x").text() == "from 1 to 50" and Range(high=3.0).text() == "<= 3"
    values = np.array([-1.0, 0.0, 0.25, 1.0, np.nan, np.inf])
    np.testing.assert_array_equal(r.within(values), [False, False, True, False, False, False])


# ------------------------------------------------------------------- the findings, by CLI
NS = BASE  # the Navier-Stokes channel of the error tests

POISSON_CASE = """\
[physics]
equations = "poisson"
f = "-4"
k = "2"

[mesh]
elements = [2, 2, 2]

[discretization]
order = 3

[boundary.xmin]
value = "1"
[boundary.ymin]
flux = "1"
"""

#: name: (case text, fragments of the one error line); every one exit 2
CASES = {
    # ran with 0 pressure iterations and exited 0
    "pressure_tolerance": (NS + "\n[solver.pressure]\ntolerance = 2.0\n",
                           ["[solver.pressure] tolerance must be a number >= 1e-100 and < 1", "relative residual",
                            "got 2.0"]),
    # printed RuntimeWarnings, then blamed the cfl
    "flow_rate": (NS.replace('force_x = "1"', "flow_rate = 1e308"),
                  ["[physics] flow_rate must be a number from 0 to 1e+100", "float64", "got 1e+308"]),
    # printed RuntimeWarnings, then a ValueError traceback from the Krylov solver
    "viscosity": (NS.replace("viscosity = 0.05", "viscosity = 1e308"),
                  ["[physics] viscosity must be a number from 1e-100 to 1e+100", "got 1e+308"]),
    "velocity_tolerance": (NS + "\n[solver.velocity]\ntolerance = 1.0\n",
                           ["[solver.velocity] tolerance must be a number >= 1e-100 and < 1", "got 1.0"]),
    "force_on_the_mesh": (NS.replace('force_x = "1"', 'force_x = "1e200*x"'),
                          ['[physics] force_x = "1e200*x" is', "its values must be from -1e+100 to 1e+100"]),
    "filter_modes": (NS.replace('force_x = "1"', 'force_x = "1"\nfilter_modes = 3'),
                     ["[physics] filter_modes = 3 must be at most [discretization] order - 1 = 2"]),
    # never finished its first iteration
    "smoother_degree": (POISSON_CASE + "\n[solver]\nsmoother_degree = 1000000\n",
                        ["[solver] smoother_degree must be an integer from 1 to 50", "got 1000000"]),
    # refused by its memory estimate elsewhere; here by its range, with the reason
    "gmres_restart": (POISSON_CASE + '\n[solver]\nmethod = "gmres"\nrestart = 1000000000\n',
                      ["[solver] restart must be an integer from 1 to 1000", "restart + 1 vectors"]),
    # printed RuntimeWarnings, then blamed "a pure Neumann problem" though xmin is Dirichlet
    "poisson_k": (POISSON_CASE.replace('k = "2"', 'k = "1e308*x+1"'),
                  ['[physics] k = "1e308*x+1" is', "its values must be from 1e-100 to 1e+100"]),
    "poisson_boundary": (POISSON_CASE.replace('value = "1"', 'value = "1e300*y"'),
                         ['[boundary.xmin] value = "1e300*y" is', "its values must be from -1e+100 to 1e+100"]),
    # the pressure solve broke down at step 1 blaming max_iterations, tolerance and dt
    "float32_viscosity": (NS.replace("viscosity = 0.05", "viscosity = 1e-40") + '\n[backend]\nprecision = "float32"\n',
                          ["[physics] viscosity = 1e-40 is too small for float32", "precision = \"float64\""]),
    "float32_poisson_k": (POISSON_CASE.replace('k = "2"', 'k = "1e-25*(1 + x)"') + '\n[backend]\nprecision = '
                          '"float32"\n\n[solver]\ntolerance = 1e-5\n',
                          ['[physics] k = "1e-25*(1 + x)" is', "0 or of magnitude from 1.0842e-19"]),
    "checkpoint_keep": (NS + "\n[checkpoint]\nevery = 1\nkeep = 10000000\n",
                        ["[checkpoint] keep must be an integer from 1 to 1e+06"]),
    "probe_point": (NS + "\n[output.probes]\npoints = [[1e300, 0.0, 0.0]]\n",
                    ["[output.probes] points", "from -1e+100 to 1e+100"]),
    # time-dependent data within range at t = 0 and out of it at t_end = 0.1: refused at set-up
    # (the steps do not check it; it was refused at step 1, t = 0.05, on the ranks that own it)
    "force_at_t_end": (NS.replace('force_x = "1"', 'force_x = "exp(8000*t)"'),
                       ['[physics] force_x = "exp(8000*t)" is inf', "at t = 0.1 "]),
    "inflow_at_t_end": (NS + '\n[boundary.ymin]\nux = "exp(8000*t)*(2 + x)"\n',
                        ['[boundary.ymin] ux = "exp(8000*t)*(2 + x)" is inf', "at t = 0.1 "]),
    "scalar_source_at_t_end": (NS.replace('force_x = "1"', 'force_x = "1"\nscalars = ["T"]')
                               + '\n[scalar.T]\ndiffusivity = 0.01\nsource = "exp(8000*t)"\n',
                               ['[scalar.T] source = "exp(8000*t)" is inf', "at t = 0.1 "]),
    "scalar_boundary_at_t_end": (NS.replace('force_x = "1"', 'force_x = "1"\nscalars = ["T"]')
                                 + '\n[scalar.T]\ndiffusivity = 0.01\n\n[boundary.ymax]\nT = "exp(8000*t)*(2 + x)"\n',
                                 ['[boundary.ymax] T = "exp(8000*t)*(2 + x)" is inf', "at t = 0.1 "]),
}


def lobatto_run(nprocs: int, text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    case = tmp_path / "case.toml"
    case.write_text(text)
    argv = ["-m", "lobatto", "run", str(case), "--output", str(tmp_path / "out"), "--quiet"]
    if nprocs > 1:
        return mpirun.run(nprocs, argv, timeout=120)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("LOBATTO_DEBUG", None)
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=120)


def one_error_line(proc) -> str:
    assert proc.returncode == 2, mpirun.describe(proc)
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, mpirun.describe(proc)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("lobatto: error: "), mpirun.describe(proc)
    assert "case.toml" in lines[0]
    return lines[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_out_of_range_is_one_line_naming_the_key(tmp_path, name):
    text, fragments = CASES[name]
    line = one_error_line(lobatto_run(1, text, tmp_path))
    for fragment in fragments:
        assert fragment in line, (fragment, line)


@pytest.mark.skipif(mpirun.SKIP_REASON is not None, reason=mpirun.SKIP_REASON or "")
@pytest.mark.parametrize("nprocs", [2, 3])
@pytest.mark.parametrize("name", ["poisson_k", "poisson_boundary", "force_on_the_mesh", "inflow_at_t_end"])
def test_values_checked_on_the_mesh_stop_every_rank(tmp_path, name, nprocs):
    """The mesh's values are on some ranks only: still one line, exit 2, no hang."""
    text, fragments = CASES[name]
    line = one_error_line(lobatto_run(nprocs, text, tmp_path))
    assert fragments[0] in line, line


# ---------------------------------------------------------------- the coarse solve's blame
def coarse_level(h1, dirichlet_sides: bool):
    mesh = box_mesh((2, 2, 2))
    dirichlet = (mesh.face_neighbour < 0) & dirichlet_sides
    geometry = compute_geometry(mesh, 1)
    return Level.build(mesh, 1, get_backend("cpu"), dirichlet=dirichlet, h1=h1, geometry=geometry)


def test_a_singular_coarse_matrix_with_dirichlet_points_is_not_called_pure_neumann():
    level = coarse_level(-1.0, True)  # negative definite, with Dirichlet points
    with pytest.raises(SolverError) as error:
        DenseCoarseSolve(level.operator, level.assembly)
    assert "pure Neumann" not in str(error.value) and "though Dirichlet points fix it" in str(error.value)
    level = coarse_level(1.0, False)  # the genuine pure Neumann problem keeps its message
    with pytest.raises(SolverError, match="pure Neumann"):
        DenseCoarseSolve(level.operator, level.assembly)


def test_a_coarse_matrix_that_overflows_says_so():
    level = coarse_level(1e308, True)
    with np.errstate(all="ignore"), pytest.raises(SolverError, match="non-finite entries"):
        DenseCoarseSolve(level.operator, level.assembly)


# ------------------------------------------------------------------- docs/case-file.md
def declared_ranges():
    """(label as docs/case-file.md writes it, the key's name, Range) of every range above."""
    for where, key in all_keys():
        if key.valid_range is not None:
            yield where.split(" ", 1)[1].replace(" (", "").rstrip(")"), key.name, key.valid_range
    for (section, name), valid in SECTION_RANGES.items():
        yield f"[{section}] {name}", name, valid


def test_the_docs_list_every_range():
    from lobatto.config.ranges import MAGNITUDE_REASON

    text = (ROOT / "docs" / "case-file.md").read_text(encoding="utf-8")
    section = text[text.index("## Ranges"):text.index("## Expressions")]
    paragraph, table = section.split("| key | range | why |")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    for label, name, valid in declared_ranges():
        if valid.reason == MAGNITUDE_REASON:
            assert f"`{name}`" in paragraph or f"`{label}`" in paragraph, label
            continue
        row = [r for r in rows if f"`{label}`" in r.split(" | ")[0]]
        assert len(row) == 1, label
        assert f"| {valid.text()} |" in row[0], (label, valid.text(), row[0])


def test_nek5000_bounds_of_values_beyond_float32_are_written_without_a_warning(tmp_path):
    """A viscosity of 1e100 gives a pressure of about 1e100 (fuzz round, seed 4, case 108): the
    data is float64, the format's per-element bounds float32; the cast warned (exit 0)."""
    import warnings

    from lobatto.io import nek5000

    rng = np.random.default_rng(28)
    order, nel = 2, 2
    coords = rng.random((3, nel) + (order + 1,) * 3)
    pressure = 1e100 * (1 + rng.random((nel,) + (order + 1,) * 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nek5000.write_field_file(tmp_path / "c0.f00001", coords, {"p": pressure}, 0.0, 1, order, pressure="p")
    raw = (tmp_path / "c0.f00001").read_bytes()
    npts = (order + 1) ** 3
    data = np.frombuffer(raw, "<f8", 4 * nel * npts, 136 + 4 * nel)
    np.testing.assert_array_equal(data[3 * nel * npts:].reshape(pressure.shape), pressure)  # exact, float64
    bounds = np.frombuffer(raw, "<f4", offset=136 + 4 * nel + 4 * nel * npts * 8)[-2 * nel:]
    assert np.all(bounds == np.finfo(np.float32).max)
