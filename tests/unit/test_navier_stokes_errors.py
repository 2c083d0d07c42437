"""``lobatto run`` of Navier–Stokes cases that must stop (docs/navier-stokes.md), on 1 and 2
ranks, the real command in a subprocess: bad input is one line naming the file and key,
exit 2; a pressure solve that does not converge, or a CFL number above max_cfl, is one line
naming the step and time, exit 1, and so is a flow gone unstable (the watch of
navier_stokes/reports.py). Never a traceback, never one line per rank."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "mpi"))
import mpirun  # noqa: E402

# a channel between walls at y = +-1, driven by a force, periodic in x and z
BASE = """\
[physics]
equations = "navier_stokes"
viscosity = 0.05
force_x = "1"

[mesh]
elements = [2, 2, 2]
lower = [0.0, -1.0, 0.0]
upper = [2.0, 1.0, 1.0]
periodic = [true, false, true]

[discretization]
order = 3

[initial]
ux = "1 - y**2"

[time]
dt = 0.05
t_end = 0.1
"""

# a periodic Taylor-Green box (it cannot gain kinetic energy) at CFL 2.5 with extrapolated
# advection: it gains energy from the first step and is stopped at step 4 (t = 1.8)
UNSTABLE = """\
[physics]
equations = "navier_stokes"
viscosity = 6.25e-4
filter_modes = 1

[mesh]
elements = [4, 4, 4]
upper = [6.283185307179586, 6.283185307179586, 6.283185307179586]
periodic = [true, true, true]

[discretization]
order = 5

[time]
target_cfl = 2.5
max_cfl = 10.0
t_end = 5.0

[solver.pressure]
tolerance = 1e-6
coarse_tolerance = 0.1

[initial]
ux = "sin(x)*cos(y)*cos(z)"
uy = "-cos(x)*sin(y)*cos(z)"
"""

#: name: (the case text, exit code, fragments the one line must hold)
CASES = {
    "pressure_key": (BASE + "\n[solver.pressure]\ntoleranse = 1e-8\n", 2,
                     ["case.toml", "solver.pressure.toleranse", "did you mean 'solver.pressure.tolerance'"]),
    "pressure_value": (BASE + '\n[solver.pressure]\nmethod = "bicgstab"\n', 2,
                       ["case.toml", "[solver.pressure] method", "bicgstab"]),
    "velocity_value": (BASE + "\n[solver.velocity]\ntolerance = -1\n", 2,
                       ["case.toml", "[solver.velocity] tolerance must be a positive number", "-1"]),
    "velocity_key": (BASE + "\n[solver.velocity]\nprojection = 8\n", 2,
                     ["case.toml", "solver.velocity.projection"]),
    "table_on_outflow": (BASE.replace("periodic = [true, false, true]",
                                      'periodic = [true, false, true]\n[mesh.boundaries]\nymax = "outflow"')
                         + '\n[boundary.ymax]\nux = "1"\n', 2,
                         ["case.toml", "[boundary.ymax]", 'ymax = "outflow"']),
    "force_expression": (BASE.replace('force_x = "1"', 'force_x = "sinn(x)"'), 2,
                         ["case.toml", "[physics] force_x", "unknown function 'sinn'"]),
    "force_unknown_scalar": (BASE.replace('force_x = "1"', 'force_x = "1"\nscalars = ["T"]\nforce_z = "10*temp"')
                             + "\n[scalar.T]\ndiffusivity = 0.1\n", 2,
                             ["case.toml", "[physics] force_z", "unknown name 'temp'", "variables x, y, z, t, T"]),
    "force_out_of_range_mid_run": (BASE.replace('force_x = "1"', 'force_x = "1"\nscalars = ["T"]\nforce_y = "T**-400"')
                                   + '\n[scalar.T]\ndiffusivity = 0.1\n[boundary.ymin]\nT = 0\n', 1,
                                   ["[physics] force_y = \"T**-400\" left its range", "at t = 0.05"]),
    "dt_and_target_cfl": (BASE.replace("dt = 0.05", "dt = 0.05\ntarget_cfl = 0.5"), 2,
                          ["case.toml", "[time] dt and target_cfl are both set"]),
    "pressure_not_converged": (BASE + "\n[solver.pressure]\nmax_iterations = 1\ntolerance = 1e-14\n", 1,
                               ["pressure solve of step 1 (t = 0.05) did not converge", "[solver.pressure]",
                                "max_iterations"]),
    "unstable": (UNSTABLE, 1, ["the flow went unstable by step 4", "kinetic energy rose",
                               "lower [time] target_cfl (now 2.5) or raise [time] substeps (now 0"]),
    "cfl_above_max": (BASE.replace("dt = 0.05", "dt = 5.0\nmax_cfl = 1.0").replace("t_end = 0.1", "t_end = 20.0"),
                      1, ["CFL number of step 1 (t = 5, dt = 5)", "above [time] max_cfl = 1.0", "lower [time] dt"]),
}


def lobatto_run(nprocs: int, case: Path, out: Path) -> subprocess.CompletedProcess:
    argv = ["-m", "lobatto", "run", str(case), "--output", str(out), "--quiet"]
    if nprocs > 1:
        return mpirun.run(nprocs, argv, timeout=120)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("LOBATTO_DEBUG", None)
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("nprocs", [1, pytest.param(2, marks=pytest.mark.skipif(
    mpirun.SKIP_REASON is not None, reason=mpirun.SKIP_REASON or ""))])
@pytest.mark.parametrize("name", sorted(CASES))
def test_one_line_and_the_exit_code(tmp_path, name, nprocs):
    text, code, fragments = CASES[name]
    case = tmp_path / "case.toml"
    case.write_text(text)
    proc = lobatto_run(nprocs, case, tmp_path / "out")
    assert proc.returncode == code, mpirun.describe(proc)
    assert "Traceback" not in proc.stderr, mpirun.describe(proc)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("lobatto: error: "), mpirun.describe(proc)
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_the_base_case_runs(tmp_path):
    """The cases above differ from this one only in what they break."""
    case = tmp_path / "case.toml"
    case.write_text(BASE)
    proc = lobatto_run(1, case, tmp_path / "out")
    assert proc.returncode == 0 and proc.stderr.strip() == "", mpirun.describe(proc)
    assert (tmp_path / "out" / "summary.json").exists()


def test_a_mesh_too_large_for_the_memory_is_refused(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(BASE.replace("elements = [2, 2, 2]", "elements = [300, 300, 300]").replace("order = 3",
                                                                                                "order = 7"))
    proc = lobatto_run(1, case, tmp_path / "out")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, mpirun.describe(proc)
    (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "[mesh] elements = [300, 300, 300] at order 7 needs about" in line and "GiB of host memory" in line


def test_the_memory_estimate_counts_the_systems_arrays():
    """check_memory takes NavierStokesSystem.memory_states (measured, docs/navier-stokes.md)
    rather than the BDF stepper's few states."""
    from lobatto.api import parse_case
    from lobatto.backends import get_backend
    from lobatto.config.schema import tomllib
    from lobatto.runner.build import check_memory
    from lobatto.machine.resources import estimate_run_memory
    from lobatto.systems.navier_stokes.system import NavierStokesSystem

    case = parse_case(tomllib.loads(BASE.replace("elements = [2, 2, 2]", "elements = [8, 8, 8]")
                                    .replace("order = 3", "order = 7")))
    found = check_memory(case, NavierStokesSystem, get_backend("cpu", precision="float64"))
    expected = estimate_run_memory(512, 7, 4, NavierStokesSystem.trace_components, "float64",
                                   integrator_states=NavierStokesSystem.memory_states, exact_fields=False,
                                   reference_kernels=not NavierStokesSystem.tuned_on(get_backend("cpu")))
    assert found["base_host_bytes"] == expected["host_bytes"]
    # plus the pressure solver's multigrid levels (orders 3 and 1), counted by their own hook
    levels = [item for item in found["items"] if item.what.startswith("[solver.pressure] multigrid levels [3, 1]")]
    assert len(found["items"]) == 1 and len(levels) == 1
    assert found["host_bytes"] == expected["host_bytes"] + int(math.ceil(levels[0].host * 1.2))
    # measured peak of this run (TGV, BDF3, 10 steps): 379 MB; the estimate stays within 1.5x above
    assert 379e6 < found["host_bytes"] < 1.5 * 379e6
