"""Waveguide ports with volume_form = "galerkin" (port_launch.py: the port's mode as the incident
field of tfsf_galerkin.py's sums correction), beside the split form's measures of test_ports.py
and test_port_surface.py:

- the launch is exactly the neighbour's trace in the other formulation (rhs = the plain Galerkin
  operator on u +- the mode at the source plane's face nodes, to round-off), on a curved mesh;
- the empty guide's S21 = exp(-i beta L), S11 = 0 on a box, on a box curved inside (curved
  interior faces, the port planes flat) and on the O-grid cylinder with ports on its end
  surfaces, each against the split form: the Galerkin form is closer on every one;
- 1, 2 and 3 ranks give the serial S-matrix and fields (on 3 ranks a rank holds none of the
  port planes' faces and none of the launch's): this file run under mpiexec (main);
- `lobatto run` of a ported case with volume_form = "galerkin" writes its S-parameter files.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import Simulation, case_from_dict
from lobatto.systems.dg import add_to_faces
from lobatto.systems.maxwell.region_surface import surface_signs

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))
import mpirun  # noqa: E402
from test_port_surface import cylinder_surface_case  # noqa: E402
from test_ports import GUIDE  # noqa: E402

#: the guide's inside curved: every interior face between z = k/2 and the interiors move, the
#: walls and the planes z = k (ports at z = 2, 3) stay; the sources' planes z = 1.5, 3.5 stay
#: planar (only x, y move in them)
CURVED = {"x": "0.15*sin(pi*x)*sin(2*pi*y)*sin(pi*z)", "y": "0.08*sin(pi*x)*sin(2*pi*y)*sin(2*pi*z)"}


def guide(form: str, deform=None, order: int = 3) -> dict:
    data = copy.deepcopy(GUIDE)
    data["discretization"] = {"order": order, "volume_form": form}
    if deform is not None:
        data["mesh"]["deform"] = dict(deform)
    return data


def s_matrix(directory) -> tuple[np.ndarray, np.ndarray]:
    with h5py.File(Path(directory) / "guide_sparams.h5", "r") as h5:
        return h5["frequencies"][()], h5["S"][()]


def run_guide(data: dict, directory) -> tuple[np.ndarray, np.ndarray]:
    with contextlib.redirect_stdout(io.StringIO()):
        lobatto.run(copy.deepcopy(data), output_dir=directory)
    return s_matrix(directory)


def guide_errors(f, s, length=1.0, k_c=np.pi) -> tuple[float, float]:
    """(max |S21 - exp(-i beta L)|, max |S11|) of an empty guide, port "in" driven."""
    beta = np.sqrt((2 * np.pi * f) ** 2 - k_c**2)
    return float(np.abs(s[:, 1, 0] - np.exp(-1j * beta * length)).max()), float(np.abs(s[:, 0, 0]).max())


def test_launch_is_the_neighbours_trace_of_the_mode():
    """On the curved guide, random u, at the pulse's peak: rhs on a total-field element (past the
    source plane) is the plain operator on u + (the mode at the scattered-field neighbours' face
    nodes), on a scattered-field element on u - (the mode at the total-field ones); measured
    1.3e-16 of the scale."""
    sim = Simulation(case_from_dict(guide("galerkin", CURVED), name="g"), backend="cpu", output_dir=None, comm=None)
    system = sim.system
    term = next(t for t in system.terms if t.name == "port.in")
    assert "Galerkin" in type(term).__name__ and term.count
    x = system.geometry.coords
    inside = np.all(x[2].reshape(system.num_elements, -1) >= 1.5 - 1e-9, axis=1)
    sign = surface_signs(system, inside)
    t = term.wave.params["t0"] + 0.3 * term.wave.params["width"]
    rng = np.random.default_rng()
    u = 0.1 * rng.standard_normal(system.allocate_state().shape)

    def incident(side):  # the mode at the face nodes of the surface's faces on that side, zero elsewhere
        element, face = np.nonzero(sign == side)
        e, h = term.wave.face_fields(system.face_normals[:, element, face], element, face)
        faces = np.zeros((6, system.num_elements, 6) + e.shape[-2:])
        faces[:, element, face] = np.concatenate([e, h]) * term.wave.profile(np, np.full(e.shape[1:], t))
        out = np.zeros_like(u)
        add_to_faces(out, faces, system.order)
        return out

    term.at_time(t)  # what MaxwellSystem.rhs does around L (the PML's aux fields keep rhs from being called)
    got = system.core_rhs(u, t, np.zeros_like(u))
    term.at_time(None)
    on_t = system.core_rhs(u + incident(-1), t, np.zeros_like(u))
    on_s = system.core_rhs(u - incident(+1), t, np.zeros_like(u))
    plain = system.core_rhs(u, t, np.zeros_like(u))
    free = np.ones(system.num_elements, bool)  # (the PML's layers are far from the source plane)
    free[next(t for t in system.terms if t.name == "pml").elements] = False
    scale = np.abs(got).max()
    assert np.abs(got[:, inside & free] - on_t[:, inside & free]).max() < 1e-13 * scale
    assert np.abs(got[:, ~inside & free] - on_s[:, ~inside & free]).max() < 1e-13 * scale
    assert np.abs(got - plain).max() > 1e-2 * scale  # the launch did something
    assert np.array_equal(np.unique(np.nonzero(sign)[0]), term.elements)


@pytest.fixture(scope="module")
def box_guide(tmp_path_factory):
    """test_ports.py's guide with the Galerkin form: (f, S)."""
    return run_guide(guide("galerkin"), tmp_path_factory.mktemp("box"))


def test_box_guide_s_parameters(box_guide, tmp_path):
    # measured at N = 3: Galerkin 1.3e-3 and 3.8e-3, split 8.6e-3 and 7.2e-3
    f, s = box_guide
    error, reflection = guide_errors(f, s)
    split_error, split_reflection = guide_errors(*run_guide(guide("split"), tmp_path))
    assert error < 3e-3 and reflection < 6e-3
    assert error < 0.5 * split_error and reflection < split_reflection
    assert np.all(np.isnan(s[:, :, 1]))  # port "out" not driven


def test_curved_interior_guide_s_parameters(tmp_path):
    # measured at N = 3: Galerkin 2.1e-3 and 4.4e-3, split 1.8e-2 and 8.7e-3 (on the box: 8.6e-3
    # and 7.2e-3); at N = 4 Galerkin 1.2e-3 and 1.7e-3, split 4.1e-3 and 2.3e-3
    error, reflection = guide_errors(*run_guide(guide("galerkin", CURVED), tmp_path / "g"))
    split_error, split_reflection = guide_errors(*run_guide(guide("split", CURVED), tmp_path / "s"))
    assert error < 4e-3 and reflection < 6e-3
    assert error < 0.25 * split_error and reflection < split_reflection


def test_o_grid_circular_guide_through_surface_ports(tmp_path):
    """The O-grid cylinder (radius 1, 0.5 long, geometry order 3) with TE11 ports on its end
    surfaces (test_port_surface.py), "a" driven, at N = 3: S21 = exp(-i beta 0.5), k_c = 1.8412,
    and |S11|^2 + |S21|^2 = 1. Measured at f = 0.5, 0.75, 1: |S21 - exact| Galerkin 3.6e-3,
    9.5e-4, 5.1e-3, split 2.6e-3, 5.2e-3, 1.8e-2; power Galerkin 0.9966, 0.9981, 0.9932, split
    0.9949, 0.9939, 0.9640 (TE21 and TM01 propagate at the top: the split form's rim converts)."""
    measured = {}
    for form in ("galerkin", "split"):
        data = cylinder_surface_case(tmp_path)
        data["discretization"]["volume_form"] = form
        data["ports"]["drive"] = ["a"]
        f, s = run_guide(data, tmp_path / form)
        power = np.abs(s[:, 0, 0]) ** 2 + np.abs(s[:, 1, 0]) ** 2
        measured[form] = (guide_errors(f, s, 0.5, 1.841183781)[0], np.abs(power - 1.0).max())
    (error, loss), (split_error, split_loss) = measured["galerkin"], measured["split"]
    assert error < 8e-3 and loss < 1e-2
    assert error < 0.5 * split_error and loss < 0.5 * split_loss


def test_lobatto_run_writes_the_s_parameters(box_guide, tmp_path):
    """The command line on the case file: exit 0, the Touchstone and HDF5 files, the S of the
    library's run (the same arithmetic)."""
    from lobatto.config.toml_text import to_toml

    path = tmp_path / "guide.toml"
    path.write_text(to_toml(guide("galerkin")))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-m", "lobatto", "run", str(path), "-o", str(tmp_path / "out"), "-q"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "guide.s2p").is_file()
    f, s = s_matrix(tmp_path / "out")
    assert np.array_equal(f, box_guide[0]) and np.abs(s - box_guide[1])[:, :, 0].max() <= 1e-12
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["config"]["discretization"]["volume_form"] == "galerkin"
    assert summary["port.in"]["type"] == "port mode (total-field/scattered-field plane, Galerkin form)"


@pytest.mark.mpi
@pytest.mark.skipif(mpirun.SKIP_REASON is not None, reason=mpirun.SKIP_REASON or "")
def test_ranks_give_the_serial_s_matrix_and_fields():
    """Both ports driven on the curved guide on 3 ranks, 2 (a sub-communicator) and 1, in one
    launch (main): S and the last run's fields equal the serial ones to 1e-12; on 3 ranks some
    rank holds none of a port plane's faces and none of a launch's surface faces."""
    result = mpirun.run(3, [str(Path(__file__).resolve())], timeout=600)
    assert result.returncode == 0, mpirun.describe(result)
    out = json.loads(result.stdout)
    serial = np.array(out["1"]["re"]) + 1j * np.array(out["1"]["im"])
    fields = np.array(out["1"]["fields"])
    assert serial.shape == (4, 2, 2) and np.all(np.isfinite(serial)) and np.abs(fields).max() > 1e-6
    assert np.abs(serial[:, 1, 0] - serial[:, 0, 1]).max() < 1e-3  # reciprocity
    for ranks in ("2", "3"):
        s = np.array(out[ranks]["re"]) + 1j * np.array(out[ranks]["im"])
        assert np.abs(s - serial).max() <= 1e-12, ranks
        assert np.array_equal(out[ranks]["ids"], out["1"]["ids"])
        assert np.abs(np.array(out[ranks]["fields"]) - fields).max() <= 1e-12 * np.abs(fields).max(), ranks
    assert min(out["3"]["holders"].values()) < 3  # some rank holds none of a plane's faces
    assert out["3"]["launchers"] < 3  # and some none of the launch's surface


def rank_run(comm, directory) -> dict | None:
    """One two-port run of the curved Galerkin guide on comm (None: serial); rank 0's S, the
    last run's fields in element-id order, how many ranks held each plane's and the last
    launch's faces."""
    data = guide("galerkin", CURVED)
    data["ports"]["drive"] = "all"
    data["time"] = {"t_end": 34.0}  # a fixed end: the decay stop's energy sums may differ in their last bits
    with contextlib.redirect_stdout(io.StringIO()):
        result = lobatto.run(data, output_dir=directory, comm=comm)
    system = result.simulation.system
    launch = next(t for t in system.terms if t.name == "port.out")
    count = (lambda n: n) if comm is None else (lambda n: comm.allreduce(n))
    holders = {name: count(int(np.isin(plane.ids, system.mesh.element_ids).any()))
               for name, plane in system.port_planes.items()}
    launchers = count(int(launch.count > 0))
    parts = [(system.mesh.element_ids, np.asarray(result.simulation.u))]
    if comm is not None:
        parts = comm.gather(parts[0])
        if comm.Get_rank() != 0:
            return None
    ids = np.concatenate([p[0] for p in parts])
    order = np.argsort(ids)
    fields = np.concatenate([p[1] for p in parts], axis=1)[:, order]
    _, s = s_matrix(directory)
    return {"re": s.real.tolist(), "im": s.imag.tolist(), "ids": ids[order].tolist(), "fields": fields.tolist(),
            "holders": holders, "launchers": launchers}


def main() -> int:
    """Under mpiexec -n 3: rank_run on 3 ranks, on 2 and on rank 0 alone; rank 0 prints JSON."""
    from mpi4py import MPI

    from quiet import quiet_barrier

    world = MPI.COMM_WORLD
    pair = world.Split(0 if world.rank < 2 else 1, world.rank)
    scratch = tempfile.TemporaryDirectory() if world.rank == 0 else None
    root = world.bcast(scratch.name if scratch is not None else None)
    out = {3: rank_run(world, f"{root}/r3")}
    if world.rank < 2:
        out[2] = rank_run(pair, f"{root}/r2")
    if world.rank == 0:
        out[1] = rank_run(None, f"{root}/r1")
    quiet_barrier(world)  # the ranks left out of the 2- and 1-rank runs wait asleep
    if world.rank == 0:
        json.dump(out, sys.stdout)
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
