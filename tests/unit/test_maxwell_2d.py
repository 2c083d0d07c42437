"""Maxwell on a 2-D (quad) mesh, CPU backend with the compiled kernels (issue 34, slice B2).

A 2-D field is a z-invariant 3-D one: TE (Ex, Ey, Hz) and TM (Hx, Hy, Ez) evolve decoupled and
all six components are stored. Oracle: the same run on the mesh's extruded twin
(mesh.extrude.extrude_quads: one layer of depth 2, periodic z), whose every k plane must carry
the 2-D fields (benchmarks/notes-2d-plan.md, 2.1). Also: the C kernels against the reference on
fresh random data, a TM cavity mode and its convergence, the central flux's energy, and what a
2-D case refuses. The case's [mesh] key is not used: the systems are built on meshes made here.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import case_from_dict
from lobatto.backends.cpu import CpuBackend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.errors import InputError
from lobatto.integrators.stepper import Stepper, get_scheme
from lobatto.jit import c as cbuild
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.systems.maxwell import cpu
from lobatto.systems.maxwell.system import MaxwellSystem

pytestmark = pytest.mark.skipif(not cbuild.available(), reason="no C compiler")
ORDER = 4
SIDES = {"xmin": "pec", "xmax": "pmc", "ymin": "absorbing", "ymax": "pec"}
POLES = [{"model": "drude", "plasma_frequency": 0.6, "collision_frequency": 0.1},
         {"model": "lorentz", "resonance_frequency": 0.5, "delta_epsilon": 1.2, "damping_frequency": 0.2}]


def deform_xy(x, y, z):
    """A smooth z-independent deformation (curved quads)."""
    return 0.06 * np.sin(np.pi * x) * np.sin(np.pi * y), 0.05 * np.sin(np.pi * x) * np.cos(0.5 * np.pi * y), 0 * z


def quads(deform=None, elements=(4, 3), upper=(2.0, 1.5), sides=None):
    return box_mesh(elements, lower=(0.0, 0.0), upper=upper, boundaries=dict(SIDES if sides is None else sides),
                    deform=deform)


def case(extra: dict | None = None):
    """A case for from_case; its [mesh] is a placeholder (the mesh is given). The split form named:
    a curved extruded twin would take the Galerkin form under "auto", which 2-D does not have."""
    data = {"mesh": {"elements": [4, 3, 1]}, "discretization": {"order": ORDER, "flux": "upwind", "volume_form": "split"},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0, "dt": 0.004, "integrator": "lsrk45"},
            "output": {"formats": [], "every": 0}}
    for key, value in (extra or {}).items():
        data[key] = dict(data.get(key, {}), **value)
    return case_from_dict(data, name="maxwell_2d")


def build(mesh, extra=None, backend=None):
    c = case(extra)
    return MaxwellSystem.from_case(c, mesh, compute_geometry(mesh, ORDER), backend or CpuBackend())


def smooth_fields(coords, seed):
    """Random smooth z-independent fields (6, E, nz, n, n): TE and TM at once."""
    rng = np.random.default_rng(seed)
    x, y = coords[0], coords[1]
    out = np.empty((6,) + x.shape)
    for c in range(6):
        a, kx, ky, p = rng.uniform(0.5, 1.5), rng.uniform(0.5, 2.5), rng.uniform(0.5, 2.5), rng.uniform(0, 6)
        out[c] = a * np.sin(kx * x + p) * np.cos(ky * y - p) + rng.uniform(-0.3, 0.3)
    return out


def run(system, u, steps=20, dt=0.004):
    stepper = Stepper(system, get_scheme("lsrk45"))
    t = 0.0
    for _ in range(steps):
        stepper.step(u, t, dt)
        t += dt
    return u


def run_both(mesh2, extra=None, steps=20, extra3=None):
    """The 2-D run and its extruded twin's (its case ``extra3`` where given) from the same
    z-independent data; (u2, u3, systems)."""
    s2, s3 = build(mesh2, extra), build(extrude_quads(mesh2), extra if extra3 is None else extra3)
    u2 = smooth_fields(s2.geometry.coords, 7)
    u3 = np.ascontiguousarray(np.repeat(u2, ORDER + 1, axis=2))  # the same data in every k plane
    return run(s2, u2, steps), run(s3, u3, steps), (s2, s3)


def plane_error(u2, u3) -> float:
    """max over k planes of |u3 - u2| relative to max |u2|."""
    return float(np.abs(u3 - u2).max() / np.abs(u2).max())


# --------------------------------------------------------------------------- C kernels vs reference
@pytest.mark.parametrize("deform", [None, deform_xy], ids=["affine", "curved"])
@pytest.mark.parametrize("split", [True, False], ids=["split", "chain"])
def test_compiled_kernels_equal_the_reference_on_random_2d_data(deform, split):
    mesh = quads(deform)
    system = MaxwellSystem(mesh, ORDER, NumpyBackend(), volume_form="split" if split else "chain")
    g = system.device_geometry
    assert g["metrics"].shape[3:] == (1, ORDER + 1, ORDER + 1) and bool(np.all(g["affine"])) == (deform is None)
    rng = np.random.default_rng(11)
    E, vol, face = mesh.num_elements, g["jacobian"].shape[1:], g["lift"].shape[1:]
    u, sums = rng.standard_normal((6, E) + vol), rng.standard_normal((6, E) + face)
    c = cpu.maxwell_kernels(ORDER, "float64", dim=2)
    backend = NumpyBackend()
    ref_rhs, ref_traces = backend.kernel("maxwell_rhs", order=ORDER, dim=2), backend.kernel("maxwell_traces", order=ORDER, dim=2)
    want, got = ref_rhs(u, sums, g, np.zeros_like(u), 1.3, 0.8, 1.0), c["maxwell_rhs"](u, sums, g, np.zeros_like(u), 1.3, 0.8, 1.0)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()
    t_want = ref_traces(u, g["normals"], np.zeros_like(sums))
    assert np.abs(c["maxwell_traces"](u, g["normals"], np.zeros_like(sums)) - t_want).max() <= 1e-14 * np.abs(t_want).max()
    # the fused stage: residual = a residual + dt L(u); u += b residual, on a block of elements
    res0 = rng.standard_normal(u.shape)
    uu, rr = u.copy(), res0.copy()
    c["maxwell_stage"](uu, rr, sums, g, 1.3, 0.8, 1.0, -0.4, 0.37, 0.01, elements=(2, 9))
    r_want = -0.4 * res0 + 0.01 * want
    assert np.abs(rr[:, 2:9] - r_want[:, 2:9]).max() <= 1e-13 * np.abs(r_want).max()
    assert np.array_equal(rr[:, :2], res0[:, :2]) and np.array_equal(uu[:, 9:], u[:, 9:])
    assert np.abs(uu[:, 2:9] - (u + 0.37 * r_want)[:, 2:9]).max() <= 1e-13 * np.abs(u).max()


@pytest.mark.parametrize("diagonal", [False, True], ids=["isotropic", "diagonal"])
def test_the_compiled_medium_kernels_equal_the_reference_on_random_2d_data(diagonal):
    """maxwell_rhs_materials / maxwell_stage_materials (a medium per point: 1/eps, 1/mu,
    sigma/eps and the face coefficients) on curved quads, random fields and sums."""
    import lobatto.systems.maxwell.materials  # noqa: F401  (registers the reference)

    mesh = quads(deform_xy)
    rng = np.random.default_rng(3)
    shape = (mesh.num_elements, 1, ORDER + 1, ORDER + 1)
    lead = (3,) if diagonal else ()
    fields = {"epsilon": rng.uniform(1, 3, lead + shape), "mu": rng.uniform(1, 2, lead + shape),
              "sigma": rng.uniform(0, 0.5, shape)}
    system = MaxwellSystem(mesh, ORDER, CpuBackend(), material=fields)
    medium, g = system.medium, system.device_geometry
    assert medium.anisotropic == diagonal and medium.stage_kernel is not None
    u, sums = rng.standard_normal((6,) + system.trace_buffer.shape[1:2] + shape[1:]), rng.standard_normal(
        system.trace_buffer.shape)
    reference = NumpyBackend().kernel("maxwell_rhs_materials", order=ORDER, dim=2)
    want = reference(u, sums, g, np.zeros_like(u), medium.arrays, 1.0)
    got = medium.kernel(u, sums, g, np.zeros_like(u), medium.arrays, 1.0)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()
    res0 = rng.standard_normal(u.shape)
    uu, rr = u.copy(), res0.copy()
    medium.stage_kernel(uu, rr, sums, g, medium.arrays, 1.0, -0.4, 0.37, 0.01)
    assert np.abs(rr - (-0.4 * res0 + 0.01 * want)).max() <= 1e-13 * np.abs(res0).max()
    assert np.abs(uu - (u + 0.37 * rr)).max() <= 1e-13 * np.abs(u).max()


def test_the_single_precision_2d_build_agrees_with_the_reference():
    mesh = quads(deform_xy)
    g = MaxwellSystem(mesh, ORDER, NumpyBackend()).device_geometry
    g32 = {k: v.astype(np.float32) if getattr(v, "dtype", None) == np.float64 else v for k, v in g.items()}
    rng = np.random.default_rng(5)
    u, sums = rng.standard_normal((6, 12) + g["jacobian"].shape[1:]), rng.standard_normal((6, 12) + g["lift"].shape[1:])
    want = NumpyBackend().kernel("maxwell_rhs", order=ORDER, dim=2)(u, sums, g, np.zeros_like(u), 1.3, 0.8, 1.0)
    got = cpu.maxwell_kernels(ORDER, "float32", dim=2)["maxwell_rhs"](
        u.astype(np.float32), sums.astype(np.float32), g32, np.zeros(u.shape, np.float32), 1.3, 0.8, 1.0)
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()  # measured 9e-8


def test_the_compiled_kernels_refuse_3d_arrays_on_a_2d_build():
    c = cpu.maxwell_kernels(ORDER, "float64", dim=2)
    n = ORDER + 1
    with pytest.raises(TypeError, match="shape"):
        c["maxwell_traces"](np.zeros((6, 2, n, n, n)), np.zeros((3, 2, 4, 1, n)), np.zeros((6, 2, 4, 1, n)))


# --------------------------------------------------------------------------- 2-D = extruded 3-D
@pytest.mark.parametrize("deform", [None, deform_xy], ids=["box", "deformed"])
def test_a_2d_run_equals_its_extruded_twin_in_every_plane(deform):
    u2, u3, (s2, s3) = run_both(quads(deform))
    assert s2.stage_kernel is not None and s2.mesh.dim == 2  # the compiled fused stage
    assert s2.output_layout == (("Ex", "Ey"), None, ("Ez", "Hx", "Hy", "Hz"))  # Nek5000's 2-D slots
    assert s3.output_layout == (("Ex", "Ey", "Ez"), None, ("Hx", "Hy", "Hz"))
    assert plane_error(u2, u3) < 1e-12
    assert abs(s3.energy(u3) - 2.0 * s2.energy(u2)) < 1e-12 * s3.energy(u3)  # per unit depth; Lz = 2


def test_a_2d_run_with_a_medium_poles_and_a_pml_equals_its_extruded_twin():
    """Diagonal eps, mu in a region and a conducting disc (the per-point medium's compiled
    stage), Drude and Lorentz poles (terms.c), and a PML on x and y sides (the "all" of a 2-D
    mesh: its four sides)."""
    sides = {"xmin": "absorbing", "xmax": "absorbing", "ymin": "absorbing", "ymax": "pec"}
    extra = {"material": {"rod": {"where": "0.3 - (x-1.0)**2 - (y-0.75)**2", "epsilon": 2.0, "sigma": 0.4},
                          "film": {"where": "0.2 - (x-0.6)**2 - (y-0.5)**2", "epsilon": [1.5, 2.5, 3.0],
                                   "mu": [1.2, 1.0, 0.9]},
                          "metal": {"where": "0.15 - (x-1.4)**2 - (y-0.9)**2", "poles": POLES}},
             "pml": {"sides": "all", "elements": 1}}
    extra3 = dict(extra, pml={"sides": ["xmin", "xmax", "ymin", "ymax"], "elements": 1})  # z: periodic
    u2, u3, (s2, s3) = run_both(quads(None, elements=(5, 4), sides=sides), extra, extra3=extra3)
    names = sorted(t.name for t in s2.terms)
    assert names == ["dispersion.metal", "pml"], names
    pml = next(t for t in s2.terms if t.name == "pml")
    assert sorted(pml.described) == ["xmax", "xmin", "ymax", "ymin"]
    assert s2.medium is not None and s2.medium.anisotropic and s2.medium.stage_kernel is not None
    for term in s2.terms:
        assert term.compiled is not None, term.name
    assert plane_error(u2, u3) < 1e-12


def test_sub_cell_averaged_tables_equal_the_extruded_ones():
    """sampling = "average" (subcell.py: s^2 sub-points per point in 2-D, the interface normal
    fitted in x, y) on a disc that cuts elements, and an averaged table with poles."""
    extra = {"material": {
        "disc": {"where": "0.16 - (x-0.9)**2 - (y-0.7)**2", "epsilon": "3 + x", "mu": 1.4, "sampling": "average"},
        "shell": {"where": "0.05 - (x-1.5)**2 - (y-1.0)**2", "epsilon": 2.0, "sampling": "average",
                  "poles": POLES[:1]}}}
    u2, u3, (s2, s3) = run_both(quads(deform_xy), extra)
    eps2, eps3 = s2.medium.epsilon, s3.medium.epsilon  # (3, E, nz, n, n): the diagonal tensors
    cut = (eps2[0] != eps2[2]) & (eps2[0] > 1)
    assert cut.any() and np.abs(eps3 - eps2).max() < 1e-12 * eps2.max()  # averaged alike in every k plane
    assert "dispersion.shell" in [t.name for t in s2.terms] and plane_error(u2, u3) < 1e-12


def test_a_current_per_unit_depth_equals_the_extruded_one():
    extra = {"source": {"line": {"type": "current", "lower": [0.5, 0.4, -5.0], "upper": [1.2, 1.0, 5.0],
                                 "Jz": "exp(-((x-0.9)**2 + (y-0.7)**2) / 0.05) * sin(6*t)",
                                 "Jx": "0.5 * cos(3*y) * sin(4*t)"}}}
    u2, u3, (s2, _) = run_both(quads(None), extra)
    assert s2.sources is not None and plane_error(u2, u3) < 1e-12


@pytest.mark.parametrize("incident", ["analytic", "discrete"])
def test_a_plane_wave_in_xy_equals_the_extruded_one(incident):
    """TF/SF: a Gaussian pulse along 30 degrees in xy, E polarised half in the plane (TE) and
    half along z (TM), a total-field rectangle on element faces (its z range is not read in
    2-D; the twin's box spans its z extent)."""
    a = np.radians(30.0)
    wave = {"type": "plane_wave", "direction": [np.cos(a), np.sin(a), 0.0],
            "polarization": [-np.sin(a) / np.sqrt(2), np.cos(a) / np.sqrt(2), 1 / np.sqrt(2)],
            "lower": [0.5, 0.5, -1.0], "upper": [1.5, 1.0, 1.0], "origin": [0.5, 0.5, 0.0], "waveform": "gaussian",
            "t0": 0.05, "width": 0.05, "incident_field": incident}
    sides = {"xmin": "absorbing", "xmax": "absorbing", "ymin": "absorbing", "ymax": "absorbing"}
    u2, u3, (s2, _) = run_both(quads(None, sides=sides), {"source": {"w": wave}})
    term = next(t for t in s2.terms if t.name == "plane_wave.w")
    if incident == "analytic":  # a 2 x 1 rectangle's 6 edges, seen from both sides
        assert term.compiled is not None and term.surface_faces[0].size == 2 * 2 * (2 + 1)
    assert np.abs(u2).max() > 0.5 and plane_error(u2, u3) < 1e-12


def test_the_discrete_incident_field_leaves_the_scattered_region_empty_in_2d():
    """From zero fields and no scatterer, TF/SF with the discrete incident wave puts the pulse
    in the total-field rectangle (TE and TM alike) and nothing outside it (measured 3.6e-16;
    the analytic wave leaks its discretisation error: 0.2 of 0.7 for this narrow pulse)."""
    a = np.radians(30.0)
    wave = {"type": "plane_wave", "direction": [np.cos(a), np.sin(a), 0.0],
            "polarization": [-np.sin(a) / np.sqrt(2), np.cos(a) / np.sqrt(2), 1 / np.sqrt(2)],
            "lower": [0.5, 0.5, -1.0], "upper": [1.5, 1.0, 1.0], "origin": [0.5, 0.5, 0.0], "waveform": "gaussian",
            "t0": 0.05, "width": 0.05, "incident_field": "discrete"}
    system = build(quads(None, sides={s: "absorbing" for s in ("xmin", "xmax", "ymin", "ymax")}),
                   {"source": {"w": wave}})
    u = run(system, system.allocate_state(), steps=40)
    x, y = system.geometry.coords[0].max(axis=(1, 2, 3)), system.geometry.coords[1].max(axis=(1, 2, 3))
    inside = (x > 0.5) & (x <= 1.5 + 1e-9) & (y > 0.5) & (y <= 1.0 + 1e-9)
    assert inside.sum() == 2
    assert np.abs(u[[0, 1, 5]][:, inside]).max() > 0.3 and np.abs(u[[2, 3, 4]][:, inside]).max() > 0.3
    assert np.abs(u[:, ~inside]).max() < 1e-13


def test_a_plane_wave_out_of_the_plane_is_refused_in_2d():
    wave = dict(WAVE, direction=[0.6, 0.0, 0.8], polarization=[0.8, 0.0, -0.6])
    with pytest.raises(InputError, match=r"direction = .* travels in the xy plane"):
        build(quads(None), {"source": {"w": wave}})


# --------------------------------------------------------------------------- exact solutions
def cavity_error(order, t_end=0.5, flux="upwind"):
    """A TM mode Ez = sin(m pi x/a) sin(n pi y/b) cos(w t) in a PEC box a x b (m, n = 2, 1),
    Hx = -(n pi/b)/w sin(m pi x/a) cos(n pi y/b) sin(w t), Hy = (m pi/a)/w cos(m pi x/a)
    sin(n pi y/b) sin(w t): the largest point error at t = steps dt, relative to 1."""
    a, b, m, n = 2.0, 1.0, 2, 1
    kx, ky = m * np.pi / a, n * np.pi / b
    w = np.hypot(kx, ky)
    mesh = box_mesh((4, 2), lower=(0, 0), upper=(a, b), boundary="pec")
    system = MaxwellSystem(mesh, order, CpuBackend(), flux=flux)
    x, y = system.geometry.coords[0], system.geometry.coords[1]

    def exact(t):
        u = np.zeros((6,) + x.shape)
        u[2] = np.sin(kx * x) * np.sin(ky * y) * np.cos(w * t)
        u[3] = -ky / w * np.sin(kx * x) * np.cos(ky * y) * np.sin(w * t)
        u[4] = kx / w * np.cos(kx * x) * np.sin(ky * y) * np.sin(w * t)
        return u

    steps = 8 * order * order  # dt well inside the stable step: the error is the space error
    u = run(system, exact(0.0), steps, t_end / steps)
    return float(np.abs(u - exact(t_end)).max()), system, u


def test_a_tm_cavity_mode_converges_exponentially_in_n():
    errors = {n: cavity_error(n)[0] for n in (3, 5, 7)}
    # measured: 1.2e-2, 8.0e-5, 2.6e-7 (t = 0.5, dt = t / (8 N^2))
    assert errors[5] < 1e-4 and errors[7] < errors[5] / 100 and errors[5] < errors[3] / 100, errors


def test_the_central_flux_conserves_the_energy_on_curved_quads():
    mesh = box_mesh((3, 3), lower=(0, 0), upper=(1.5, 1.5), boundary="pec", deform=deform_xy)
    system = MaxwellSystem(mesh, 5, CpuBackend(), flux="central")
    u = smooth_fields(system.geometry.coords, 3)
    # semi-discretely dW/dt = sum M (eps E . dE/dt + mu H . dH/dt) = 0 (split form, central
    # flux, PEC ghosts): round-off relative to the sizes of the two sums
    du = system.rhs(u, 0.0, np.zeros_like(u))
    mass = system.geometry.mass
    rate = float(np.sum(mass * u * du))
    assert abs(rate) < 1e-13 * float(np.sum(mass * np.abs(u * du)))
    before = system.energy(u)  # stepped: only lsrk45's own error in dt changes it
    run(system, u, steps=40, dt=0.001)
    assert abs(system.energy(u) - before) < 1e-10 * before


def test_periodic_x_with_the_central_flux_equals_the_extruded_twin():
    mesh = box_mesh((4, 3), lower=(0.0, 0.0), upper=(2.0, 1.5), periodic=(True, False),
                    boundaries={"ymin": "pmc", "ymax": "absorbing"}, deform=None)
    u2, u3, (s2, _) = run_both(mesh, {"discretization": {"flux": "central"}})
    assert s2.alpha == 0 and plane_error(u2, u3) < 1e-12


def test_bloch_wraps_along_x_equal_the_extruded_twin():
    mesh = box_mesh((4, 3), lower=(0.0, 0.0), upper=(2.0, 1.5), periodic=(True, False),
                    boundaries={"ymin": "pmc", "ymax": "absorbing"})
    extra = {"physics": {"bloch_k": [0.7, 0.0, 0.0]}}
    s2, s3 = build(mesh, extra), build(extrude_quads(mesh), extra)
    u2 = np.concatenate([smooth_fields(s2.geometry.coords, 7), smooth_fields(s2.geometry.coords, 8)])  # re, im
    u3 = np.ascontiguousarray(np.repeat(u2, ORDER + 1, axis=2))
    run(s2, u2), run(s3, u3)
    assert s2.bloch is not None and s2.bloch.axes == (0,) and plane_error(u2, u3) < 1e-12  # measured 6.5e-15


# --------------------------------------------------------------------------- refused in 2-D
WAVE = {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0], "lower": [0.5, 0.5, -1.0],
        "upper": [1.5, 1.0, 1.0], "waveform": "gaussian", "t0": 0.3, "width": 0.5}


@pytest.mark.parametrize("extra, match", [
    ({"pml": {"sides": ["xmin", "zmax"], "elements": 1}}, r"\[pml\] sides = .*zmax is not a side of a 2-D mesh"),
    ({"discretization": {"volume_form": "galerkin"}}, r"volume_form = \"galerkin\" is not supported on a 2-D mesh"),
    ({"physics": {"bloch_k": [0.5, 0.0, 0.3]}}, r"bloch_k = .* along the z axis, across which the mesh does not wrap"),
], ids=["pml-z", "galerkin", "bloch"])
def test_what_2d_does_not_have_is_refused_at_build(extra, match):
    mesh = quads(None) if "bloch_k" not in extra.get("physics", {}) else box_mesh(
        (4, 3), lower=(0, 0), upper=(2.0, 1.5), periodic=(True, False))
    with pytest.raises(InputError, match=match):
        build(mesh, extra)


# (dipoles, as line sources, and the far field work in 2-D: tests/unit/test_maxwell_2d_monitors.py)


@pytest.mark.parametrize("port", [{"surface": "xmin", "mode": "TE10"}, {"surface": "zmin", "mode": "TE10"}])
def test_a_port_on_a_2d_box_is_refused_by_its_own_table_through_the_cli(port, tmp_path, capsys):
    """A surface port on a 2-D box is rewritten when the case is read: it is refused there, by
    the port table (not by the [output.dft] it would add, nor by an IndexError for "zmin")."""
    from lobatto.cli import main

    text = ('[mesh]\nelements = [4, 2]\nupper = [2.0, 1.0]\n[discretization]\norder = 3\n'
            '[physics]\nequations = "maxwell"\n[time]\nt_end = 0.1\n[output]\nformats = []\n'
            f'[port.a]\nsurface = "{port["surface"]}"\nmode = "{port["mode"]}"\n'
            '[ports]\nfmin = 0.6\nfmax = 0.7\ncount = 2\n')
    (tmp_path / "p.toml").write_text(text)
    code = main(["run", str(tmp_path / "p.toml"), "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "waveguide ports) are not supported on a 2-D mesh" in err and "Traceback" not in err
