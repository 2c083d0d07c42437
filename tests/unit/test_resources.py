"""Memory estimates before a run (lobatto.machine.resources) and the backends' memory queries.

Measured ratios of estimate to peak (CPU backend with its C kernels, float64, Maxwell,
lsrk45, errors against exact fields computed, one rank; the high-water mark of resident
memory of a subprocess less its resident memory after a one-element run):

    elements   order   measured peak   estimate / peak
    8^3        7        132 MB          1.35
    10^3       3         42 MB          1.83
    16^3       3        146 MB          1.44
    16^3       7       1043 MB          1.15
    24^3       7       3227 MB          1.23

(small runs are dominated by the fixed 32 MiB allowance). Against the arrays' own peak
(tracemalloc) the estimate before its 20% margin is 1.00 to 1.12 of it over orders 1 to 12,
acoustics, rk4, float32 and deformed meshes. On an H100 (CUDA backend, 16^3 to 32^3
elements, orders 3 to 7): device estimate / CuPy pool peak 1.18 to 1.50, host estimate /
ru_maxrss 1.09 to 1.44.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lobatto.backends import get_backend
from lobatto.errors import InputError
from lobatto.integrators.tables import SCHEMES
from lobatto.machine.resources import (
    FIXED_BYTES,
    GIB,
    available_host_memory,
    check_fits,
    estimate_run_memory,
    format_gib,
    stepper_states,
)

SRC = Path(__file__).resolve().parents[2] / "src"

MAXWELL = dict(fields=6, trace_components=6)


def arrays(estimate, key="host_bytes"):
    """The estimate without its fixed allowance (proportional to the arrays)."""
    return estimate[key] - FIXED_BYTES


def test_estimate_grows_linearly_with_elements():
    one = arrays(estimate_run_memory(1000, 7, **MAXWELL))
    for factor in (2, 10, 1000):
        assert arrays(estimate_run_memory(1000 * factor, 7, **MAXWELL)) == pytest.approx(factor * one, rel=1e-6)
    cuda = [arrays(estimate_run_memory(e, 5, **MAXWELL, backend="cuda"), "device_bytes") for e in (500, 1000)]
    assert cuda[1] == pytest.approx(2 * cuda[0], rel=1e-6)


def test_estimate_grows_like_the_cube_of_order_plus_one():
    per_point = []
    for order in (3, 7, 15, 31):
        est = estimate_run_memory(100, order, **MAXWELL)
        assert est["points_per_rank"] == 100 * (order + 1) ** 3
        per_point.append(arrays(est) / est["points_per_rank"])
    # bytes per point fall towards a constant (the face terms go like (N+1)^2)
    assert per_point == sorted(per_point, reverse=True)
    assert per_point[-1] > 0.8 * per_point[1]
    ratio = arrays(estimate_run_memory(100, 31, **MAXWELL)) / arrays(estimate_run_memory(100, 15, **MAXWELL))
    assert 7.0 < ratio <= 8.0


def test_estimate_counts_states_precision_and_device():
    base = estimate_run_memory(1000, 7, **MAXWELL)
    assert base["device_bytes"] == 0 and base["backend"] == "cpu"
    assert estimate_run_memory(1000, 7, **MAXWELL, integrator_states=6)["host_bytes"] > base["host_bytes"]
    gpu64 = estimate_run_memory(1000, 7, **MAXWELL, backend="cuda")
    gpu32 = estimate_run_memory(1000, 7, **MAXWELL, backend="cuda", precision="float32")
    assert gpu64["device_bytes"] > 0 and 0.4 < gpu32["device_bytes"] / gpu64["device_bytes"] < 0.6
    # the graph partitioners build the whole mesh on every rank
    rcb = estimate_run_memory(1000, 1, **MAXWELL, ranks=64)
    rsb = estimate_run_memory(1000, 1, **MAXWELL, ranks=64, partitioner="rsb")
    assert rsb["host_bytes"] > rcb["host_bytes"] and rsb["host_phase"] == "partition"
    assert stepper_states(SCHEMES["lsrk45"]) == 1
    assert stepper_states(SCHEMES["rk4"]) == 6 and stepper_states(SCHEMES["ssprk3"]) == 5
    with pytest.raises(ValueError):
        estimate_run_memory(10, 3, **MAXWELL, precision="float16")


_MEASURE = r"""
import json, sys
import lobatto.api as api

def case(elements, order):
    return api.case_from_dict({
        "mesh": {"elements": elements}, "discretization": {"order": order},
        "initial": {"Ez": "sin(pi*x)*sin(pi*y)"},
        "exact": {"Ez": "sin(pi*x)*sin(pi*y)*cos(sqrt(2)*pi*t)"},
        "time": {"t_end": 1e-6}, "output": {"formats": ["hdf5"]}})

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key + ":"))

elements, order, out = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
warm = api.Simulation(case([1, 1, 1], order), backend="cpu", output_dir=out, comm=None)
warm.advance(1); warm.errors(); del warm
# the baseline: resident memory now, with numpy, lobatto and the compiled kernels loaded;
# the high-water mark (VmHWM, what ru_maxrss reports) is reset where the kernel allows it
base = status("VmRSS")
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
except OSError:
    pass
sim = api.Simulation(case(elements, order), backend="cpu", output_dir=out, comm=None)
sim.advance(2)
sim.errors()
peak = status("VmHWM")  # >= VmRSS, so never below base
print(json.dumps({"peak_bytes": peak - base, "elements": sim.system.num_elements}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("elements, order", [([8, 8, 8], 7), ([10, 10, 10], 3)])
def test_estimate_is_not_below_a_measured_run(tmp_path, elements, order):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps(elements), str(order), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    est = estimate_run_memory(measured["elements"], order, **MAXWELL)
    assert measured["peak_bytes"] > 0
    # conservative, and not wildly so (the fixed 32 MiB dominates runs this small)
    assert measured["peak_bytes"] <= est["host_bytes"] <= 4 * measured["peak_bytes"] + FIXED_BYTES


def test_check_fits_names_the_figures():
    est = estimate_run_memory(1000, 7, **MAXWELL, backend="cuda")
    est.update(host_bytes=10 * GIB, device_bytes=3 * GIB)
    check_fits(est, 11 * GIB, 4 * GIB, "[mesh] elements = [10, 10, 10]")  # fits
    check_fits(est, None, None, "unknown")  # nothing known: nothing checked
    with pytest.raises(InputError) as info:
        check_fits(est, 4 * GIB, 4 * GIB, "[mesh] elements = [10, 10, 10] at order 7")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("[mesh] elements = [10, 10, 10] at order 7 needs about 10 GiB of host memory per rank")
    assert "4 GiB available" in message and "fewer [mesh] elements" in message and "lower [discretization] order" in message
    assert "ranks on more nodes" in message
    with pytest.raises(InputError, match=r"needs about 3 GiB of device memory per GPU .* 1\.5 GiB available"):
        check_fits(est, 11 * GIB, 1.5 * GIB, "[mesh] elements = [10, 10, 10]")
    assert format_gib(264344.2 * GIB) == "264,344"


def test_a_billion_elements_are_refused_at_once():
    start = time.perf_counter()
    est = estimate_run_memory(1000 * 1000 * 1000, 7, **MAXWELL)
    with pytest.raises(InputError, match=r"needs about [\d,]+ GiB of host memory per rank .* available"):
        check_fits(est, 64 * GIB, None, "[mesh] elements = [1000, 1000, 1000] at order 7")
    assert time.perf_counter() - start < 1.0
    assert est["host_bytes"] > 1000 * 59.6 * GIB  # far beyond box_mesh's first array alone


def test_memory_queries():
    available = available_host_memory()
    if sys.platform.startswith("linux"):
        assert isinstance(available, int) and available > 0
    cpu = get_backend("cpu").memory_available()
    assert cpu is None or cpu > 0
