"""The memory estimate of everything a run allocates (docs/case-file.md, "Memory"): each
monitor, physics term, solver and checkpoint counts its own arrays (a ``memory_estimate``
hook returning resources.MemoryItem), and a run that cannot fit is refused while it is set
up, before the arrays exist and before any step, in one line naming the biggest item.

Each case here was a MemoryError traceback (or a failure after the whole run) before; they
are only set up (Simulation / SteadyRun), never stepped, and the memory available is fixed
by monkeypatching so that the results do not depend on the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import lobatto
from lobatto.runner import build as driver
from lobatto.errors import InputError
from lobatto.machine.memory_items import MemoryItem, RunLayout, biggest_item, check_allocation, with_items
from lobatto.machine.resources import GIB
from lobatto.runner.steady import SteadyRun
from lobatto.systems.maxwell import dispersive_memory, pml

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def host_memory(monkeypatch):
    """Set the host memory the run may use (bytes), for the estimate before set-up and the
    checks made while the parts are set up."""
    import lobatto.monitors.dft as dft

    def set_to(nbytes):
        for module in (driver, dft, dispersive_memory):
            monkeypatch.setattr(module, "available_host_memory", lambda: nbytes)
    set_to(16 * GIB)
    return set_to


def maxwell(elements=(4, 4, 4), **sections):
    data = {"mesh": {"elements": list(elements)}, "discretization": {"order": 3}, "time": {"t_end": 0.1},
            "initial": {"Ez": "sin(pi*x)*sin(pi*y)"}}
    data.update(sections)
    return lobatto.case_from_dict(data, name="memory")


def refused(tmp_path, case, *fragments, steady=False):
    start = time.perf_counter()
    with pytest.raises(InputError) as info:
        (SteadyRun if steady else lobatto.Simulation)(case, backend="cpu", output_dir=tmp_path / "out", comm=None)
    message = str(info.value)
    assert "\n" not in message and message.startswith("<memory>: ")
    for fragment in fragments:
        assert fragment in message, message
    assert time.perf_counter() - start < 20
    return message


def angles(count, top):
    return list(np.linspace(0.0, top, count))


FAR = {"frequencies": [1.0], "lower": [0.25, 0.25, 0.25], "upper": [0.75, 0.75, 0.75]}


def test_a_dft_of_200000_frequencies_is_refused(tmp_path, host_memory):
    frequencies = list(1.0 + 1e-5 * np.arange(200_000))
    message = refused(tmp_path, maxwell(output={"dft": {"frequencies": frequencies, "regions": ["all"]}}),
                      "GiB of host memory per rank (the biggest item: [output.dft] region 'all': 200,000 frequencies "
                      "x 6 fields on 4,096 points", "16 GiB available: use fewer [output.dft] frequencies")
    assert "586 GiB" in message  # 4 complex128 arrays of 200,000 x 6 x 4,096 values


def test_far_fields_of_many_directions_are_refused_before_stepping(tmp_path, host_memory):
    far = {**FAR, "theta": angles(100_000, 180.0), "phi": angles(100_000, 360.0)}
    refused(tmp_path, maxwell(output={"far_field": far}),
            "(the biggest item: [output.far_field] 100,000 x 100,000 directions (theta x phi) at 1 frequency",
            "use fewer [output.far_field] theta and phi angles")
    # 20,000 x 20,000: 3 GiB for the angles alone; it failed only after the whole run
    host_memory(8 * GIB)
    far = {**FAR, "theta": angles(20_000, 180.0), "phi": angles(20_000, 360.0)}
    refused(tmp_path, maxwell(output={"far_field": far}), "[output.far_field] 20,000 x 20,000 directions",
            "8 GiB available")
    # and 200 x 200 fits: the run is set up
    far = {**FAR, "theta": angles(200, 180.0), "phi": angles(200, 360.0)}
    lobatto.Simulation(maxwell(output={"far_field": far}), backend="cpu", output_dir=tmp_path / "fits", comm=None)


def test_200000_drude_poles_are_refused(tmp_path, host_memory):
    poles = [{"plasma_frequency": 1.0, "collision_frequency": 0.1}] * 200_000
    case = maxwell((8, 8, 8), material={"metal": {"where": "1", "model": "drude", "poles": poles}})
    refused(tmp_path, case, "(the biggest item: [material.metal] 200,000 poles: their 200,001 x 200,001 rate matrix",
            "use fewer [material.metal] poles")


def test_poles_on_part_of_the_mesh_are_checked_once_their_elements_are_known(tmp_path, host_memory):
    # where x < 0.5: unknown before the mesh, so not counted then; 32 of the 64 elements hold it
    poles = [{"plasma_frequency": 1.0, "collision_frequency": 0.1}] * 2000
    case = maxwell(material={"metal": {"where": "0.5 - x", "model": "drude", "poles": poles}})
    host_memory(200 * 2**20)  # the rate matrix (2001^2, 128 MB) fits, the 18,009 fields per point do not
    refused(tmp_path, case, "[material] needs about", "(the biggest item: [material.metal] 2,000 poles: 18,009 values "
            "per point on 32 elements", "use fewer [material.metal] poles or a smaller material")


def test_gmres_with_a_billion_restart_vectors_is_refused(tmp_path):
    # beyond [solver] restart's declared range: refused before any estimate
    case = {"physics": {"equations": "poisson", "f": "1"}, "mesh": {"elements": [4, 4, 4]},
            "discretization": {"order": 3}, "solver": {"method": "gmres", "restart": 1_000_000_000}}
    with pytest.raises(InputError, match=r"\[solver\] restart"):
        lobatto.case_from_dict(case, name="memory")


def test_gmres_restart_vectors_that_do_not_fit_are_refused(tmp_path, host_memory):
    # within the range, the restart basis (1000 vectors of 16^3 elements at order 3, ~2 GiB)
    # is the biggest item and does not fit in the 1 GiB given
    host_memory(1 * GIB)
    case = lobatto.case_from_dict({"physics": {"equations": "poisson", "f": "1"}, "mesh": {"elements": [16, 16, 16]},
                                   "discretization": {"order": 3},
                                   "solver": {"method": "gmres", "restart": 1000}}, name="memory")
    refused(tmp_path, case, "(the biggest item: [solver] method = \"gmres\" with restart = 1,000",
            "lower [solver] restart", steady=True)


def test_the_command_line_says_it_in_one_line(tmp_path):
    frequencies = ", ".join(str(1.0 + 1e-5 * i) for i in range(200_000))
    (tmp_path / "case.toml").write_text(f"""[mesh]
elements = [4, 4, 4]
[discretization]
order = 3
[time]
t_end = 0.1
[output.dft]
frequencies = [{frequencies}]
regions = ["all"]
""")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output",
                           str(tmp_path / "out"), "--quiet"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lobatto: error: ") and "[output.dft]" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and not list((tmp_path / "out").glob("*.h5"))


# ----------------------------------------------------------------------- the parts' counts
def layout(**changes):
    values = dict(elements=1000, total_elements=1000, order=3, fields=6, box=(10, 10, 10))
    values.update(changes)
    return RunLayout(**values)


def test_each_part_counts_its_own_arrays():
    case = maxwell((10, 10, 10), pml={"sides": "all", "elements": 3})
    items = pml.memory_estimate(case, layout())
    assert len(items) == 1 and items[0].known and "936 layer elements" in items[0].what
    assert items[0].host + items[0].device == pytest.approx(pml.LAYER_VALUES * 936 * 64 * 8 + 9 * 64000 * 8)
    # a thickness: the elements whose centroids lie within it (x = 0.125 < 0.3 < 0.375: one layer of 16)
    thin = maxwell(pml={"sides": ["xmin"], "thickness": 0.3})
    assert pml.layer_elements(thin, thin.tables["pml"]) == 16
    gmres = lobatto.case_from_dict({"physics": {"equations": "poisson"}, "mesh": {"elements": [10, 10, 10]},
                                    "solver": {"method": "gmres", "restart": 50}})
    from lobatto.systems.poisson.system import PoissonSystem

    (krylov, levels) = PoissonSystem.memory_estimate(gmres, layout(fields=1))
    assert krylov.host == pytest.approx(8 * 101 * 64000 + 8 * 51 * 53)
    assert "[1]" in levels.what and levels.host == pytest.approx(16 * 8000 * 8)


def test_items_add_to_the_peak_and_the_biggest_is_named():
    from lobatto.machine.resources import estimate_run_memory

    base = estimate_run_memory(1000, 3, 6, 6)
    small = MemoryItem("small", host=1e6)
    big = MemoryItem("[output.dft] big", host=100 * GIB, advice="use fewer [output.dft] frequencies")
    unknown = MemoryItem("later", host=1e15, known=False)
    total = with_items(base, [small, big, unknown])
    assert total["host_bytes"] == base["host_bytes"] + int(np.ceil((1e6 + 100 * GIB) * 1.2))
    assert biggest_item(total, "host") is big and biggest_item(with_items(base, [small]), "host") is None
    check_allocation([small], 2e6, None, "x")
    with pytest.raises(InputError, match=r"^x needs about .* more of host memory per rank \(the biggest item: big"):
        check_allocation([MemoryItem("big", host=GIB)], GIB, None, "x")


_SCALARS = r"""
import json, sys, time
import lobatto
from lobatto.runner import build as driver
from lobatto.backends import get_backend
from lobatto.systems.navier_stokes.system import NavierStokesSystem

names = [f"s{i}" for i in range(20_000)]
start = time.perf_counter()
case = lobatto.case_from_dict({"physics": {"equations": "navier_stokes", "scalars": names},
                               "mesh": {"elements": [2, 2, 2]}, "discretization": {"order": 2},
                               "time": {"t_end": 0.01, "dt": 0.01},
                               "scalar": {n: {"diffusivity": 0.1} for n in names}}, name="scalars")
parsed = time.perf_counter() - start
layout = driver.run_layout(case, NavierStokesSystem, get_backend("cpu"), 1, 8)
items = driver.memory_items(case, NavierStokesSystem, layout)
sim = lobatto.Simulation(case, backend="cpu", output_dir=sys.argv[1], comm=None)
print(json.dumps({"parsed": parsed, "set_up": time.perf_counter() - start, "fields": len(sim.system.field_names),
                  "items": [(item.what, item.host) for item in items]}))
"""


def test_20000_scalars_are_read_and_set_up_in_seconds(tmp_path):
    # checking each [scalar.<name>] table re-checked the whole [scalar] table against every
    # name: 2,000 scalars took 200 s to read, 20,000 would have taken days
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", _SCALARS, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["fields"] == 20_004 and result["parsed"] < 60 and result["set_up"] < 120, result
    scalars = [host for what, host in result["items"] if what.startswith("[physics] scalars: 20,000 passive scalars")]
    assert scalars == [14 * 20_000 * 8 * 27 * 8]  # 14 arrays of the rank's 216 points each


def test_a_far_field_surface_is_checked_once_its_faces_are_known(tmp_path, host_memory):
    # the closed surface's faces are found only on the mesh: 24 faces x 16 points here, whose
    # transforms at 20,000 frequencies (6 fields, complex) need about 5.5 GiB
    host_memory(2 * GIB)
    far = {**FAR, "frequencies": list(1.0 + 1e-4 * np.arange(20_000))}
    refused(tmp_path, maxwell(output={"far_field": far}), "[output.far_field] needs about",
            "(the biggest item: [output.far_field] surface 'scattering': 20,000 frequencies x 6 fields on",
            "2 GiB available")


def test_the_pml_layer_is_checked_again_once_found(tmp_path, host_memory, monkeypatch):
    import lobatto.machine.resources as resources

    monkeypatch.setattr(resources, "available_host_memory", lambda: 2**20)  # what is free once the mesh is built
    case = maxwell((6, 6, 6), pml={"sides": ["xmin", "xmax"], "elements": 2})
    assert pml.layer_elements(case, case.tables["pml"]) == 144  # the count before the mesh: 2 x 2 x 36
    refused(tmp_path, case, "<memory>: [pml] needs about", "72 values per point of 144 layer elements",
            "use a thinner [pml]")
