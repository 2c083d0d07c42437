"""``lobatto run`` on bad input: exit 2, one line on stderr naming the file and
key, and no traceback. Runs the real command in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

GOOD = """\
[mesh]
elements = [2, 2, 2]

[initial]
Ez = "sin(pi*x)*sin(pi*y)"

[time]
t_end = 0.1
"""


def run_cli(*args, cwd=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("LOBATTO_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "lobatto", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
    )


def assert_one_line_error(proc, *fragments, code=2):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("lobatto: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def write_case(tmp_path, text, name="cavity.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_unknown_key(tmp_path):
    path = write_case(tmp_path, GOOD + "\n[discretisation]\norder = 5\n")
    proc = run_cli("run", str(path), "--output", str(tmp_path / "out"))
    assert_one_line_error(proc, "cavity.toml", "'discretisation'", "did you mean 'discretization'?")


def test_unknown_key_in_section(tmp_path):
    path = write_case(tmp_path, GOOD.replace("t_end = 0.1", "t_end = 0.1\ncfll = 0.2"))
    proc = run_cli("run", str(path))
    assert_one_line_error(proc, "cavity.toml", "time.cfll", "time.cfl")


def test_wrong_type(tmp_path):
    path = write_case(tmp_path, GOOD.replace("t_end = 0.1", 't_end = 0.1\ncfl = "fast"'))
    proc = run_cli("run", str(path))
    line = assert_one_line_error(proc, "cavity.toml", "[time] cfl must be a positive number", '"fast"')
    assert line == f'lobatto: error: {path}: [time] cfl must be a positive number, got "fast"'


def test_out_of_range_order(tmp_path):
    path = write_case(tmp_path, GOOD + "\n[discretization]\norder = 31\n")
    proc = run_cli("run", str(path))
    assert_one_line_error(proc, "cavity.toml", "[discretization] order", "31")


def test_unknown_function_in_expression(tmp_path):
    path = write_case(tmp_path, GOOD.replace("sin(pi*x)*sin", "sinn(pi*x)*sin"))
    proc = run_cli("run", str(path))
    assert_one_line_error(proc, "cavity.toml", "[initial] Ez", "unknown function 'sinn'")


def test_unsafe_expression(tmp_path):
    path = write_case(tmp_path, GOOD.replace('"sin(pi*x)*sin(pi*y)"', "\"__import__('os').getcwd()\""))
    proc = run_cli("run", str(path))
    assert_one_line_error(proc, "cavity.toml", "[initial] Ez")


def test_missing_file(tmp_path):
    missing = tmp_path / "does_not_exist.toml"
    proc = run_cli("run", str(missing))
    assert_one_line_error(proc, "does_not_exist.toml", "no such case file")


def test_toml_syntax_error(tmp_path):
    path = write_case(tmp_path, GOOD.replace("t_end = 0.1", "t_end = = 0.1"))
    proc = run_cli("run", str(path))
    assert_one_line_error(proc, "cavity.toml", "line 8", "invalid TOML")


def test_boundary_on_periodic_axis(tmp_path):
    text = GOOD.replace("elements = [2, 2, 2]",
                        "elements = [2, 2, 2]\nperiodic = [true, false, false]\n"
                        "[mesh.boundaries]\nxmin = \"pmc\"")
    path = write_case(tmp_path, text)
    proc = run_cli("run", str(path))
    assert_one_line_error(proc, "cavity.toml", "xmin", "periodic")


def test_output_path_is_a_file(tmp_path):
    path = write_case(tmp_path, GOOD)
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    proc = run_cli("run", str(path), "--output", str(blocker))
    assert_one_line_error(proc, "blocker")


def test_bad_option_is_a_usage_error(tmp_path):
    path = write_case(tmp_path, GOOD)
    proc = run_cli("run", str(path), "--backend", "tpu")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "invalid choice" in proc.stderr


def test_version():
    from lobatto import __version__

    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"lobatto {__version__}"


def test_main_returns_exit_codes(tmp_path, capsys):
    from lobatto.cli import main

    path = write_case(tmp_path, GOOD.replace("0.1", "-1.0"))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[time] t_end must be a positive number, got -1.0" in err
    assert main(["--version"]) == 0
    assert main([]) == 2


def test_solver_error_exit_1_and_interrupt_130(tmp_path, capsys, monkeypatch):
    import types

    from lobatto import cli
    from lobatto.errors import SolverError

    path = write_case(tmp_path, GOOD)
    calls = {}

    def failing_run_case(case, backend, output_dir, progress, comm=None):
        calls["args"] = (case.name, backend, Path(output_dir))
        progress(1, 10, 0.01)
        raise SolverError("NaN in Ez at step 3 (element 7)")

    fake = types.ModuleType("lobatto.runner.simulation")
    fake.run_case = failing_run_case
    monkeypatch.setattr("lobatto.api.run_case", lambda *a, **k: fake.run_case(*a, **k))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", str(path), "--backend", "cpu", "--quiet"]) == 1
    assert calls["args"] == ("cavity", "cpu", Path("cavity_out"))
    assert (tmp_path / "cavity_out").is_dir()
    err = capsys.readouterr().err
    assert err == "lobatto: error: NaN in Ez at step 3 (element 7)\n"

    def interrupted(case, backend, output_dir, progress, comm=None):
        raise KeyboardInterrupt

    fake.run_case = interrupted
    assert cli.main(["run", str(path), "-o", str(tmp_path / "o2")]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "lobatto: interrupted" and "Traceback" not in err


def test_run_prints_summary_from_driver(tmp_path, capsys, monkeypatch):
    import types

    from lobatto import cli

    path = write_case(tmp_path, GOOD)
    seen = {}

    def fake_run_case(case, backend, output_dir, progress, comm=None):
        seen["backend"] = backend
        return {"order": case.discretization.order, "steps": 17, "backend": backend,
                "errors": {"Ez": {"l2": 1.5e-7, "max": 2.5e-7}}}

    fake = types.ModuleType("lobatto.runner.simulation")
    fake.run_case = fake_run_case
    monkeypatch.setattr("lobatto.api.run_case", lambda *a, **k: fake.run_case(*a, **k))
    assert cli.main(["run", str(path), "-o", str(tmp_path / "out"), "-q"]) == 0
    out = capsys.readouterr().out
    assert seen["backend"] == "cpu"
    assert "steps" in out and "17" in out and "1.5000e-07" in out


def test_bench_dispatch_passes_remaining_argv(monkeypatch, capsys):
    import types

    from lobatto import cli

    got = {}
    fake = types.ModuleType("lobatto.bench.cli")

    def bench_main(argv):
        got["argv"] = list(argv)
        return 3

    fake.main = bench_main
    monkeypatch.setitem(sys.modules, "lobatto.bench.cli", fake)
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: object())
    assert cli.main(["bench", "--order", "7", "-x"]) == 3
    assert got["argv"] == ["--order", "7", "-x"]


@pytest.mark.parametrize("argv", [["bench"], ["bench", "--help"]])
def test_bench_missing_module_is_an_error_not_a_traceback(argv, monkeypatch, capsys):
    from lobatto import cli

    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: None)
    assert cli.main(argv) == 2
    assert "lobatto bench" in capsys.readouterr().err


# ----------------------------------------------------------------- progress bar
class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Stream:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_silent_at_first_then_plain_lines_when_not_a_tty():
    from lobatto.io.progress import ProgressBar

    clock, stream = FakeClock(), Stream(tty=False)
    bar = ProgressBar(None, stream=stream, min_seconds=2.0, clock=clock)
    for step in range(1, 51):
        clock.now += 0.01  # 0.5 s in all: still inside min_seconds
        bar(step, 1000, step * 1e-3)
    assert stream.text == ""
    for step in range(51, 1001):
        clock.now += 0.01
        bar(step, 1000, step * 1e-3)
    bar.close()
    lines = stream.text.splitlines()
    assert "\r" not in stream.text
    assert 8 <= len(lines) <= 10, lines  # about one line per 10 %
    assert lines[-1].startswith("100.0%") and "step 1000/1000" in lines[-1]
    assert "steps/s" in lines[-1] and "ETA" in lines[-1]


def test_progress_tty_redraws_one_line_throttled():
    from lobatto.io.progress import ProgressBar

    clock, stream = FakeClock(), Stream(tty=True)
    bar = ProgressBar(500, stream=stream, min_seconds=0.0, clock=clock)
    for step in range(1, 501):
        clock.now += 0.001  # 0.5 s over 500 steps: about 5 redraws at 10/s
        bar(step, None, step * 0.01)
    bar.close()
    bar.close()
    assert stream.text.count("\r") <= 8
    assert stream.text.endswith("\n") and stream.text.count("\n") == 1
    assert "100.0%" in stream.text.split("\r")[-1]


def test_summary_printed_on_rank_0_only(tmp_path, capsys, monkeypatch):
    import types

    from lobatto import cli

    path = write_case(tmp_path, GOOD)
    got = {}

    def fake_run_case(case, backend, output_dir, progress, comm=None):
        got["progress"] = progress
        return {"order": 7, "steps": 3}

    fake = types.ModuleType("lobatto.runner.simulation")
    fake.run_case = fake_run_case
    monkeypatch.setattr("lobatto.api.run_case", lambda *a, **k: fake.run_case(*a, **k))
    monkeypatch.setattr(cli, "_world_rank", lambda: 1)
    assert cli.main(["run", str(path), "-o", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().out == ""
    assert got["progress"] is cli._no_progress
    monkeypatch.setattr(cli, "_world_rank", lambda: 0)
    assert cli.main(["run", str(path), "-o", str(tmp_path / "o"), "-q"]) == 0
    assert "steps" in capsys.readouterr().out


# --------------------------------------------------------------------- found by the audit
DATA = ROOT / "tests" / "data"


def gmsh_case(tmp_path, mesh: Path) -> Path:
    return write_case(tmp_path, f'[mesh]\ngenerator = "gmsh"\nfile = "{mesh}"\n[discretization]\norder = 2\n'
                                '[initial]\nEz = "1"\n[time]\nt_end = 0.01\n')


def test_mesh_file_too_large_for_float64_is_an_input_error(tmp_path):
    """A valid box scaled by 1e120: its Jacobians overflow (it was an OverflowError traceback)."""
    pytest.importorskip("gmsh")
    lines = (DATA / "meshes" / "box_msh22.msh").read_text().splitlines()
    start, end = lines.index("$Nodes") + 2, lines.index("$EndNodes")
    for i in range(start, end):
        tag, *xyz = lines[i].split()
        lines[i] = " ".join([tag] + [repr(float(v) * 1e120) for v in xyz])
    mesh = tmp_path / "huge.msh"
    mesh.write_text("\n".join(lines) + "\n")
    proc = run_cli("run", str(gmsh_case(tmp_path, mesh)), "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, "cavity.toml", "huge.msh", "(number 33 in the file)", "rescale the mesh's units")


def test_nek_mesh_with_coordinates_that_are_no_numbers(tmp_path):
    """NaN corners in a .re2: one line naming the element as Nek numbers it, no RuntimeWarning."""
    data = bytearray((DATA / "nek" / "3dboxper.re2").read_bytes())
    record = 84 + 9 * 200  # #v002: 80-byte header, 4-byte test word, then per element 25 float64
    data[record: record + 200] = np.full(25, np.nan).tobytes()  # element 10: its group and corners
    mesh = tmp_path / "nan.re2"
    mesh.write_bytes(bytes(data))
    case = write_case(tmp_path, f'[mesh]\ngenerator = "nek"\nfile = "{mesh}"\n[discretization]\norder = 2\n'
                                '[initial]\nEz = "1"\n[time]\nt_end = 0.01\n')
    proc = run_cli("run", str(case), "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, "nan.re2: element 10 has corner coordinates that are not finite numbers")


def test_resonances_of_a_file_that_is_no_time_series(tmp_path):
    h5py = pytest.importorskip("h5py")
    (tmp_path / "binary_probes.csv").write_bytes(b"\x93\xff\x00 not text")
    (tmp_path / "headless_probes.csv").write_text("a,b\n1,2\n")
    (tmp_path / "cell_probes.csv").write_text("step,time,Ez@p0\n0,0.0,1.0\n1,0.1,abc\n")
    with h5py.File(tmp_path / "empty_probes.h5", "w") as f:
        f.create_group("probes")
    for name, words in [("binary_probes.csv", ["cannot read the time series", "utf-8"]),
                        ("headless_probes.csv", ["no 'step,time' header"]),
                        ("cell_probes.csv", ["could not convert string to float: 'abc'"]),
                        ("empty_probes.h5", ["not a lobatto time series", "fields"])]:
        proc = run_cli("resonances", str(tmp_path / name))
        assert_one_line_error(proc, name, *words)


@pytest.mark.parametrize("argv, words", [
    (["--steps", "0"], ["--steps must be >= 1"]),
    (["--steps", "-1"], ["--steps must be >= 1"]),  # it printed negative times and rates, exit 0
    (["--repeats", "0"], ["--repeats must be >= 1"]),
    (["--order", "99"], ["--order must be from 1 to 24, got 99"]),
])
def test_bench_maxwell_refuses_counts_out_of_range(argv, words):
    proc = run_cli("bench", "maxwell", "--backend", "cpu", "--order", "2", "--elements", "1", "1", "1", *argv)
    assert_one_line_error(proc, *words)


def test_bench_scaling_refuses_an_order_above_the_largest():
    proc = run_cli("bench", "scaling", "--weak", "--order", "30")
    assert_one_line_error(proc, "--order must be from 1 to 24 (got 30)")


def test_flow_rate_on_a_mesh_whose_velocity_nodes_are_all_on_walls(tmp_path):
    """Order 1 and one element between the walls: the driving force moves nothing (it was a
    ZeroDivisionError traceback, found by tests/fuzz with seed 4242, case 297)."""
    path = write_case(tmp_path, """\
[physics]
equations = "navier_stokes"
viscosity = 0.01
flow_rate = 1.0

[mesh]
elements = [2, 1, 2]
lower = [0.0, -1.0, 0.0]
upper = [2.0, 1.0, 1.0]
periodic = [true, false, true]
boundary = "wall"

[discretization]
order = 1

[time]
integrator = "bdf2"
dt = 0.02
t_end = 0.04
""")
    proc = run_cli("run", str(path), "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, "[physics] flow_rate = 1", "moves no fluid", "[discretization] order")


def test_restart_from_a_checkpoint_whose_index_is_damaged(tmp_path):
    """index.h5 carries a SHA-256 of its attributes and element lists: a value changed in place
    (it restarted silently with it) is refused; an index without the checksum (written before
    it existed) is read, its attributes checked for type (damaged ones were tracebacks)."""
    h5py = pytest.importorskip("h5py")
    path = write_case(tmp_path, GOOD + "\n[checkpoint]\nevery = 2\nat_end = false\n")
    out = tmp_path / "out"
    proc = run_cli("run", str(path), "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    checkpoint = sorted((out / "checkpoints").iterdir())[-1]

    def nudge_dt(f):
        f.attrs["dt"] = f.attrs["dt"] * (1 + 1e-3)

    def swap_ids(f):
        ids = f["element_ids"]
        ids[0], ids[1] = ids[1], ids[0]

    def old_and_damaged(f, key, value=None):
        del f.attrs["index_sha256"]
        if value is None:
            del f.attrs[key]
        else:
            f.attrs[key] = value

    checksum = "do not match the checksum written with them"
    for word, damage, expected in [
            ("dt", nudge_dt, [checksum]),
            ("ids", swap_ids, [checksum]),
            ("writer", lambda f: old_and_damaged(f, "writer", "{not json"), ["a damaged checkpoint index", "writer"]),
            ("energy", lambda f: old_and_damaged(f, "energy_initial"), ["a damaged checkpoint index", "energy_initial"]),
            ("old", lambda f: f.attrs.__delitem__("index_sha256"), None)]:
        damaged = tmp_path / f"damaged_{word}"
        shutil.copytree(checkpoint, damaged)
        with h5py.File(damaged / "index.h5", "r+") as f:
            damage(f)
        proc = run_cli("run", str(path), "-o", str(tmp_path / f"again_{word}"), "-q", "--restart", str(damaged))
        if expected is None:  # an index from before the checksum, intact: it restarts
            assert proc.returncode == 0, proc.stderr
        else:
            assert_one_line_error(proc, "index.h5", *expected)


def test_overwrite_keeps_the_earlier_outputs_when_the_case_is_refused_at_set_up(tmp_path):
    """--overwrite removed the earlier run's outputs before the set-up, so a case refused there
    (here a probe outside the mesh) lost them; now they go only once the run is set up."""
    out = tmp_path / "out"
    path = write_case(tmp_path, GOOD)
    assert run_cli("run", str(path), "-o", str(out), "-q").returncode == 0
    before = sorted(p.name for p in out.iterdir())
    typo = write_case(tmp_path, GOOD + '\n[output]\nname = "cavity"\n[output.probes]\npoints = [[5.0, 0.5, 0.5]]\n',
                      name="typo.toml")
    proc = run_cli("run", str(typo), "-o", str(out), "-q", "--overwrite")
    assert_one_line_error(proc, "typo.toml", "[output.probes] points[0]", "outside the mesh")
    assert sorted(p.name for p in out.iterdir()) == before
    assert run_cli("run", str(path), "-o", str(out), "-q", "--overwrite").returncode == 0


def test_restart_with_overwrite_keeps_later_checkpoints_when_the_case_does_not_match(tmp_path):
    out = tmp_path / "out"
    path = write_case(tmp_path, GOOD + "\n[checkpoint]\nevery = 2\nkeep = 5\n")
    assert run_cli("run", str(path), "-o", str(out), "-q").returncode == 0
    checkpoints = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert len(checkpoints) >= 2, checkpoints
    other = write_case(tmp_path, (GOOD + "\n[checkpoint]\nevery = 2\nkeep = 5\n[discretization]\norder = 4\n"
                                  '[output]\nname = "cavity"\n'), name="other.toml")
    proc = run_cli("run", str(other), "-o", str(out), "-q", "--overwrite", "--restart",
                   str(out / "checkpoints" / checkpoints[0]))
    assert_one_line_error(proc, "other.toml", "[discretization] order differs")
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == checkpoints
