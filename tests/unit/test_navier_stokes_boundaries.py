"""The Navier–Stokes boundary kinds beyond wall, velocity and outflow (docs/navier-stokes.md,
"Boundary conditions"), against exact flows, on the CPU:

    symmetry        a half channel (Poiseuille, the symmetry plane on the centreline) stays
                    the exact profile with the plane normal to x, y and z, and on a box rotated
                    by 0.5 rad (the plane's normal off the axes); a normal velocity on the
                    plane is removed by the first step; on a gmsh mesh three symmetry planes
                    meeting at edges keep an inflow-outflow Poiseuille flow exact
    traction        Poiseuille driven by a traction difference between inlet and outlet: the
                    exact velocity and pressure
    outflow_normal  an inflow (a where/min/max profile) and an ON outlet: the tangential
                    velocity there is zero after one step, the exact flow stays exact
    backflow        the stabilisation's term removes 1/2 |u|^2 |u . n| where u . n < 0 and
                    nothing where the flow leaves; a vortex leaving through an outflow gains
                    less energy with it than without
and the case errors of the new kinds (exit 2, one line).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError
from lobatto.mesh.topology import face_slice

NU = 0.1
AXES = "xyz"


def run(case: dict, tmp_path, steps: int, name: str = "bc"):
    case.setdefault("output", {"formats": []})
    sim = Simulation(case_from_dict(case, name=name), backend="cpu", output_dir=tmp_path / name, comm=None)
    sim.advance(steps)
    return sim


def half_channel(normal: int, flow: int, kind: str = "symmetry") -> dict:
    """u_flow = 1 - s^2 on s in [0, 1] (s the coordinate along ``normal``): the plane s = 0
    of ``kind``, a wall at s = 1, periodic along the two other axes, driven by the force 2 nu."""
    s, f = AXES[normal], AXES[flow]
    periodic = [axis != normal for axis in range(3)]
    elements = [1, 1, 1]
    elements[normal] = 2
    return {
        "physics": {"equations": "navier_stokes", "viscosity": NU, f"force_{f}": f"{2 * NU}"},
        "mesh": {"elements": elements, "periodic": periodic, "boundaries": {f"{s}min": kind}},
        "discretization": {"order": 4},
        "time": {"dt": 0.05, "t_end": 10.0},
        "initial": {f"u{f}": f"1 - {s}**2"},
        "exact": {f"u{f}": f"1 - {s}**2"},
    }


@pytest.mark.parametrize("normal,flow", [(0, 1), (1, 2), (2, 0)])
def test_symmetry_plane_on_each_axis_keeps_the_half_channel_exact(tmp_path, normal, flow):
    sim = run(half_channel(normal, flow), tmp_path, 3)
    errors = sim.errors()
    assert all(errors[c]["max"] < 1e-12 for c in ("ux", "uy", "uz")), errors
    q = sim.system.boundaries.constraint.projections  # axis-aligned: exactly one component fixed
    assert set(np.unique(q)) <= {0.0, 1.0}
    assert np.all(q[:, normal, normal] == 0.0) and np.all(np.trace(q, axis1=1, axis2=2) == 2.0)
    assert sim.system.null_space  # symmetry leaves the pressure natural


def test_a_wall_in_place_of_the_symmetry_plane_is_another_flow(tmp_path):
    """The check above can fail: with no slip on the centreline the profile moves at once."""
    errors = run(half_channel(1, 0, kind="wall"), tmp_path, 1).errors()
    assert errors["ux"]["max"] > 0.1


THETA = 0.5
COS, SIN = math.cos(THETA), math.sin(THETA)
ETA = f"(-x*{SIN!r} + y*{COS!r})"  # the distance from the rotated symmetry plane


def rotated(initial_extra: dict | None = None) -> dict:
    """The half channel of the box [0, 1]^3 rotated by THETA about z: symmetry on the image
    of y = 0, a wall on that of y = 1, periodic along the image of x and along z."""
    profile = f"(1 - {ETA}**2)"
    exact = {"ux": f"{profile}*{COS!r}", "uy": f"{profile}*{SIN!r}"}
    initial = dict(exact)
    for key, value in (initial_extra or {}).items():
        initial[key] = f"{initial[key]} + {value}"
    return {
        "physics": {"equations": "navier_stokes", "viscosity": NU, "force_x": f"{2 * NU * COS!r}",
                    "force_y": f"{2 * NU * SIN!r}"},
        "mesh": {"elements": [2, 2, 1], "periodic": [True, False, True], "boundaries": {"ymin": "symmetry"},
                 "deform": {"x": f"x*({COS!r} - 1) - y*{SIN!r}", "y": f"x*{SIN!r} + y*({COS!r} - 1)"}},
        "discretization": {"order": 4},
        "time": {"dt": 0.05, "t_end": 10.0},
        "initial": initial, "exact": exact,
    }


def symmetry_points(sim, face_kind: str = "symmetry"):
    """(normals (3, m), velocity (3, m)) at the face points of ``face_kind`` faces."""
    kind, geometry, u = sim.system.boundaries.kind, sim.system.geometry, np.asarray(sim.u[:3])
    normals, values = [], []
    for face in range(6):
        rows = np.flatnonzero(kind[:, face] == face_kind)
        index = (rows,) + face_slice(face, geometry.order)[1:]
        normals.append(geometry.normals[:, rows, face].reshape(3, -1))
        values.append(np.stack([u[c][index] for c in range(3)]).reshape(3, -1))
    return np.concatenate(normals, axis=1), np.concatenate(values, axis=1)


def test_symmetry_on_a_rotated_plane(tmp_path):
    sim = run(rotated(), tmp_path, 3, "exact")
    errors = sim.errors()
    assert all(errors[c]["max"] < 1e-12 for c in ("ux", "uy", "uz")), errors
    normals, _ = symmetry_points(sim)
    assert np.allclose(normals, [[SIN], [-COS], [0.0]], atol=1e-14)  # outward, off the axes
    # a flow through the plane: the first step leaves none
    push = {"ux": f"0.2*{-SIN!r}*sin(2*pi*x)", "uy": f"0.2*{COS!r}*sin(2*pi*x)"}
    sim = run(rotated(push), tmp_path, 1, "through")
    normals, u = symmetry_points(sim)
    assert np.abs((normals * u).sum(axis=0)).max() < 1e-13
    assert np.abs(u).max() > 0.5  # and the tangential flow is free


def channel(boundaries: dict, boundary: dict, initial: dict, exact: dict, **physics) -> dict:
    return {
        "physics": {"equations": "navier_stokes", "viscosity": NU, **physics},
        "mesh": {"elements": [2, 2, 1], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
                 "periodic": [False, False, True], "boundaries": boundaries},
        "discretization": {"order": 4},
        "time": {"dt": 0.05, "t_end": 10.0},
        "solver": {"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-12}},
        "boundary": boundary, "initial": initial, "exact": exact,
    }


def test_traction_driven_poiseuille_is_exact(tmp_path):
    """p = 0.3 + 2 nu (2 - x): the inlet's traction -p n = (0.3 + 4 nu) e_x, the outlet's
    -0.3 e_x; u = 1 - y^2. From rest the tractions alone must drive it."""
    exact = {"ux": "1 - y**2", "p": f"0.3 + {2 * NU}*(2 - x)"}
    tractions = {"xmin": {"tx": f"0.3 + {4 * NU}"}, "xmax": {"tx": "-0.3", "ty": "0"}}
    sim = run(channel({"xmin": "traction", "xmax": "traction"}, tractions, dict(exact), exact), tmp_path, 2)
    errors = sim.errors()
    assert errors["ux"]["max"] < 1e-10 and errors["uy"]["max"] < 1e-10 and errors["p"]["max"] < 1e-9, errors
    assert not sim.system.null_space
    moving = run(channel({"xmin": "traction", "xmax": "traction"}, tractions, {}, exact), tmp_path, 2, "rest")
    # the pressure drop 2 nu per unit length accelerates the fluid at 2 nu (less near the walls;
    # measured 0.02009 on the centreline at t = 0.1, against 2 nu t = 0.02)
    assert 0.9 * 2 * NU * 0.1 < np.asarray(moving.u[0]).max() < 1.05 * 2 * NU * 0.1


def test_outflow_normal_fixes_the_tangential_velocity(tmp_path):
    """An inflow given piecewise (where, min, max: 1 - y^2 all the same) and an ON outlet."""
    inflow = {"ux": "where(y < 0, max(1 - y**2, 0), min(1 - y**2, 2))"}
    exact = {"ux": "1 - y**2", "p": f"{2 * NU}*(2 - x)"}
    sim = run(channel({"xmax": "outflow_normal"}, {"xmin": inflow}, dict(exact), exact), tmp_path, 2)
    errors = sim.errors()
    assert errors["ux"]["max"] < 1e-10 and errors["p"]["max"] < 1e-9, errors
    tilted = dict(exact, uy="0.1*(1 - y**2)*x")
    sim = run(channel({"xmax": "outflow_normal"}, {"xmin": inflow}, tilted, exact), tmp_path, 1, "tilted")
    normals, u = symmetry_points(sim, "outflow_normal")
    assert np.abs(u[1:]).max() < 1e-14 and u[0].min() > -1e-14 and u[0].max() > 0.5


def vortex_case(backflow: bool) -> dict:
    """A uniform stream with a vortex (peak swirl 1.7 times the stream) about to leave."""
    e = "exp(-((x - 0.85)**2 + y**2)/0.04)"
    return {
        "physics": {"equations": "navier_stokes", "viscosity": 1e-3, "backflow_stabilization": backflow},
        "mesh": {"elements": [2, 2, 1], "lower": [0.0, -0.5, 0.0], "upper": [1.0, 0.5, 1.0],
                 "periodic": [False, False, True],
                 "boundaries": {"xmax": "outflow", "ymin": "symmetry", "ymax": "symmetry"}},
        "discretization": {"order": 4},
        "time": {"dt": 0.01, "t_end": 10.0},
        "boundary": {"xmin": {"ux": "1"}},
        "initial": {"ux": f"1 - 20*y*{e}", "uy": f"20*(x - 0.85)*{e}"},
    }


def test_backflow_term_removes_the_energy_inflow_brings(tmp_path):
    """On fresh random velocities: the term at each outflow point is 1/2 min(u.n, 0) w sJ u,
    u.n and w sJ from the geometry: zero where the flow leaves, and sum(term . u) =
    sum 1/2 min(u.n, 0) |u|^2 w sJ < 0, the energy that inflow carries in."""
    from lobatto.discretization import gll_weights

    sim = run(vortex_case(True), tmp_path, 0, "term")
    geometry, kind = sim.system.geometry, sim.system.boundaries.kind
    u = np.random.default_rng().uniform(-1.0, 1.0, size=np.asarray(sim.u[:3]).shape)
    term = sim.system.boundaries.open.natural(u, 0.0)
    w = gll_weights(geometry.order)
    budget, expected, faces = 0.0, 0.0, 0
    for face in range(6):
        for row in np.flatnonzero(kind[:, face] == "outflow"):
            index = (row,) + face_slice(face, geometry.order)[1:]
            n, area = geometry.normals[:, row, face], np.outer(w, w) * geometry.surface_jacobian[row, face]
            uf = np.stack([u[c][index] for c in range(3)])
            un = (n * uf).sum(axis=0)
            got = np.stack([term[c][index] for c in range(3)])
            np.testing.assert_allclose(got, 0.5 * np.minimum(un, 0.0) * area * uf, rtol=1e-14, atol=1e-300)
            assert np.all(got[:, un > 0] == 0.0) and np.any(un < 0)
            budget += (got * uf).sum()
            expected += (0.5 * np.minimum(un, 0.0) * (uf * uf).sum(axis=0) * area).sum()
            faces += 1
    assert faces == 2 and budget == pytest.approx(expected, rel=1e-12) and budget < 0
    outside = np.ones(term.shape[1:], dtype=bool)  # nothing away from the outflow faces
    for face in range(6):
        for row in np.flatnonzero(kind[:, face] == "outflow"):
            outside[(row,) + face_slice(face, geometry.order)[1:]] = False
    assert np.all(term[:, outside] == 0.0)


def test_backflow_stabilization_holds_the_energy_of_a_leaving_vortex(tmp_path):
    """Kinetic energy after 5 and 20 steps, measured (this CPU): 0.6851, 0.6084 with the
    stabilisation (the vortex leaves); 0.6872, 0.8131 without (backflow at the outlet feeds
    it: step 27 stops at CFL 2.08 > max_cfl)."""
    energy = {}
    for on in (True, False):
        sim = run(vortex_case(on), tmp_path, 5, f"vortex{on}")
        first = sim.system.step_report()["kinetic_energy"]
        sim.advance(15)
        energy[on] = (first, sim.system.step_report()["kinetic_energy"])
    assert energy[True][1] < 0.95 * energy[True][0], energy
    assert energy[False][1] > 1.1 * energy[False][0], energy


@pytest.mark.parametrize("boundaries,boundary,message", [
    ({"xmin": "symmetry"}, {"xmin": {"ux": "1"}}, r"\[boundary.xmin\] gives velocity data \(ux\), but its faces are "
                                                  r"\"symmetry\" faces"),
    ({"xmin": "outflow_normal"}, {"xmin": {"uy": "1"}}, r"\"outflow_normal\" faces, which take none"),
    ({}, {"xmin": {"tx": "1"}}, r"\[boundary.xmin\] gives traction data \(tx\), but its faces are \"wall\" faces"),
    ({"xmin": "traction"}, {"xmin": {"tx": "1", "ux": "1"}}, r"both velocity \(ux\) and traction \(tx\)"),
    ({"xmin": "slip"}, {}, r'must be one of "wall", "velocity", "outflow", "symmetry", "traction", "outflow_normal", '
                           r'got "slip"'),
    ({"xmin": "traction"}, {"xmin": {"tx": "where(y < 1, 1)"}}, r"\[boundary.xmin\] tx.*where\(\) takes 3"),
])
def test_bad_use_of_the_new_kinds_is_refused(tmp_path, boundaries, boundary, message):
    case = channel(boundaries, boundary, {}, {})
    with pytest.raises(InputError, match=message):
        run(case, tmp_path, 0)


def test_symmetry_planes_meeting_at_edges_on_a_gmsh_mesh(tmp_path):
    """The gmsh-written unit cube (groups xmin ... zmax): symmetry on ymin, zmin and zmax (the
    planes meet at edges, where only u_x is free), a wall on ymax, the inflow 1 - y^2 on xmin
    and an outflow on xmax: Poiseuille u = 1 - y^2, p = 2 nu (1 - x), exact."""
    from pathlib import Path

    msh = Path(__file__).resolve().parents[1] / "data" / "meshes" / "box_msh41.msh"
    exact = {"ux": "1 - y**2", "p": f"{2 * NU}*(1 - x)"}
    sim = run({
        "physics": {"equations": "navier_stokes", "viscosity": NU},
        "mesh": {"generator": "gmsh", "file": str(msh),
                 "boundaries": {"ymin": "symmetry", "zmin": "symmetry", "zmax": "symmetry", "xmax": "outflow"}},
        "discretization": {"order": 3},
        "time": {"dt": 0.05, "t_end": 10.0},
        "solver": {"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-12}},
        "boundary": {"xmin": {"ux": "1 - y**2"}},
        "initial": dict(exact), "exact": exact,
    }, tmp_path, 2, "gmsh")
    errors = sim.errors()
    assert all(errors[c]["max"] < 1e-10 for c in ("ux", "uy", "uz")) and errors["p"]["max"] < 1e-9, errors
    q = np.asarray(sim.system.boundaries.constraint.projections)
    assert np.any(np.trace(q, axis1=1, axis2=2) == 1.0)  # edge points: two directions constrained
