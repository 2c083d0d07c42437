"""The CUDA backend's restart onto another order and mesh and its steady-state stop
(runner/restart_onto.py, runner/steady_stop.py) against the CPU's: the same interpolated
state, the same continued step, the same stop (also continued from a checkpoint)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.runner.simulation import Simulation  # noqa: E402
from test_restart_onto import ORDER, poly_case  # noqa: E402
from test_steady_stop import channel  # noqa: E402


@pytest.mark.parametrize("order, elements", [(ORDER + 2, (2, 1, 2)), (ORDER, (3, 2, 3))])
def test_cuda_restart_onto_equals_cpu(tmp_path, order, elements):
    source = Simulation(poly_case(t_end=0.006), "cpu", tmp_path / "a", comm=None)
    source.advance(2)
    path = source.checkpoint()
    source.close()
    runs = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(poly_case(order, elements, t_end=0.006), backend, tmp_path / backend, comm=None)
        sim.restart(path, interpolate=True)
        start = sim.fields()
        sim.run()
        runs[backend] = (start, sim.fields(), sim.step_count)
    for name in runs["cpu"][0]:
        assert np.array_equal(runs["cpu"][0][name], runs["cuda"][0][name]), name  # host arithmetic: the same
        scale = np.abs(runs["cpu"][1][name]).max()
        assert np.abs(runs["cpu"][1][name] - runs["cuda"][1][name]).max() < 1e-9 * scale, name
    assert runs["cpu"][2] == runs["cuda"][2] == 3


def test_cuda_steady_stop_equals_cpu(tmp_path):
    found = {}
    for backend in ("cpu", "cuda"):
        summary = Simulation(channel(5.0, steady_tolerance=1e-3, steady_every=4), backend, tmp_path / backend,
                             comm=None).run()
        found[backend] = (summary["stopped"], summary["steps"], summary["steady"]["change"])
    assert found["cpu"][:2] == found["cuda"][:2] and found["cpu"][0] == "steady"
    assert found["cuda"][2] == pytest.approx(found["cpu"][2], rel=1e-6)


def test_cuda_continued_steady_stop_equals_cpu(tmp_path):
    """The steady-state test's reference restored from a checkpoint between two checks onto
    the GPU (steady_stop.restore_checkpoint_arrays): the same stop as the CPU's uninterrupted run."""
    from lobatto.api import case_from_dict

    data = channel(5.0, steady_tolerance=1e-2, steady_every=4).to_dict()
    data["checkpoint"], data["output"] = {"every": 6, "keep": 10}, {**data["output"], "formats": []}
    case = case_from_dict(data, name="channel")
    full = Simulation(case, "cpu", tmp_path / "cpu", comm=None).run()
    continued = Simulation(case, "cuda", tmp_path / "cuda", comm=None).restart(
        tmp_path / "cpu" / "checkpoints" / "channel_000006").run()
    assert full["stopped"] == continued["stopped"] == "steady" and full["steps"] == continued["steps"] == 12
    assert continued["steady"]["change"] == pytest.approx(full["steady"]["change"], rel=1e-6)
