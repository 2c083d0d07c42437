"""``[output.forces.<name>]`` on the CUDA backend equals the CPU backend (systems/navier_stokes/
forces.py): the face terms of fresh random fields on the curved cylinder mesh, and the force
series of a few steps of examples/cylinder.toml. Skipped, with the reason, without CuPy and a
GPU."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict, parse_case  # noqa: E402
from lobatto.config.schema import tomllib  # noqa: E402
from lobatto.io.timeseries import read_csv  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cylinder(order: int = 3, steps: int = 4):
    """examples/cylinder.toml at a low order for a few steps, forces every step."""
    text = (EXAMPLES / "cylinder.toml").read_text()
    text = text.replace('"meshes/cylinder_channel.msh"', json.dumps(str(EXAMPLES / "meshes" / "cylinder_channel.msh")))
    text = re.sub(r"(?m)^order = \d+", f"order = {order}", text)
    text = re.sub(r"(?m)^t_end = .*$", f"t_end = {steps * 5e-3}", text)
    text = re.sub(r"(?m)^every = 20$", "every = 1", text)
    return parse_case(tomllib.loads(text), source="<cylinder>", name="cylinder")


def duct(steps: int = 4):
    """A channel whose walls are curved by [mesh.deform] (no gmsh needed), driven by a body
    force, with the forces on both walls every step."""
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.05, "force_x": "0.5"},
        "mesh": {"elements": [3, 2, 2], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
                 "periodic": [True, False, True], "boundary": "wall", "deform": {"y": "0.05*sin(pi*x)"}},
        "discretization": {"order": 3},
        "time": {"dt": 5e-3, "t_end": steps * 5e-3},
        "initial": {"ux": "1 - (y - 0.05*sin(pi*x))**2", "uy": "0.1*sin(pi*x)*(1 - y*y)"},
        "output": {"name": "duct", "formats": [], "forces": {"walls": {
            "surfaces": ["ymin", "ymax"], "center": [1.0, 0.0, 0.5], "reference_area": 2.0,
            "reference_velocity": 1.0, "every": 1}}},
    }, name="duct")


def case_named(name: str):
    if name == "cylinder":
        pytest.importorskip("gmsh", reason="the cylinder mesh is read with the gmsh SDK")
        return cylinder()
    return duct()


@pytest.mark.parametrize("name", ["cylinder", "duct"])
def test_face_terms_of_random_fields_equal_the_cpu(tmp_path, name):
    rng = np.random.default_rng(31)
    terms = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case_named(name), backend=backend, output_dir=tmp_path / backend, comm=None)
        force = sim.series.forces.groups[0]
        if backend == "cpu":
            state = rng.standard_normal(sim.backend.to_host(sim.u).shape)
        terms[backend] = force.terms(sim.backend.asarray(state))
    assert terms["cpu"].shape[1] > 0 and np.abs(terms["cpu"]).max() > 1e-3
    scale = np.abs(terms["cpu"]).max()
    assert np.abs(terms["cuda"] - terms["cpu"]).max() <= 1e-12 * scale


@pytest.mark.parametrize("name", ["cylinder", "duct"])
def test_the_force_series_of_a_few_steps_equal_the_cpu(tmp_path, name):
    series = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case_named(name), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.run()
        series[backend] = read_csv(tmp_path / backend / f"{name}_forces.csv")
    cpu, cuda = series["cpu"], series["cuda"]
    assert cuda["columns"] == cpu["columns"] and np.array_equal(cuda["step"], cpu["step"])
    # relative to the largest value of the table: a component that is zero by symmetry (the duct's
    # Mx) is rounding on both backends
    largest = max(np.abs(cpu["values"][column]).max() for column in cpu["columns"])
    for column in cpu["columns"]:
        scale = max(np.abs(cpu["values"][column]).max(), 1e-6 * largest)
        assert np.abs(cuda["values"][column] - cpu["values"][column]).max() <= 1e-10 * scale, column
