"""Bad command-line input refused at once: exit 2, one line, no traceback, nothing measured or
computed first (empty --output/--restart, --json and --png paths under a file, abbreviated
options, resonance options out of range, a checkpoints path that is a file, a damaged time-series
CSV), and the messages' wording (h5py reasons, one element). Runs the real command in a
subprocess, like test_cli_errors.py."""

from __future__ import annotations

import argparse

import pytest

from test_cli_errors import GOOD, assert_one_line_error, run_cli, write_case

CHECKPOINTS = "\n[checkpoint]\nevery = 2\n"
PROBES = '\n[output.probes]\npoints = [[0.3, 0.4, 0.5]]\nfields = ["Ez"]\n'


def test_an_empty_output_is_refused(tmp_path):
    path = write_case(tmp_path, GOOD)
    proc = run_cli("run", str(path), "-o", "", cwd=tmp_path)
    assert_one_line_error(proc, "--output: expected the output directory, got an empty path")
    assert not (tmp_path / "cavity_out").exists()


def test_an_empty_restart_is_refused(tmp_path):
    path = write_case(tmp_path, GOOD)
    proc = run_cli("run", str(path), "-o", str(tmp_path / "out"), "--restart", "")
    assert_one_line_error(proc, "--restart: expected a checkpoint directory or 'latest'")


# every subcommand with an output path: (arguments, option); 'afile' is an existing file
OUTPUT_PATHS = [
    (["sysbench", "--quick", "--only", "cpu_stream", "--no-png", "--json"], "--json"),
    (["bench", "maxwell", "--backend", "cpu", "--order", "2", "--elements", "2", "2", "2", "--json"], "--json"),
    (["bench", "maxwell", "--plot-from", "sweep.json", "--png"], "--png"),
    (["bench", "copy", "--json"], "--json"),
    (["bench", "helmholtz", "--backend", "cpu", "--orders", "2", "--json"], "--json"),
    (["bench", "poisson", "--backend", "cpu", "--order", "2", "--elements", "2", "2", "2", "--json"], "--json"),
    (["bench", "navier-stokes", "--backend", "cpu", "--elements", "2", "--order", "2", "--json"], "--json"),
    (["bench", "scaling", "--strong", "--sizes", "8", "--ranks", "1", "--json"], "--json"),
    (["bench", "comm-model", "--json"], "--json"),
    (["bench", "comm-model", "--png"], "--png"),
    (["bench", "roofline", "--backend", "cpu", "--orders", "2", "--json"], "--json"),
    (["bench", "roofline", "--backend", "cpu", "--orders", "2", "--png"], "--png"),
    (["doctor", "--backend", "cpu", "--json"], "--json"),
]


@pytest.mark.parametrize("argv, option", OUTPUT_PATHS, ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else v)
def test_an_output_path_under_a_file_is_refused_before_measuring(tmp_path, argv, option):
    (tmp_path / "afile").write_text("a file, not a directory")
    proc = run_cli(*argv, "afile/sub/x.out", cwd=tmp_path)
    assert_one_line_error(proc, f"{option} afile/sub/x.out: afile is not a directory")
    assert proc.stdout == ""  # nothing measured


@pytest.mark.parametrize("argv", [["sysbench", "--quick", "--only", "cpu_stream", "--json"],
                                  ["bench", "copy", "--json"], ["doctor", "--json"]])
def test_an_output_file_that_is_a_directory_is_refused(tmp_path, argv):
    proc = run_cli(*argv, str(tmp_path))
    assert_one_line_error(proc, f"--json {tmp_path}: is a directory (expected a file name)")


def test_sysbench_png_directory_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "afile").write_text("")
    proc = run_cli("sysbench", "--quick", "--only", "cpu_stream", "--json", "x.json", "--png", "afile", cwd=tmp_path)
    assert_one_line_error(proc, "--png afile: exists and is not a directory")


def test_plot_output_is_checked_before_plotting(tmp_path):
    pytest.importorskip("matplotlib")
    path = write_case(tmp_path, GOOD + PROBES)
    assert run_cli("run", str(path), "-o", str(tmp_path / "out"), "-q").returncode == 0
    (tmp_path / "afile").write_text("")
    for output, words in [("", "--output: expected the PNG file to write, got an empty path"),
                          ("afile/x.png", "--output afile/x.png: afile is not a directory"),
                          ("nodir/x.png", "--output nodir/x.png: the directory nodir does not exist")]:
        assert_one_line_error(run_cli("plot", str(tmp_path / "out"), "-o", output, cwd=tmp_path), words)


def test_check_output_path(tmp_path):
    from lobatto.errors import InputError
    from lobatto.io.output_dir import check_output_path

    (tmp_path / "afile").write_text("")
    assert check_output_path(tmp_path / "new" / "deeper" / "x.json") == tmp_path / "new" / "deeper" / "x.json"
    assert not (tmp_path / "new").exists()  # nothing created
    check_output_path(tmp_path / "new", directory=True)
    with pytest.raises(InputError, match="afile is not a directory"):
        check_output_path(tmp_path / "afile" / "x.json", "--json ")
    with pytest.raises(InputError, match="afile: exists and is not a directory"):
        check_output_path(tmp_path / "afile", directory=True)
    with pytest.raises(InputError, match="the directory .*new does not exist"):
        check_output_path(tmp_path / "new" / "x.json", create_parents=False)


def _parsers():
    from lobatto import cli
    from lobatto.bench import cli as bench_cli

    found = []

    def walk(name, parser):
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(f"{name} {sub_name}", sub)

    for name, parser in [("lobatto", cli.build_parser()), ("lobatto bench", bench_cli.bench_parser()),
                         ("lobatto bench roofline", bench_cli.roofline_parser()), ("lobatto sysbench", bench_cli.sysbench_parser()),
                         ("lobatto doctor", bench_cli.doctor_parser())]:
        walk(name, parser)
    return found


def test_no_parser_takes_abbreviations():
    parsers = _parsers()
    assert len(parsers) > 15
    assert [name for name, parser in parsers if parser.allow_abbrev] == []


@pytest.mark.parametrize("argv, option", [(["bench", "comm-model", "--network", "none", "--order", "0"], "--order"),
                                          (["run", "case.toml", "--out", "x"], "--out"),
                                          (["doctor", "--rep", "3"], "--rep")])
def test_an_abbreviated_option_is_unknown(tmp_path, argv, option):
    write_case(tmp_path, GOOD, "case.toml")
    proc = run_cli(*argv, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "unrecognized arguments" in proc.stderr and option in proc.stderr, proc.stderr


@pytest.mark.parametrize("options, words", [
    (["--max-error", "-1"], "--max-error must be a positive number"),
    (["--max-error", "0"], "--max-error must be a positive number"),
    (["--max-error", "nan"], "got nan"),
    (["--band", "2", "1"], "--band F1 F2 must be two frequencies (omega / 2 pi) with 0 <= F1 < F2, got 2 1"),
    (["--band", "-1", "1"], "0 <= F1 < F2"),
    (["--band", "nan", "1"], "0 <= F1 < F2"),
])
def test_resonance_options_out_of_range(tmp_path, options, words):
    proc = run_cli("resonances", str(tmp_path / "not_read"), *options)
    assert_one_line_error(proc, words)


def test_a_checkpoints_path_that_is_a_file_is_refused_up_front(tmp_path):
    path = write_case(tmp_path, GOOD + CHECKPOINTS)
    out = tmp_path / "out"
    out.mkdir()
    (out / "checkpoints").write_text("a file")
    for extra in ([], ["--restart", "latest"]):
        proc = run_cli("run", str(path), "-o", str(out), "-q", *extra)
        assert_one_line_error(proc, f"{out / 'checkpoints'}: exists and is not a directory", "[checkpoint]")
        assert sorted(p.name for p in out.iterdir()) == ["checkpoints"]  # nothing computed, no temporary
    proc = run_cli("run", str(write_case(tmp_path, GOOD, "plain.toml")), "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr  # without [checkpoint] the file is in nobody's way


def test_one_element_cannot_be_shared_is_singular():
    from lobatto.bench.scaling import plan
    from lobatto.errors import InputError
    from lobatto.mesh.partition import partition_box

    with pytest.raises(InputError, match=r"\[mesh\] 1 element cannot be shared by 2 ranks"):
        partition_box((1, 1, 1), 2, 0)
    with pytest.raises(InputError, match="2 elements cannot be shared by 3 ranks"):
        partition_box((2, 1, 1), 3, 0)
    with pytest.raises(InputError, match="--sizes 1: 1 element cannot be shared by 2 ranks"):
        plan("strong", [2], ["1"])


def test_a_negative_permittivity_names_the_global_element(tmp_path):
    text = GOOD.replace("[2, 2, 2]", "[4, 2, 2]") + '\n[material.all]\nepsilon = "0.6 - x"\n'
    proc = run_cli("run", str(write_case(tmp_path, text)), "-o", str(tmp_path / "out"))
    assert_one_line_error(proc, "[material.all] epsilon = \"0.6 - x\" is -0.05116 in element 2 (box index 2,0,0) "
                                "centred at (0.625, 0.25, 0.25); its values must be from 1e-30 to 1e+30")


def _probe_run(tmp_path):
    path = write_case(tmp_path, GOOD.replace("t_end = 0.1", "t_end = 0.2") + PROBES)
    out = tmp_path / "out"
    assert run_cli("run", str(path), "-o", str(out), "-q").returncode == 0
    return out / "cavity_probes.csv"


def test_a_damaged_time_series_line_is_an_error(tmp_path):
    csv = _probe_run(tmp_path)
    lines = csv.read_text().splitlines(keepends=True)
    good = "".join(lines)
    for damaged, words in [(lines[:5] + [lines[5].split(",")[0] + "\n"] + lines[6:], "line 6 has 1 cell, the header 3"),
                           (lines[:3] + [lines[3].replace(",", ",x", 1)] + lines[4:],
                            "line 4: could not convert string to float: 'x")]:
        csv.write_text("".join(damaged))
        for command in (["plot", str(csv), "-o", str(tmp_path / "x.png")], ["resonances", str(csv)]):
            if command[0] == "plot":
                pytest.importorskip("matplotlib")
            assert_one_line_error(run_cli(*command), f"{csv}: cannot read the time series", words)
    csv.write_text(good + "99,1.5")  # a last line cut short by a crash: dropped
    from lobatto.io.timeseries import read_csv

    assert len(read_csv(csv)["step"]) == len(lines) - 1


def test_h5py_reasons_have_no_stray_quotes(tmp_path):
    h5py = pytest.importorskip("h5py")
    from lobatto.io.atomic import os_reason

    assert os_reason(KeyError("Unable to synchronously open object (object 'x' doesn't exist)")) == \
        "object 'x' doesn't exist"
    assert os_reason(OSError("Unable to synchronously open file (file signature not found)")) == \
        "file signature not found"
    assert os_reason(KeyError()) == "KeyError"
    path = write_case(tmp_path, GOOD + CHECKPOINTS)
    out = tmp_path / "out"
    assert run_cli("run", str(path), "-o", str(out), "-q").returncode == 0
    checkpoint = sorted((out / "checkpoints").iterdir())[-1]
    with h5py.File(checkpoint / "index.h5", "r+") as f:
        del f["parts/elements"]
    proc = run_cli("run", str(path), "-o", str(tmp_path / "again"), "-q", "--restart", str(checkpoint))
    line = assert_one_line_error(proc, "index.h5: not a readable checkpoint index (object 'elements' doesn't exist)")
    assert '"' not in line
    (tmp_path / "junk_probes.h5").write_text("not HDF5")
    assert_one_line_error(run_cli("resonances", str(tmp_path / "junk_probes.h5")),
                          "not a readable HDF5 file (file signature not found)")
