"""Maxwell's physics terms (a PML on all sides, a TF/SF plane wave, a region of Drude, Lorentz
and Debye poles with its own eps_inf, so a medium given per point) on the CUDA fused whole-step path with 2 and 3 ranks give the serial CPU
fields: the terms' kernels run on each rank's elements, fold into the residual before the
stage kernel or rewrite the traces they change after it, and the shared faces' traces travel
between ranks. The ranks share the GPUs there are (LOBATTO_SHARE_GPUS=1; on one GPU the
exchange is host-staged). Skipped without CuPy and a GPU, or without mpiexec."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mpi"))
from mpirun import SKIP_REASON, max_relative_difference, run_case  # noqa: E402

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}"),
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
]
TIMEOUT_S = 300

CASE = """
[mesh]
elements = [10, 6, 6]
upper = [10.0, 6.0, 6.0]
boundary = "absorbing"
[discretization]
order = 3
[physics]
equations = "maxwell"
[initial]
Ey = "exp(-((x-5)**2+(y-3.2)**2+(z-2.9)**2))"
Hz = "0.3*exp(-((x-4)**2+(y-3)**2+(z-3)**2))"
[time]
t_end = 2.0
[pml]
sides = "all"
elements = 1
[source.wave]
type = "plane_wave"
direction = [1, 0, 0]
polarization = [0, 0, 1]
lower = [2.0, 2.0, 2.0]
upper = [8.0, 4.0, 4.0]
waveform = "modulated_gaussian"
frequency = 0.4
t0 = 1.0
width = 0.6
[material.glass]
where = "0.8 - ((x-5)**2+(y-3)**2+(z-3)**2)"
epsilon = 2.0
poles = [{model = "drude", plasma_frequency = 0.5, collision_frequency = 0.1},
         {model = "lorentz", resonance_frequency = 0.7, delta_epsilon = 1.5, damping_frequency = 0.05},
         {model = "debye", delta_epsilon = 0.8, relaxation_time = 0.6}]
[output]
every = 0
formats = ["hdf5"]
"""


@pytest.fixture(scope="module")
def cpu_serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("cpu"), CASE, 1, ["--backend", "cpu"], timeout=TIMEOUT_S)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_terms_on_gpu_ranks_match_cpu(cpu_serial, ranks, tmp_path, monkeypatch):
    monkeypatch.setenv("LOBATTO_SHARE_GPUS", "1")
    summary, ids, fields = run_case(tmp_path, CASE, ranks, ["--backend", "cuda"], timeout=TIMEOUT_S)
    assert summary["backend"] == "cuda" and summary["ranks"] == ranks
    assert summary["step_path"] == "whole-step"
    assert summary["steps"] == cpu_serial[0]["steps"] > 10
    assert (ids == cpu_serial[1]).all()
    # the scattered and absorbed fields are not small: the comparison is not of zeros
    assert float(abs(cpu_serial[2]).max()) > 0.1
    assert max_relative_difference(fields, cpu_serial[2]) <= 1e-12


DISCRETE = CASE.replace('type = "plane_wave"', 'type = "plane_wave"\nincident_field = "discrete"')


@pytest.fixture(scope="module")
def cpu_serial_discrete(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("cpu_discrete"), DISCRETE, 1, ["--backend", "cpu"], timeout=TIMEOUT_S)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_discrete_incident_wave_on_gpu_ranks_matches_cpu(cpu_serial, cpu_serial_discrete, ranks, tmp_path,
                                                         monkeypatch):
    """The discrete incident wave's kernels (tfsf_cuda.DiscreteIncidentStage) with the other
    terms, the wave's background operator exchanging faces between ranks."""
    monkeypatch.setenv("LOBATTO_SHARE_GPUS", "1")
    summary, ids, fields = run_case(tmp_path, DISCRETE, ranks, ["--backend", "cuda"], timeout=TIMEOUT_S)
    assert summary["step_path"] == "whole-step" and summary["plane_wave.wave"]["incident_field"] == "discrete"
    assert (ids == cpu_serial_discrete[1]).all()
    assert max_relative_difference(cpu_serial_discrete[2], cpu_serial[2]) > 1e-8  # the variants differ
    assert max_relative_difference(fields, cpu_serial_discrete[2]) <= 1e-12


# the PML and the plane wave with a dipole near one end and a boxed current near the other:
# on 2 and 3 ranks some rank owns no source element (the sources are a stage term, source_term.py)
SOURCES = CASE[:CASE.index("[material.glass]")] + """
[source.antenna]
type = "electric_dipole"
position = [8.6, 3.1, 2.9]
direction = [0, 1, 1]
waveform = "modulated_gaussian"
frequency = 0.5
t0 = 0.8
width = 0.4
[source.sheet]
type = "current"
Jz = "sin(3*t)*exp(-((y-3)**2+(z-3)**2))"
lower = [1.0, 2.0, 2.0]
upper = [2.0, 4.0, 4.0]
[output]
every = 0
formats = ["hdf5"]
"""


@pytest.fixture(scope="module")
def cpu_serial_sources(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("cpu_sources"), SOURCES, 1, ["--backend", "cpu"], timeout=TIMEOUT_S)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_sources_on_gpu_ranks_match_cpu(cpu_serial_sources, ranks, tmp_path, monkeypatch):
    """A dipole and a current on the fused whole-step path; on one rank the steps replay a CUDA
    graph whose stage times come from the device clock."""
    monkeypatch.setenv("LOBATTO_SHARE_GPUS", "1")
    summary, ids, fields = run_case(tmp_path, SOURCES, ranks, ["--backend", "cuda"], timeout=TIMEOUT_S)
    assert summary["step_path"] == "whole-step" and summary["sources"]["whole_step"].startswith("on")
    if ranks == 1:
        assert summary["cuda_graph"], summary["cuda_graph_note"]
    assert (ids == cpu_serial_sources[1]).all()
    assert float(abs(cpu_serial_sources[2]).max()) > 0.1
    assert max_relative_difference(fields, cpu_serial_sources[2]) <= 1e-12
