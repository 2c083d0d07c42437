"""[output] derived (systems/navier_stokes/derived.py, docs/navier-stokes.md "Derived fields"):
exact vorticity, Q, lambda2 and divergence of fresh random linear velocities on curved
elements and of a quadratic one on a box (the element gradients are exact there, so the
averaged one is too); continuity where the gradient is not exact; the wall shear of the exact
duct profile, edges included, and of a channel between inclined walls; the fields in the HDF5, VTK and Nek5000 files read back by h5py,
VTK and pymech; the per-format lists; bad keys refused (exit 2 from the command line)."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import case_from_dict
from lobatto.errors import InputError
from lobatto.runner.simulation import Simulation
from test_cli_errors import assert_one_line_error, run_cli, write_case

ALL = ("vorticity", "vorticity_magnitude", "q_criterion", "lambda2", "divergence", "wall_shear")
VOLUME = ALL[:-1]


def flow_case(output=None, order=3, elements=(2, 2, 1), periodic=(True, False, True), deform=None,
              mesh_boundaries=None, **more):
    data = {
        "physics": {"equations": "navier_stokes", "viscosity": 0.1},
        "mesh": {"elements": list(elements), "lower": [0.0, -1.0, -1.0], "upper": [2.0, 1.0, 1.0],
                 "periodic": list(periodic)},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": 0.01, "t_end": 0.01},
        "output": {"formats": ["hdf5"], "name": "flow", **(output or {})},
        **more,
    }
    if deform:
        data["mesh"]["deform"] = deform
    if mesh_boundaries:
        data["mesh"]["boundaries"] = mesh_boundaries
    return case_from_dict(data, name="flow")


def simulation(tmp_path, **kw):
    return Simulation(flow_case(**kw), "cpu", tmp_path / "out", comm=None)


def state(sim, velocity):
    """The backend state with velocity (3, E, n, n, n) and zero pressure."""
    u = np.zeros((len(sim.system.field_names),) + velocity.shape[1:])
    u[:3] = velocity
    return sim.backend.asarray(u)


def expected_from_gradient(a):
    """The derived fields of a constant velocity gradient a[c, d] = d u_c / d x_d."""
    s, w = (a + a.T) / 2, (a - a.T) / 2
    omega = np.array([a[2, 1] - a[1, 2], a[0, 2] - a[2, 0], a[1, 0] - a[0, 1]])
    return {"vorticityx": omega[0], "vorticityy": omega[1], "vorticityz": omega[2],
            "vorticity_magnitude": np.linalg.norm(omega), "q_criterion": 0.5 * (np.sum(w * w) - np.sum(s * s)),
            "lambda2": np.linalg.eigvalsh(s @ s + w @ w)[1], "divergence": np.trace(a)}


def test_linear_velocity_on_curved_elements_is_exact(tmp_path, monkeypatch):
    """u = A x + b: G = A at every point of every (curved) element, to round-off (lambda2 in
    batches of 100 points: the last one partial)."""
    from lobatto.systems.navier_stokes import derived

    monkeypatch.setattr(derived, "LAMBDA2_POINTS", 100)
    rng = np.random.default_rng()
    sim = simulation(tmp_path, deform={"y": "0.1*sin(pi*x)*(1 - y**2)", "z": "0.05*sin(pi*y)*cos(pi*x)"},
                     periodic=(False, False, False))
    a, b = rng.uniform(-1, 1, (3, 3)), rng.uniform(-1, 1, 3)
    x = sim.coordinates()
    velocity = np.einsum("cd,d...->c...", a, x) + b[:, None, None, None, None]
    got = sim.system.derived_fields(state(sim, velocity), VOLUME)
    for name, value in expected_from_gradient(a).items():
        assert np.abs(got[name] - value).max() <= 1e-12 * max(1.0, abs(value)), name
    velocity[0, 0, 0, 0, 0] = np.nan  # a run gone unstable: NaN where it is, no error
    got = sim.system.derived_fields(state(sim, velocity), ("lambda2",))["lambda2"]
    assert np.isnan(got[0, 0, 0, 0]) and np.isfinite(got).any()  # NaN spreads only along its lines


def test_quadratic_velocity_and_continuity(tmp_path):
    """A quadratic velocity (exact at N = 3): the vorticity and divergence are the analytic
    ones at every point; a sin flow's fields are continuous (every copy of a point alike)."""
    rng = np.random.default_rng()
    sim = simulation(tmp_path, periodic=(False, False, False))  # x is no periodic function
    c = rng.uniform(0.5, 1.5, 4)
    x, y, z = sim.coordinates()
    velocity = np.stack([-c[0] * y + c[1] * x * z, c[0] * x + c[2] * y * y, c[3] * x * y])
    got = sim.system.derived_fields(state(sim, velocity), ("vorticity", "divergence"))
    exact = {"vorticityx": c[3] * x, "vorticityy": c[1] * x - c[3] * y, "vorticityz": 2 * c[0] + 0 * x,
             "divergence": c[1] * z + 2 * c[2] * y}
    for name, value in exact.items():
        assert np.abs(got[name] - value).max() <= 1e-12 * np.abs(value).max(), name
    wavy = np.stack([np.sin(np.pi * x + c[0]) * np.cos(y), np.cos(np.pi * z) * x, np.sin(y * z + c[1])])
    got = sim.system.derived_fields(state(sim, wavy), VOLUME)
    assembly = sim.system.assembly
    for name, value in got.items():
        mean = sim.backend.to_host(assembly.dssum(sim.backend.asarray(value.copy()))) / \
            sim.backend.to_host(assembly.multiplicity)
        assert np.abs(value - mean).max() <= 1e-13 * np.abs(value).max(), name


def test_wall_shear_of_the_duct_profile(tmp_path):
    """u = U (1 - y^2)(1 - z^2) in a duct with walls at y, z = +-1: tau_x = -2 nu U (1 - z^2) on
    the y walls, -2 nu U (1 - y^2) on the z walls (0 at the corners), 0 inside."""
    speed = np.random.default_rng().uniform(0.5, 2.0)
    sim = simulation(tmp_path, periodic=(True, False, False), elements=(1, 2, 2))
    x, y, z = sim.coordinates()
    velocity = np.stack([speed * (1 - y ** 2) * (1 - z ** 2), 0 * x, 0 * x])
    got = sim.system.derived_fields(state(sim, velocity), ("wall_shear",))
    nu = sim.system.viscosity
    on_y, on_z = np.isclose(np.abs(y), 1.0), np.isclose(np.abs(z), 1.0)
    exact = np.where(on_y, -2 * nu * speed * (1 - z ** 2), 0.0) + np.where(on_z & ~on_y, -2 * nu * speed * (1 - y ** 2),
                                                                         0.0)
    assert np.abs(exact).max() > 0.1 * nu
    assert np.abs(got["wall_shearx"] - exact).max() <= 1e-12 * np.abs(exact).max()
    assert np.abs(got["wall_sheary"]).max() <= 1e-13 and np.abs(got["wall_shearz"]).max() <= 1e-13


def test_wall_shear_on_inclined_walls(tmp_path):
    """Walls y - 0.2 x = +-1 (an affine deformation), outflow at x = 0 and 2: the channel
    profile u = U (1 - eta^2) t along the walls (eta = y - 0.2 x, t their unit tangent) has
    tau = -2 nu U |grad eta| t on both walls, at their edges with the outflow too, 0 elsewhere."""
    speed = np.random.default_rng().uniform(0.5, 2.0)
    sim = simulation(tmp_path, periodic=(False, False, True), deform={"y": "0.2*x"},
                     mesh_boundaries={"xmin": "outflow", "xmax": "outflow"})
    x, y, z = sim.coordinates()
    eta = y - 0.2 * x
    tangent = np.array([1.0, 0.2, 0.0]) / np.sqrt(1.04)
    velocity = speed * (1 - eta ** 2) * tangent[:, None, None, None, None]
    got = sim.system.derived_fields(state(sim, velocity), ("wall_shear",))
    on_wall = np.isclose(np.abs(eta), 1.0)
    assert on_wall.any() and (~on_wall).any()
    magnitude = 2 * sim.system.viscosity * speed * np.sqrt(1.04)
    for c, name in enumerate(("wall_shearx", "wall_sheary", "wall_shearz")):
        exact = np.where(on_wall, -magnitude * tangent[c], 0.0)
        assert np.abs(got[name] - exact).max() <= 1e-12 * magnitude, name


def test_files_hold_the_derived_fields_per_format(tmp_path):
    """One step of a channel flow: h5py, VTK and pymech read what derived_fields gives, each
    format its own list ([output.vtk] derived)."""
    vtk = pytest.importorskip("vtk")
    h5py = pytest.importorskip("h5py")
    from nek_readers import read_with_pymech
    from test_vtk_output import cell_weights, read_vtu
    from vtk.util.numpy_support import vtk_to_numpy

    rng = np.random.default_rng()
    a = rng.uniform(0.5, 1.5, 2)
    sim = simulation(tmp_path, output={"formats": ["hdf5", "nek", "vtk"], "derived": list(ALL),
                                       "vtk": {"derived": ["vorticity", "lambda2"]}},
                     initial={"ux": f"{a[0]:.6f}*(1 - y**2)", "uy": f"0.1*sin(pi*x)*(1 - y**2)*{a[1]:.6f}"})
    summary = sim.run()
    expected = sim.system.derived_fields(sim.u, ALL)
    record = summary["outputs"][-1]
    assert record["derived"]["vtk"] == ["vorticityx", "vorticityy", "vorticityz", "lambda2"]
    assert record["derived"]["hdf5"] == record["derived"]["nek"] == list(expected)
    out = tmp_path / "out"
    (h5,) = [f for f in record["files"] if f.endswith(".h5")]
    with h5py.File(out / h5, "r") as f:
        assert [str(n) for n in f.attrs["field_names"]] == list(sim.system.field_names) + list(expected)
        for name, value in expected.items():
            assert np.array_equal(f[f"fields/{name}"][:], value), name
    (nek,) = [f for f in record["files"] if f.startswith("flow0.f")]
    scalars = read_with_pymech(out / nek)["scalars"]  # (S, E, n, n, n): the derived fields in order
    ids = sim.system.mesh.element_ids
    assert np.array_equal(scalars[:, ids], np.stack(list(expected.values())))
    (vtu,) = [f for f in record["files"] if f.endswith(".vtu")]
    pd = read_vtu(out / vtu).GetPointData()
    names = sorted(pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays()))
    assert names == ["lambda2", "p", "u", "vorticity"] and pd.GetArray("vorticity").GetNumberOfComponents() == 3
    grid = read_vtu(out / vtu)
    weights = cell_weights(grid.GetCell(0), sim.system.order)
    values = np.concatenate([vtk_to_numpy(pd.GetArray("vorticity")), vtk_to_numpy(pd.GetArray("lambda2"))[:, None]],
                            axis=1)
    n = sim.system.order + 1
    columns = ["vorticityx", "vorticityy", "vorticityz", "lambda2"]
    scale = np.array([np.abs(expected[c]).max() for c in columns])
    assert scale.min() > 0
    for e in range(grid.GetNumberOfCells()):
        cell = grid.GetCell(e)
        at_gll = weights @ values[[cell.GetPointId(v) for v in range(n ** 3)]]
        reference = np.stack([expected[c][e].reshape(-1) for c in columns], axis=1)
        assert (np.abs(at_gll - reference).max(axis=0) <= 1e-11 * scale).all(), e


@pytest.mark.parametrize("output, fragments", [
    ({"derived": ["vorticty"]}, ["[output] derived: unknown derived field of navier_stokes \"vorticty\"",
                                 "did you mean 'vorticity'?", "lambda2", "wall_shear"]),
    ({"derived": "vorticity"}, ["[output] derived must be a list of names"]),
    ({"vtk": {"derived": ["q"]}}, ["[output.vtk] is given but \"vtk\" is not in [output] formats"]),
    ({"formats": ["vtk"], "vtk": {"derived": ["q"]}}, ["[output.vtk] derived: unknown derived field", "q_criterion"]),
    ({"formats": ["vtk"], "vtk": {"derive": ["lambda2"]}}, ["unknown key 'output.vtk.derive'"]),
    # a name given twice is refused, not merged, in every list of [output] and its tables
    ({"derived": ["vorticity", "lambda2", "vorticity"]}, ['[output] derived: "vorticity" is given 2 times']),
    ({"formats": ["hdf5"], "hdf5": {"derived": ["lambda2", "lambda2"]}},
     ['[output.hdf5] derived: "lambda2" is given 2 times']),
    ({"formats": ["hdf5", "vtk", "hdf5"]}, ['[output] formats: "hdf5" is given 2 times']),
    ({"probes": {"points": [[0.5, 0.0, 0.5]], "fields": ["ux", "ux"]}}, ['[output.probes] fields: "ux" is given 2']),
    ({"integrals": {"surface": ["volume_flux"], "surfaces": ["ymin", "ymin"]}},
     ['[output.integrals] surfaces: "ymin" is given 2 times']),
    ({"statistics": {"fields": ["ux", "p", "ux"]}}, ["[output.statistics] fields must be a list of distinct names",
                                                    "'ux' is named twice"]),
])
def test_bad_derived_keys_are_refused(output, fragments):
    with pytest.raises(InputError) as err:
        flow_case(output=output)
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, str(err.value))


def test_a_scalar_named_like_a_derived_field_is_refused():
    with pytest.raises(InputError, match="'lambda2' writes the field 'lambda2', which is already a field"):
        flow_case(output={"derived": ["lambda2"]}, physics={"equations": "navier_stokes", "scalars": ["lambda2"]},
                  scalar={"lambda2": {"diffusivity": 0.1}})


def test_wall_shear_without_a_wall_is_refused(tmp_path):
    with pytest.raises(InputError, match="'wall_shear' is computed on wall and velocity faces, and this mesh has none"):
        simulation(tmp_path, output={"derived": ["wall_shear"]}, periodic=(True, True, True))


def test_the_command_line_exits_2_naming_the_valid_names(tmp_path):
    path = write_case(tmp_path, """\
[physics]
equations = "acoustics"

[mesh]
elements = [1, 1, 1]

[time]
t_end = 0.1

[output]
derived = ["vorticity"]
""")
    proc = run_cli("run", str(path), "--output", str(tmp_path / "out"))
    assert_one_line_error(proc, "cavity.toml", "[output] derived: acoustics provides no derived fields")
    case = flow_case(output={"formats": ["hdf5", "vtk"], "derived": ["vorticity"], "vtk": {"derived": []}})
    again = case_from_dict(case.to_dict(), name="flow")  # the effective configuration keeps them
    assert again.output.derived_for("hdf5") == ("vorticity",) and again.output.derived_for("vtk") == ()
