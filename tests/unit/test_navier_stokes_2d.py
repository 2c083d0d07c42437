"""Navier–Stokes on 2-D meshes (issue 34, slice D): fields (ux, uy, p) and scalars.

The oracle is the extruded 3-D twin (mesh.extrude.extrude_quads: one layer, z in [-1, 1],
periodic z; docs/notes-2d-plan.md 2.1): the operators equal it plane by plane to 1e-12, with the
GLL weight w_k of the plane on what integrates (A3 ext(u) = w_k A2 u, Lz = 2); a run equals it
to ~1e-10 after 5 BDF2 steps at solver tolerances of 1e-14 (CG: the Krylov paths differ).
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import gll_weights
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.operators.advection import Advection
from lobatto.operators.differential import (BackendGeometry, curl, divergence, gradient, mass_minus_gradient,
                                            weak_divergence, weak_divergence_minus_curl, weighted_curl)
from planar import deform_xy

REFERENCE = NumpyBackend()


def twins(elements=(3, 2), order=4):
    """(2-D geometry, the extruded twin's geometry)."""
    flat = box_mesh(elements, deform=deform_xy)
    return compute_geometry(flat, order), compute_geometry(extrude_quads(flat), order)


def extruded(u2, n):
    """A z-independent 3-D field from a 2-D one: (..., E, 1, n, n) -> (..., E, n, n, n)."""
    return np.ascontiguousarray(np.broadcast_to(u2, u2.shape[:-3] + (n, n, n)))


def with_zero_z(v2, n):
    """The 3-vector (vx, vy, 0) of the twin from a 2-D (vx, vy)."""
    v3 = extruded(v2, n)
    return np.concatenate([v3, np.zeros((1,) + v3.shape[1:])])


def close(got, want, bound=1e-12):
    scale = np.abs(want).max()
    assert scale > 1e-3
    assert np.abs(got - want).max() <= bound * scale, np.abs(got - want).max() / scale


# Operators -------------------------------------------------------------------------------------

@pytest.mark.parametrize("order", [3, 6])
def test_differential_operators_equal_the_extruded_ones(order):
    g2, g3 = twins(order=order)
    n = order + 1
    w = gll_weights(order)[None, :, None, None]  # the twin's plane weight (Lz / 2 = 1)
    rng = np.random.default_rng(order)
    v2, f2 = rng.standard_normal((2,) + g2.jacobian.shape), rng.standard_normal((2,) + g2.jacobian.shape)
    p2, omega2 = rng.standard_normal(g2.jacobian.shape), rng.standard_normal((1,) + g2.jacobian.shape)
    b2, b3 = BackendGeometry(g2, REFERENCE), BackendGeometry(g3, REFERENCE)
    assert b2.metrics.shape == (2, 2, 6, 1, n, n)  # the compact metrics of a 2-D mesh
    v3, f3, p3 = with_zero_z(v2, n), with_zero_z(f2, n), extruded(p2, n)
    # curl: omega_z, pointwise; the twin's x and y components are 0
    c2, c3 = curl(b2, REFERENCE, v2), curl(b3, REFERENCE, v3)
    assert c2.shape == (1, 6, 1, n, n)
    close(c3[2], extruded(c2[0], n))
    assert np.abs(c3[:2]).max() <= 1e-12 * np.abs(c2).max()
    close(weighted_curl(b3, REFERENCE, v3)[2], w * weighted_curl(b2, REFERENCE, v2)[0])
    close(gradient(b3, REFERENCE, p3)[:2], extruded(gradient(b2, REFERENCE, p2), n))
    close(divergence(b3, REFERENCE, v3), extruded(divergence(b2, REFERENCE, v2), n))
    close(weak_divergence(b3, REFERENCE, v3), w * weak_divergence(b2, REFERENCE, v2))
    # the pressure right-hand side: the curl of omega_z e_z is (d omega / dy, -d omega / dx)
    omega3 = np.concatenate([np.zeros((2,) + p3.shape), extruded(omega2, n)])
    close(weak_divergence_minus_curl(b3, REFERENCE, f3, omega3, 0.3),
          w * weak_divergence_minus_curl(b2, REFERENCE, f2, omega2, 0.3))
    m3 = mass_minus_gradient(b3, REFERENCE, f3, p3)
    close(m3[:2], w * mass_minus_gradient(b2, REFERENCE, f2, p2))
    assert np.abs(m3[2]).max() <= 1e-12 * np.abs(m3).max()


@pytest.mark.parametrize("order, dealias", [(3, True), (5, True), (4, False)])
def test_advection_equals_the_extruded_one(order, dealias):
    g2, g3 = twins(order=order)
    n = order + 1
    w = gll_weights(order)[None, :, None, None]
    rng = np.random.default_rng(10 + order)
    u2, f2 = rng.standard_normal((2,) + g2.jacobian.shape), rng.standard_normal((3,) + g2.jacobian.shape)
    a2, a3 = Advection(g2, REFERENCE, dealias=dealias), Advection(g3, REFERENCE, dealias=dealias)
    c2 = a2.convective(u2, f2)
    c3 = a3.convective(with_zero_z(u2, n), extruded(f2, n))
    assert c2.shape == f2.shape
    close(c3, w * c2)
    # the CFL number: the twin's t term is 0 (u_z = 0, d t / d x = d t / d y = 0)
    assert a2.courant(u2, 0.1) == pytest.approx(a3.courant(with_zero_z(u2, n), 0.1), rel=1e-12)
    if dealias:
        m = a2.fine_points
        assert a2.factors.shape == (2, 2, 6, 1, m, m) and a2.contravariant(u2).shape == (2, 6, 1, m, m)
        # linear in u: the sub-steps combine contravariant velocities
        close(a2.convective_with(a2.contravariant(u2) * 2.0, f2), 2.0 * c2)


# Runs --------------------------------------------------------------------------------------------

INFLOW = {"ux": "(1 + 0.2*sin(pi*y))*(1 - exp(-20*t))", "uy": "0.1*x*y", "T": "1 + 0.3*y"}
INITIAL = {"ux": "0.5 + 0.1*sin(2*x)*cos(y)", "uy": "0.2*cos(x + y)", "p": "0.1*x", "T": "1 + 0.3*y - 0.2*x"}


def flow_case(dim, order=4, steps=5, dt=0.01, more=None, elements=(3, 2)):
    """A short BDF2 run on a curved (deformed in x, y) 2-D box or its extruded twin (z in
    [-1, 1], periodic z): inflow with a passive scalar on xmin, wall on ymin (with a scalar
    flux), symmetry on ymax, outflow on xmax, and a body force using the scalar."""
    from lobatto.api import case_from_dict

    nx, ny = elements
    mesh = {"elements": [nx, ny], "lower": [0.0, 0.0], "upper": [1.5, 1.0]}
    if dim == 3:
        mesh = {"elements": [nx, ny, 1], "lower": [0.0, 0.0, -1.0], "upper": [1.5, 1.0, 1.0],
                "periodic": [False, False, True]}
    mesh["deform"] = {"x": "0.04*sin(pi*x)*sin(pi*y)", "y": "0.03*sin(2*pi*x/1.5)*sin(pi*y)"}
    mesh["boundaries"] = {"xmax": "outflow", "ymax": "symmetry"}
    tight = {"tolerance": 1e-14, "max_iterations": 800}
    data = {
        "physics": {"equations": "navier_stokes", "viscosity": 0.05, "scalars": ["T"],
                    "force_x": "0.2*sin(3*y)", "force_y": "0.3*T"},
        "scalar": {"T": {"diffusivity": 0.04, "tolerance": 1e-14, "max_iterations": 800}},
        "mesh": mesh, "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": dt, "t_end": steps * dt},
        "solver": {"pressure": dict(tight), "velocity": dict(tight)},
        "boundary": {"xmin": dict(INFLOW), "ymin": {"T_flux": "0.1*x"}},
        "initial": dict(INITIAL), "output": {"formats": []},
    }
    for key, value in (more or {}).items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return case_from_dict(data, name=f"flow{dim}d")


def run_twins(tmp_path, **options):
    from lobatto.api import Simulation

    out = []
    for dim in (2, 3):
        sim = Simulation(flow_case(dim, **options), backend="cpu", output_dir=tmp_path / f"d{dim}", comm=None)
        sim.run()
        out.append(sim)
    return out


def planes_equal(u2, u3, bound):
    """u3's (ux, uy, p, T) in every k plane against u2's; u3's uz stays 0."""
    pick = [0, 1, 3, 4]
    scale = np.abs(u2).max()
    worst = max(np.abs(u3[pick, :, k] - u2[:, :, 0]).max() for k in range(u3.shape[2]))
    assert worst <= bound * scale, worst / scale
    assert np.abs(u3[2]).max() <= bound * scale
    return worst / scale


def test_five_bdf2_steps_equal_the_extruded_run(tmp_path):
    """Inflow, wall, symmetry and outflow sides, a passive scalar with a Dirichlet side and a
    flux side, a body force in the scalar: at solver tolerances of 1e-14 the 2-D run equals
    every k plane of the extruded run's to 1e-10 (the plan's 2.1: CG Krylov paths differ)."""
    s2, s3 = run_twins(tmp_path)
    u2, u3 = np.asarray(s2.u), np.asarray(s3.u)
    assert s2.system.field_names == ("ux", "uy", "p", "T") and u2.shape == (4, 6, 1, 5, 5)
    assert s2.step_count == s3.step_count == 5
    assert np.abs(u2[0] - 0.5).max() > 0.1  # it moved
    planes_equal(u2, u3, 1e-10)
    # the kinetic energy per unit depth: the twin's over its depth 2
    assert s3.system.energy(s3.u) == pytest.approx(2 * s2.system.energy(s2.u), rel=1e-10)


@pytest.mark.parametrize("more", [
    {"time": {"substeps": 2}, "physics": {"filter_modes": 1, "filter_weight": 5.0}},
    {"time": {"integrator": "bdf3"}, "physics": {"dealias": False, "backflow_stabilization": True}},
    {"time": {}, "mesh": {"boundaries": {"xmax": "traction", "ymax": "outflow_normal"}},
     "boundary": {"xmax": {"tx": "-0.3*y", "ty": "0.05*t"}}},
])
def test_substeps_filter_and_collocation_equal_the_extruded_run(tmp_path, more):
    """OIFS sub-steps on the thin (2, E, 1, M, M) fine grid with the HPF-RT filter; BDF3 with
    the collocated (not dealiased) advection and the outflow's backflow term; a traction side
    and an outflow_normal side (the 2x2 slip projection)."""
    s2, s3 = run_twins(tmp_path, more=more)
    assert (s2.system.substepper is not None) == ("substeps" in more["time"])
    kinds = s2.system.boundaries.kind
    assert kinds.shape == (6, 4) and np.array_equal(s3.system.boundaries.kind[:, :4], kinds)  # faces 0..3 alike
    planes_equal(np.asarray(s2.u), np.asarray(s3.u), 1e-10)


def test_forces_per_unit_depth_are_the_extruded_forces_over_its_depth(tmp_path):
    """[output.forces]: every column (force, its pressure and viscous parts, moment) of the 2-D
    run is the extruded run's over its depth Lz = 2; Fz, Mx, My are 0 and Mz is the moment
    about the z axis through the centre's (x, y)."""
    forces = {"forces": {"bottom": {"surfaces": ["ymin"], "center": [0.7, 0.4, 0.0]},
                         "open": {"surfaces": ["xmin", "xmax"], "center": [0.0, 0.5, 0.0], "reference_area": 1.0,
                                  "reference_velocity": 1.0}}}
    s2, s3 = run_twins(tmp_path, more={"output": forces})
    monitor2, monitor3 = (next(m for m in s.series.monitors if m.section == "forces") for s in (s2, s3))
    for group in ("bottom", "open"):
        f2, f3 = monitor2.last[group], monitor3.last[group]
        assert f2["step"] == f3["step"] == 5
        columns = [c for c in f2 if c not in ("step", "t")]
        scale = max(abs(f2[c]) for c in columns)
        assert scale > 1e-2 and abs(f2["Fx"]) > 1e-3 and abs(f2["Mz"]) > 1e-4
        for c in columns:
            want = f3[c] / 2.0  # (the coefficients too: the same reference_area, a length in 2-D)
            assert abs(f2[c] - want) <= 1e-10 * scale, (group, c, f2[c], want)
        assert f2["Fz"] == f2["Mx"] == f2["My"] == 0.0


def test_derived_fields_equal_the_extruded_ones(tmp_path):
    """[output] derived in 2-D: omega_z (omega_x = omega_y = 0 exactly), Q, div u and the wall
    shear equal every plane of the extruded run's; lambda2 is refused."""
    from lobatto.errors import InputError

    s2, s3 = run_twins(tmp_path, steps=2)
    names = ["vorticity", "vorticity_magnitude", "q_criterion", "divergence", "wall_shear"]
    d2 = s2.system.derived_fields(s2.u, names)
    d3 = s3.system.derived_fields(s3.u, names)
    assert np.all(d2["vorticityx"] == 0) and np.all(d2["vorticityy"] == 0) and np.all(d2["wall_shearz"] == 0)
    for name, value in d2.items():
        scale = max(np.abs(value).max(), 1e-300)
        if name in ("vorticityx", "vorticityy", "wall_shearz"):
            continue
        assert scale > 1e-3, name
        assert max(np.abs(d3[name][:, k] - value[:, 0]).max() for k in range(5)) <= 1e-9 * scale, name
    with pytest.raises(InputError, match="lambda2"):
        s2.system.check_derived(["lambda2"])


CHANNEL_2D = {"physics": {"equations": "navier_stokes", "viscosity": 0.1, "force_x": "1 + 0.5*sin(2*pi*x/2)"},
              "discretization": {"order": 4}, "time": {"integrator": "bdf2", "dt": 0.02, "t_end": 0.1},
              "solver": {"pressure": {"tolerance": 1e-14, "max_iterations": 800},
                         "velocity": {"tolerance": 1e-14, "max_iterations": 800}},
              "initial": {"ux": "(1 - y*y)*(1 + 0.3*sin(pi*x))", "uy": "0.1*sin(pi*x)*(1 - y*y)"},
              "output": {"formats": []}}


def test_statistics_along_x_equal_the_extruded_profiles(tmp_path):
    """[output.statistics] average = ["x"] in 2-D: profiles along y equal the extruded run's
    average over x and z; average = ["z"] is refused in 2-D."""
    from lobatto.api import Simulation, case_from_dict
    from lobatto.errors import InputError

    averages = []
    for dim, mesh, average in (
            (2, {"elements": [3, 2], "lower": [0.0, -1.0], "upper": [2.0, 1.0], "periodic": [True, False]}, ["x"]),
            (3, {"elements": [3, 2, 1], "lower": [0.0, -1.0, -1.0], "upper": [2.0, 1.0, 1.0],
                 "periodic": [True, False, True]}, ["x", "z"])):
        data = dict(CHANNEL_2D, mesh=mesh, output={"formats": [], "statistics": {"average": average}})
        sim = Simulation(case_from_dict(data, name=f"stat{dim}"), backend="cpu", output_dir=tmp_path / str(dim))
        sim.run()
        monitor = next(m for m in sim.series.monitors if m.section == "statistics")
        averages.append((monitor.averages(), monitor.coordinates))
    (a2, c2), (a3, c3) = averages
    assert np.allclose(c2["y"], c3["y"], rtol=0, atol=1e-14) and c2["y"].shape == (9,)
    assert set(a2) == {"ux", "uy", "p", "ux_ux", "ux_uy", "uy_uy", "p_p"}
    for name, value in a2.items():
        scale = np.abs(value).max()
        assert scale > 1e-6 and np.abs(a3[name] - value).max() <= 1e-10 * scale, name
    data = dict(CHANNEL_2D, mesh={"elements": [3, 2], "periodic": [True, False]},
                output={"formats": [], "statistics": {"average": ["z"]}})
    with pytest.raises(InputError, match="no z direction"):
        Simulation(case_from_dict(data, name="statz"), backend="cpu", output_dir=tmp_path / "z")


@pytest.mark.parametrize("extra, words", [
    ({"boundary": {"xmin": {"uz": "0.1"}}}, "[boundary.xmin] uz"),
    ({"physics": {"force_z": "1"}}, "force_z"),
    ({"physics": {"flow_rate": 1.0, "flow_direction": "z"}}, "flow_direction = \"z\""),
    ({"output": {"formats": [], "derived": ["lambda2"]}}, "'lambda2' has no 2-D meaning"),
])
def test_z_keys_are_refused_in_2d(extra, words, tmp_path):
    from lobatto.api import Simulation
    from lobatto.errors import InputError

    with pytest.raises(InputError) as error:
        Simulation(flow_case(2, steps=1, more=extra), backend="cpu", output_dir=tmp_path)
    assert words in str(error.value) and "the mesh is 2-D" in str(error.value)


def test_kovasznay_2d_example_reaches_the_extruded_error(tmp_path):
    """examples/2d/kovasznay.toml (Re = 40, N = 7, dt = 5e-3) started from the exact solution
    relaxes to the discrete steady state: velocity L2 error 1.8506e-6 at t = 1.5 (measured;
    from rest at t = 10: 1.85007e-6 in 2-D and 1.85007e-6 extruded, examples/kovasznay.toml)."""
    import math
    from pathlib import Path

    from lobatto.api import Simulation, load_case, with_changes

    example = Path(__file__).resolve().parents[2] / "examples" / "2d" / "kovasznay.toml"
    case = load_case(example)
    exact = {name: case.exact.fields[name].text for name in ("ux", "uy", "p")}
    case = with_changes(case, {"time": {"integrator": "bdf2", "dt": 5e-3, "t_end": 1.5}, "initial": exact,
                               "output": {"formats": []}})
    assert case.time.dt == 5e-3 and case.discretization.order == 7
    sim = Simulation(case, backend="cpu", output_dir=tmp_path)
    sim.run()
    e = sim.errors()
    assert sim.system.field_names == ("ux", "uy", "p") and "uz" not in e
    velocity = math.sqrt(e["ux"]["l2"] ** 2 + e["uy"]["l2"] ** 2)
    assert 1.84e-6 < velocity < 1.86e-6, velocity


@pytest.mark.parametrize("more", [{"time": {"integrator": "bdf3"}}, {"time": {"substeps": 1}}])
def test_a_2d_restart_equals_the_uninterrupted_run(tmp_path, more):
    """The history (lagged (ux, uy), advection terms or the sub-steps' levels, scalars) is
    checkpointed and restored: 3 + 3 steps are the same bits as 6."""
    from lobatto.api import Simulation

    def make(name):
        return Simulation(flow_case(2, steps=6, more=more), backend="cpu", output_dir=tmp_path / name)

    whole = make("a")
    whole.advance(6)
    first = make("b")
    first.advance(3)
    second = make("c")
    second.restart(first.checkpoint())
    second.advance(3)
    for name, values in whole.fields().items():
        assert np.array_equal(values, second.fields()[name]), name


def test_cylinder_forces_are_the_extruded_forces_over_its_depth(tmp_path, monkeypatch):
    """examples/2d/cylinder.toml (the gmsh quad mesh, curved order-4 arcs) for a few steps at
    N = 3, and the same case on extrude_quads of its mesh (depth 2, periodic z): the drag, lift
    and moment per unit depth are the extruded ones over 2."""
    from pathlib import Path

    import lobatto.runner.build as build
    from lobatto.api import Simulation, load_case, with_changes

    example = Path(__file__).resolve().parents[2] / "examples" / "2d" / "cylinder.toml"
    case = load_case(example)
    tight = {"tolerance": 1e-14, "max_iterations": 800}
    case = with_changes(case, {"discretization": {"order": 3},
                               "time": {"integrator": "bdf2", "dt": 5e-3, "t_end": 0.02},
                               "solver": {"pressure": tight, "velocity": tight},
                               "output": {"formats": [], "forces": {"cylinder": {
                                   "surfaces": ["cylinder"], "center": [0.2, 0.2, 0.0], "reference_velocity": 0.2,
                                   "reference_area": 0.1}}}})
    flat = Simulation(case, backend="cpu", output_dir=tmp_path / "2")
    flat.run()
    assert flat.system.mesh.dim == 2 and flat.system.mesh.num_elements == 56
    read = build.read_mesh_file
    monkeypatch.setattr(build, "read_mesh_file", lambda c: extrude_quads(read(c)))
    solid = Simulation(case, backend="cpu", output_dir=tmp_path / "3")
    solid.run()
    assert solid.system.mesh.dim == 3
    f2, f3 = (next(m for m in s.series.monitors if m.section == "forces").last["cylinder"] for s in (flat, solid))
    assert f2["step"] == f3["step"] == 4 and f2["Cx"] > 1.0
    scale = max(abs(v) for k, v in f2.items() if k not in ("step", "t"))
    for column in f2:
        if column not in ("step", "t"):
            assert abs(f2[column] - f3[column] / 2) <= 1e-10 * scale, (column, f2[column], f3[column] / 2)


def test_the_flow_rate_drives_the_2d_channel_as_the_extruded_one(tmp_path):
    """[physics] flow_rate along x (the response solve on 2-D arrays) equals the extruded
    run's, and holds the mean velocity."""
    from lobatto.api import Simulation, case_from_dict

    states = []
    for dim, mesh in ((2, {"elements": [3, 2], "lower": [0.0, -1.0], "upper": [2.0, 1.0], "periodic": [True, False]}),
                      (3, {"elements": [3, 2, 1], "lower": [0.0, -1.0, -1.0], "upper": [2.0, 1.0, 1.0],
                           "periodic": [True, False, True]})):
        physics = dict(CHANNEL_2D["physics"], flow_rate=0.5, force_x="0")
        sim = Simulation(case_from_dict(dict(CHANNEL_2D, physics=physics, mesh=mesh), name=f"rate{dim}"),
                         backend="cpu", output_dir=tmp_path / str(dim))
        sim.run()
        assert sim.system.flow_rate.mean(sim.u[:dim]) == pytest.approx(0.5, rel=1e-12)
        states.append(np.asarray(sim.u))
    u2, u3 = states
    pick = [0, 1, 3]
    assert max(np.abs(u3[pick, :, k] - u2[:, :, 0]).max() for k in range(5)) <= 1e-10 * np.abs(u2).max()


def test_a_2d_run_writes_every_format_with_derived_fields(tmp_path):
    """vtk, nek and hdf5 snapshots of (ux, uy, p, T) with omega_z and Q, the statistics files."""
    import h5py

    from lobatto.api import Simulation

    more = {"output": {"formats": ["vtk", "nek", "hdf5"], "derived": ["vorticity", "q_criterion"],
                       "statistics": {}}}
    sim = Simulation(flow_case(2, steps=2, more=more), backend="cpu", output_dir=tmp_path)
    sim.run()
    sim.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert any(name.endswith(".vtu") for name in files) and any(name.endswith(".nek5000") for name in files), files
    h5 = tmp_path / "flow2d_000002.h5"
    with h5py.File(h5) as f:
        names = []
        f.visit(names.append)
        for field in ("ux", "uy", "p", "T", "vorticityz", "q_criterion"):
            assert any(n.endswith(field) for n in names), (field, names)
        assert not any(n.endswith("uz") for n in names)
    assert "flow2d_statistics.h5" in files


def test_a_2d_checkpoint_continues_at_another_order(tmp_path):
    """restart --interpolate onto N = 5 of an N = 4 checkpoint: the 2-D fields are the N = 4
    polynomials at the new points (along i and j), and the run carries on."""
    from lobatto.api import Simulation
    from lobatto.operators.interpolation import gll_to_gll, interpolate

    first = Simulation(flow_case(2, steps=6), backend="cpu", output_dir=tmp_path / "a")
    first.advance(3)
    path = first.checkpoint()
    second = Simulation(flow_case(2, order=5, steps=6), backend="cpu", output_dir=tmp_path / "b")
    second.restart(path, interpolate=True)
    for name, values in first.fields().items():
        want = interpolate(REFERENCE, values, gll_to_gll(4, 5))
        assert want.shape == (6, 1, 6, 6)
        assert np.abs(second.fields()[name] - want).max() <= 1e-12 * np.abs(want).max(), name
    second.advance(3)
    assert second.step_count == 6 and np.isfinite(np.asarray(second.u)).all()
