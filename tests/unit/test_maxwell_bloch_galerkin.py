"""Bloch-periodic boundaries ([physics] bloch_k, bloch.py) with [discretization] volume_form =
"galerkin" (galerkin.py): the wraps' rotated sums feed the Galerkin kernels of each part.

- Supercell: on a curved mesh periodic in x and y (its wrap faces curved too), the pair's
  operator at k = (2 pi / 3 Lx, 2 pi / 2 Ly, 0) on random data is the plain periodic Galerkin
  operator on the 3 x 2 supercell applied to the field continued by the Bloch phases: an exact
  discrete identity, independent of the rotation's code (sign and phase of every wrap point).
- The pair's energy (galerkin.energy, both parts) with the central flux is conserved to
  round-off at random k on the curved periodic mesh, with upwind it decays (its rate, and step
  by step in time); the C kernel (galerkin_cpu) and the array code give the same pair operator
  and stage; k = 0 gives the plain periodic operator on each part.
- A Bloch mode e^{i(k . x - omega t)} on a flat and on a curved periodic box: the error falls
  with N, and the Galerkin form's is below the split form's on the curved mesh at N = 5 and 7;
  the stage path (lsrk45) and the rhs path (rk4) agree to the time error.
- Terms: a phased current sheet into a [pml] (one of each per part); an oblique continuous TF/SF
  plane wave (tfsf_galerkin.py, one sums correction per part) leaves no scattered field, on the
  stage and the rhs paths, also with its surface on a wrap; both below the split form's errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.backends import get_backend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.jit import c as cbuild
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell import galerkin_cpu
from lobatto.systems.maxwell.system import MaxwellSystem

LX, LY, LZ = 1.0, 0.8, 0.6
CELL = (2, 2, 2)


def wavy(x, y, z):
    """Periodic in x (period LX) and y (LY): the wrap faces are curved, each a translate of its
    partner; the z faces stay planes."""
    sx, sy, sz = np.sin(2 * np.pi * x / LX), np.sin(2 * np.pi * y / LY), np.sin(np.pi * z / LZ)
    dx = 0.05 * sy * sz + 0.03 * sx * np.cos(2 * np.pi * y / LY)
    return dx, 0.04 * sx * sz + 0.02 * sx * sy, 0.03 * sx * sy * sz


def cell_system(backend, flux, k, order=3, cells=(1, 1)):
    """The galerkin pair (k given) or the plain periodic operator (k None) on cells[0] x cells[1]
    copies of the curved cell."""
    mesh = box_mesh((CELL[0] * cells[0], CELL[1] * cells[1], CELL[2]), upper=(LX * cells[0], LY * cells[1], LZ),
                    periodic=(True, True, False), boundary="pec", deform=wavy)
    backend = NumpyBackend() if backend == "numpy" else get_backend(backend)
    return MaxwellSystem(mesh, order, backend, epsilon=2.0, mu=1.5, flux=flux, volume_form="galerkin", bloch_k=k)


def rhs(system, u):
    be = system.backend
    return be.to_host(system.core_rhs(be.asarray(u), 0.0, be.asarray(np.zeros_like(u))))


def energy_rate(system, u, du):
    """u . W du in the pair's Galerkin energy, by polarisation, and the scale |u| |du| in it."""
    energy = system.field_energy
    return 0.5 * (energy(u + du) - energy(u - du)), 2 * math.sqrt(energy(u) * energy(du))


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_the_pair_is_the_plain_operator_on_a_supercell(flux):
    rng = np.random.default_rng()
    cells = (3, 2)
    k = (2 * np.pi / (cells[0] * LX), 2 * np.pi / (cells[1] * LY), 0.0)
    pair = cell_system("cpu", flux, k)
    big = cell_system("cpu", flux, None, cells=cells)
    u = rng.standard_normal(pair.allocate_state().shape)
    du = rhs(pair, u)
    nx, ny, nz = CELL
    ix, iy, iz = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    ix, iy, iz = ix.ravel(), iy.ravel(), iz.ravel()
    cell = ix + nx * (iy + ny * iz)
    copies = []
    for a in range(cells[0]):
        for b in range(cells[1]):
            phase = k[0] * a * LX + k[1] * b * LY
            copies.append(((ix + a * nx) + cells[0] * nx * ((iy + b * ny) + cells[1] * ny * iz), phase))
    # the supercell field: Re(e^{i phase} (u_re + i u_im)) on each copy of the cell
    big_u = np.zeros(big.allocate_state().shape)
    for element, phase in copies:
        big_u[:, element] = math.cos(phase) * u[:6, cell] - math.sin(phase) * u[6:, cell]
    big_du = rhs(big, big_u)
    scale = np.abs(big_du).max()
    for element, phase in copies:
        want = math.cos(phase) * du[:6, cell] - math.sin(phase) * du[6:, cell]
        assert np.abs(big_du[:, element] - want).max() < 1e-11 * scale
    # the imaginary part, too: Im(e^{i phase} u) is the field continued from i u
    big_u[...] = 0
    for element, phase in copies:
        big_u[:, element] = math.sin(phase) * u[:6, cell] + math.cos(phase) * u[6:, cell]
    big_du = rhs(big, big_u)
    for element, phase in copies:
        want = math.sin(phase) * du[:6, cell] + math.cos(phase) * du[6:, cell]
        assert np.abs(big_du[:, element] - want).max() < 1e-11 * scale
    assert pair.bloch.wrap_points == 2 * 16 * (ny * nz + nx * nz)  # x and y wraps, both sides, 16 per face


@pytest.mark.parametrize("backend", ["cpu", "numpy"])
def test_energy_conserved_with_central_and_decaying_with_upwind(backend):
    rng = np.random.default_rng()
    k = (rng.uniform(-4, 4), rng.uniform(-4, 4), 0.0)
    for flux in ("central", "upwind"):
        system = cell_system(backend, flux, k, order=4)
        assert system.galerkin is not None and system.bloch is not None
        u = rng.standard_normal(system.allocate_state().shape)
        rate, scale = energy_rate(system, u, rhs(system, u))
        if flux == "central":  # measured: |rate| / scale 5e-16 and below
            assert abs(rate) < 1e-13 * scale, rate / scale
        else:  # measured: -0.17
            assert rate < -1e-2 * scale, rate / scale
    # the energy is the pair's: the sum of both parts' Galerkin energies
    half = system.field_energy(u[:6]) + system.field_energy(u[6:])
    assert abs(system.field_energy(u) - half) <= 1e-14 * half


def test_upwind_energy_never_grows_in_time(tmp_path):
    """Random data on the curved periodic box (its wraps curved) at a random k, stepped at the
    accepted dt: the pair's Galerkin energy falls every step with upwind; with central it
    loses only the time scheme's dissipation."""
    rng = np.random.default_rng()
    k = [float(rng.uniform(-4, 4)), float(rng.uniform(-4, 4)), 0.0]
    losses = {}
    for flux in ("upwind", "central"):
        case = mode_case(4, "galerkin", True, flux=flux, bloch_k=k)
        sim = Simulation(case, backend="cpu", output_dir=tmp_path / flux, comm=None)
        sim.u[...] = rng.standard_normal(sim.u.shape)
        energies = [sim.system.energy(sim.u)]
        for n in range(10):
            sim.stepper.step(sim.u, n * sim.dt, sim.dt)
            energies.append(sim.system.energy(sim.u))
        steps = np.diff(energies) / energies[0]
        losses[flux] = -steps.sum()
        assert np.all(steps <= 1e-14), (flux, steps)
    # measured: in 10 steps upwind loses 0.34 of random data's energy, central 0.008 (the time
    # scheme damps the grid-scale modes)
    assert losses["upwind"] > 10 * losses["central"] > 0, losses


@pytest.mark.skipif(not cbuild.available(), reason="no C compiler (the array code runs instead)")
def test_the_c_kernel_runs_each_part_and_equals_the_array_code():
    rng = np.random.default_rng()
    k = (rng.uniform(-4, 4), rng.uniform(-4, 4), 0.0)
    compiled, array = cell_system("cpu", "upwind", k), cell_system("numpy", "upwind", k)
    assert compiled.rhs_kernel.__module__ == galerkin_cpu.__name__  # attach() chose the C kernel
    assert array.rhs_kernel.__module__ != galerkin_cpu.__name__
    u = rng.standard_normal(compiled.allocate_state().shape)
    want = rhs(array, u)
    assert np.abs(rhs(compiled, u) - want).max() < 1e-12 * np.abs(want).max()
    # and a stage (Bloch's stage: both parts' sums, then the part's rhs and update)
    residual = rng.standard_normal(u.shape)
    out = {}
    for name, system in (("c", compiled), ("array", array)):
        v, r = u.copy(), residual.copy()
        system.stage(v, r, 0.0, -0.4, 0.3, 0.01)
        out[name] = v
    assert np.abs(out["c"] - out["array"]).max() < 1e-13 * np.abs(out["array"]).max()
    assert np.abs(out["c"] - u).max() > 1e-3  # the stage moved u


def test_zero_k_is_the_periodic_operator_on_each_part():
    rng = np.random.default_rng()
    pair = cell_system("cpu", "upwind", (0.0, 0.0, 0.0))
    plain = cell_system("cpu", "upwind", None)
    u = rng.standard_normal(pair.allocate_state().shape)
    du = rhs(pair, u)
    for part in (slice(0, 6), slice(6, 12)):
        want = rhs(plain, np.ascontiguousarray(u[part]))
        assert np.abs(du[part] - want).max() < 1e-13 * np.abs(want).max()
    assert abs(pair.energy(u) - plain.energy(u[:6]) - plain.energy(u[6:])) < 1e-13 * pair.energy(u)


K = (2.0, 0.5, 0.0)
#: a deformation periodic in x and y with period 1 (the box's), also at the wrap faces
CURVED = {"x": "0.03*sin(2*pi*y)*sin(2*pi*z)", "y": "0.03*sin(2*pi*x)*sin(2*pi*z)",
          "z": "0.02*sin(2*pi*x)*sin(2*pi*y)*sin(2*pi*z)"}


def mode_case(order, form, curved, integrator="lsrk45", flux="upwind", bloch_k=K):
    """E = z e^{i(k . x - omega t)}, H = k x E / omega (eps = mu = 1) on [0, 1]^2 x [0, 0.5],
    periodic in x and y, PEC z (with another ``bloch_k`` the initial field is not a mode)."""
    omega = math.hypot(K[0], K[1])
    phase = f"({K[0]!r}*x + {K[1]!r}*y - {omega!r}*t)"
    fields = {}
    for suffix, wave in (("", "cos"), ("_im", "sin")):
        fields.update({f"Ez{suffix}": f"{wave}{phase}", f"Hx{suffix}": f"{K[1] / omega!r}*{wave}{phase}",
                       f"Hy{suffix}": f"{-K[0] / omega!r}*{wave}{phase}"})
    mesh = {"elements": [2, 2, 1], "periodic": [True, True, False], "upper": [1.0, 1.0, 0.5], "boundary": "pec"}
    if curved:
        mesh["deform"] = CURVED
    return case_from_dict({
        "mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": form},
        "physics": {"equations": "maxwell", "bloch_k": list(bloch_k)},
        "initial": {name: text.replace("*t)", "*0)") for name, text in fields.items()}, "exact": fields,
        "time": {"t_end": 0.5, "integrator": integrator}, "output": {"formats": []}})


def mode_error(tmp_path, order, form, curved, **keys):
    case = mode_case(order, form, curved, **keys)
    sim = Simulation(case, backend="cpu", output_dir=tmp_path / f"{form}{order}{curved}{len(keys)}", comm=None)
    sim.run()
    u = np.asarray(sim.system.backend.to_host(sim.u))
    return float(np.abs(u - sim.system.evaluate_fields(case.exact.fields, sim.t)).max()), sim


def test_a_bloch_mode_on_a_flat_box(tmp_path):
    coarse, sim = mode_error(tmp_path, 3, "galerkin", False)
    fine, _ = mode_error(tmp_path, 5, "galerkin", False)
    split, _ = mode_error(tmp_path, 5, "split", False)
    assert sim.system.galerkin is not None and sim.stepper.path == "stages"
    # measured (t = 0.5, upwind): galerkin 8.6e-4, 2.8e-6 at N = 3, 5 (split 2.6e-3, 6.7e-6)
    assert fine < 1e-5 and fine < 0.01 * coarse and fine <= split, (coarse, fine, split)


def test_a_bloch_mode_on_a_curved_periodic_box(tmp_path):
    errors = {(form, n): mode_error(tmp_path, n, form, True)[0] for form in ("galerkin", "split") for n in (5, 7)}
    # measured (t = 0.5, upwind): galerkin 1.66e-3, 1.37e-4 at N = 5, 7; split 2.49e-3, 2.29e-4
    # (N = 3, 4, 6: galerkin 5.9e-3, 1.6e-2, 6.3e-4; split 1.6e-2, 1.4e-2, 8.1e-4)
    assert errors["galerkin", 7] < 0.2 * errors["galerkin", 5], errors
    assert errors["galerkin", 5] < errors["split", 5] and errors["galerkin", 7] < errors["split", 7], errors
    # the rhs path (a Butcher scheme: MaxwellSystem.rhs, Bloch's rhs on each part) agrees
    rk4, _ = mode_error(tmp_path, 5, "galerkin", True, integrator="rk4")
    assert abs(rk4 - errors["galerkin", 5]) < 0.1 * errors["galerkin", 5], (rk4, errors)



def test_a_phased_current_sheet_radiates_a_bloch_wave_into_the_pml(tmp_path):
    """test_maxwell_bloch.py's sheet with the Galerkin form: the far probe is the near one times
    e^{i k dx} at every time."""
    from lobatto.analysis.resonance_table import probe_series

    from test_maxwell_bloch import sheet_case

    k = math.pi
    sim = Simulation(case_from_dict(sheet_case(k, discretization={"volume_form": "galerkin"}), name="sheet"),
                     backend="cpu", output_dir=tmp_path, comm=None)
    assert [t.name for t in sim.system.terms] == ["sources", "sources_im", "pml", "pml_im"]
    assert sim.system.galerkin is not None
    sim.run()
    near, far = (probe_series(tmp_path, p, "Ey")["values"] + 1j * probe_series(tmp_path, p, "Ey_im")["values"]
                 for p in ("p0", "p1"))
    # measured at N = 4: |near| 0.0466 (split 0.0467); the phase relation holds to 3.0e-6 (split 1.1e-5)
    assert np.abs(near).max() > 0.04
    assert np.abs(far - np.exp(1j * k * 0.15) * near).max() < 2e-5 * np.abs(near).max()


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])
@pytest.mark.parametrize("at_wrap", [False, True])
def test_an_oblique_plane_wave_leaves_no_scattered_field(integrator, at_wrap, tmp_path):
    """test_maxwell_bloch_tfsf.py's oblique continuous wave (no scatterer, started from the
    incident wave in the total-field box) with the Galerkin form: each part's sums corrected by
    its own term (a stage prepares the part's terms; on the rhs path, rk4, bloch.rhs hands the
    kernels the part's terms: with both parts' corrections on each the scattered field was 4.5).
    ``at_wrap``: the box is half the period along x, so its surface lies on the x wrap too."""
    from lobatto.systems.maxwell.tfsf_galerkin import GalerkinTotalFieldScatteredField
    from test_maxwell_bloch_tfsf import LOWER, UPPER, oblique_case

    errors = {}
    for form in ("split", "galerkin"):
        data = oblique_case("p")
        data["discretization"].update(volume_form=form)
        data["time"]["integrator"] = integrator
        if at_wrap:
            data["mesh"]["elements"] = [2, 1, 6]
            data["source"]["inc"]["upper"] = [0.125, 0.25, UPPER]
        sim = Simulation(case_from_dict(data), backend="cpu", output_dir=tmp_path / form, comm=None)
        system = sim.system
        waves = [t for t in system.terms if t.name.startswith("plane_wave")]
        assert [t.name for t in waves] == ["plane_wave.inc", "plane_wave.inc_im"]
        assert all(isinstance(t, GalerkinTotalFieldScatteredField) for t in waves) == (form == "galerkin")
        x = np.asarray(system.geometry.coords)
        centre = x.reshape(3, x.shape[1], -1).mean(axis=2)
        inside = (centre[2] > LOWER) & (centre[2] < UPPER) & (centre[0] < (0.125 if at_wrap else 1.0))
        u = np.zeros(np.asarray(sim.u).shape)
        for part, term in enumerate(waves):
            u[6 * part:6 * part + 6] = np.concatenate(term.wave.fields(np, x, 0.0))
        u[:, ~inside] = 0
        sim.u[...] = u
        sim.run()
        for part, term in enumerate(waves):
            u[6 * part:6 * part + 6] = np.concatenate(term.wave.fields(np, x, sim.t))
        got = np.asarray(sim.u)
        errors[form] = (np.abs(got[:, ~inside]).max(), np.abs(got[:, inside] - u[:, inside]).max())
    # measured at N = 4, t = 0.8 (scattered, total): galerkin 6.1e-5, 2.9e-4 (split 1.2e-4, 6.6e-4);
    # at the wrap 9.9e-4, 1.0e-3 (split 1.5e-3, 1.7e-3); lsrk45 and rk4 alike
    bound = 2e-3 if at_wrap else 1e-4
    assert errors["galerkin"][0] < bound and errors["galerkin"][1] < 5 * bound, errors
    assert errors["galerkin"][0] < errors["split"][0] and errors["galerkin"][1] < errors["split"][1], errors
