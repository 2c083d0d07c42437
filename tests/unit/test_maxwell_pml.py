"""The perfectly matched layer ([pml], systems/maxwell/pml.py): its auxiliary ODEs realise the
UPML tensor Lambda exactly, a pulse leaves through it with far less reflection than through
the Silver-Mueller boundary (both measured against a run on a larger domain), random fields
in a box lined with it do not grow over 100 crossing times, a restart continues bitwise, and
bad [pml] tables are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.backends import get_backend
from lobatto.errors import InputError
from lobatto.integrators import Stepper, get_scheme, stable_time_step
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.pml import (RATE_REACH, PerfectlyMatchedLayer, PmlSpec, layer_profile,
                                         layer_time_step)
from lobatto.systems.maxwell.system import MaxwellSystem

ALL = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")


def spec(sides=ALL, elements=1, thickness=None, m=3.0, reflection=1e-6, sigma_max=None, alpha=None):
    return PmlSpec(tuple(sides), elements, thickness, m, reflection, sigma_max, alpha)


def with_layer(system, pml):
    elements, sigma, described, alpha = layer_profile(system, pml)
    term = PerfectlyMatchedLayer(system, elements, sigma, alpha, described)
    system.add_term(term)
    return term


# (a) -------------------------------------------------------------------------------------
def test_auxiliary_system_realises_lambda():
    """At each layer point the term's rates are a linear map of (E, H, q): x' = M x + (g, 0)
    with g the core operator's (curl H / eps, -curl E / mu). Its transfer function from g_c
    to field c must be 1 / (i omega Lambda_c), Lambda = diag(s_y s_z/s_x, s_x s_z/s_y,
    s_x s_y/s_z), with no coupling between components."""
    system = MaxwellSystem(box_mesh((4, 4, 4), upper=(1.0, 1.2, 0.9)), 3, get_backend("cpu"))
    # unequal sides, so sigma_x, sigma_y, sigma_z differ at the corner points
    layer = spec(sides=("xmin", "ymax", "zmin", "zmax"), reflection=1e-4, alpha=0.7)
    term = with_layer(system, layer)
    u = system.allocate_state()
    columns = []
    for j in range(24):  # probe with unit (E, H, q) at every point at once
        u[...] = 0
        term.aux[...] = 0
        if j < 6:
            u[j] = 1.0
        else:
            term.aux[j - 6] = 1.0
        s, r = np.zeros_like(term.rate), np.zeros_like(term.aux_rate)
        term.rates(u, 0.0, s, r)
        columns.append(np.concatenate([s, r]))
    matrices = np.moveaxis(np.stack(columns, axis=1).reshape(24, 24, -1), 2, 0)  # (points, 24, 24)
    sigma = layer_profile(system, layer)[1].reshape(3, -1)
    # a corner point (all three nonzero and distinct), an edge point, a face-layer point, and one with sigma = 0
    nonzero = (sigma > 0).sum(axis=0)
    picks = [int(np.argmax(np.where(nonzero == 3, np.ptp(sigma, axis=0), -1))), int(np.argmax(nonzero == 2)),
             int(np.argmax(nonzero == 1)), int(np.argmax(nonzero == 0))]
    assert nonzero[picks].tolist() == [3, 2, 1, 0] and np.ptp(sigma[:, picks[0]]) > 1.0
    for p in picks:
        stretch_at = lambda w: 1 + sigma[:, p] / (0.7 + 1j * w)  # noqa: E731
        for w in (0.05, 1.3, 9.0, 80.0):
            sx, sy, sz = stretch_at(w)
            lam = np.array([sy * sz / sx, sx * sz / sy, sx * sy / sz])
            transfer = np.linalg.inv(1j * w * np.eye(24) - matrices[p])[:6, :6]
            expected = np.diag(np.tile(1 / (1j * w * lam), 2))
            # (round-off of the 24 x 24 solve: its condition grows as omega -> 0)
            assert np.max(np.abs(transfer - expected)) < 1e-9 * np.max(np.abs(expected))


# (b) -------------------------------------------------------------------------------------
ORDER, H, INTERIOR = 4, 0.25, (0.0, 1.0)


def beam_run(pad, layers, boundary, t_end=1.3, volume_form="split", step_factor=1.0):
    """A 2D-like pulse (uniform in z, periodic) travelling +x from the centre of the interior
    square [0, 1]^2, on a mesh of spacing H padded by ``pad`` on the four sides; returns the
    fields on the interior's elements (sorted by centroid) every few steps and their mass
    (``step_factor`` scales the step: the Galerkin form's, test_maxwell_galerkin_pml.py)."""
    n = round((1 + 2 * pad) / H)
    mesh = box_mesh((n, n, 1), lower=(-pad, -pad, 0), upper=(1 + pad, 1 + pad, H), periodic=(False, False, True),
                    boundary=boundary)
    system = MaxwellSystem(mesh, ORDER, get_backend("cpu"), volume_form=volume_form)
    if layers:
        with_layer(system, spec(sides=ALL[:4], elements=layers))
    x, y, _ = system.geometry.coords
    u = system.allocate_state()
    u[2] = np.exp(-((x - 0.5) ** 2 + (y - 0.5) ** 2) / 0.08**2)  # Ez
    u[4] = -u[2]  # Hy = -Ez: E x H along +x
    c = system.geometry.coords.mean(axis=(2, 3, 4))
    inside = np.nonzero((c[0] > 0) & (c[0] < 1) & (c[1] > 0) & (c[1] < 1))[0]
    inside = inside[np.lexsort((c[1, inside], c[0, inside]))]
    dt = step_factor * stable_time_step(0.5, H * 0.1727 / 2, 1.0)  # the same dt for every mesh (GLL spacing at N = 4)
    stepper = Stepper(system, get_scheme("lsrk45"))
    samples = []
    for step in range(int(t_end / dt)):
        stepper.step(u, step * dt, dt)
        if step % 4 == 3:
            samples.append(u[:, inside].copy())
    return np.array(samples), system.geometry.mass[inside], u[:, inside]


def test_pulse_reflects_far_less_from_the_layer_than_from_silver_mueller():
    """The reflection is the difference from a run on a domain 0.75 larger on every side (its
    own boundary's echo arrives after t_end), as energy in the interior relative to the pulse's."""
    reference, mass, _ = beam_run(0.75, 0, "absorbing")
    energy0 = 0.5 * np.sum(mass * np.sum(reference[0] ** 2, axis=0))

    def reflected(samples):
        return max(0.5 * np.sum(mass * np.sum((s - r) ** 2, axis=0)) for s, r in zip(samples, reference)) / energy0

    silver_mueller = reflected(beam_run(0.0, 0, "absorbing")[0])
    layer_pec = reflected(beam_run(2 * H, 2, "pec")[0])
    layer_absorbing = reflected(beam_run(2 * H, 2, "absorbing")[0])
    assert 1e-3 < silver_mueller < 0.1  # oblique parts of the beam reflect from the plain boundary
    assert layer_pec < 1e-5 and layer_absorbing < 1e-5
    assert layer_pec < 1e-3 * silver_mueller and layer_absorbing < 1e-3 * silver_mueller


# (c) -------------------------------------------------------------------------------------
def late_time_energies(volume_form="split", step_factor=1.0):
    """Random E, H in the interior of a PEC box (3^3, N = 2) lined with the layer on all six
    sides, stepped for 100 crossing times at the step fitted to the layer (after ``step_factor``):
    the energies after each step over the start's (also test_maxwell_galerkin_pml.py)."""
    system = MaxwellSystem(box_mesh((3, 3, 3)), 2, get_backend("cpu"), volume_form=volume_form)
    term = with_layer(system, spec(reflection=1e-3))
    u = np.random.default_rng(5).standard_normal(system.allocate_state().shape)
    u[:, term.elements] = 0
    plain = step_factor * stable_time_step(0.56, system.geometry.min_spacing, 1.0)
    dt = layer_time_step(plain, term.largest_rate, 0.56, 0.63)
    assert 0.5 < dt * term.largest_rate  # the layer's rates are stiff here
    steps = int(100 / dt)  # the box is 1 wide, c = 1
    stepper = Stepper(system, get_scheme("lsrk45"))
    start, energies = system.energy(u), []
    for step in range(steps):
        stepper.step(u, step * dt, dt)
        energies.append(system.energy(u))
    return np.array(energies) / start


def test_no_late_time_growth_over_100_crossings():
    """The energy never exceeds its start, and over the last half of 100 crossing times it does
    not grow (a late-time instability would; what stays is the static, divergent part of the
    random field, which no boundary removes)."""
    energies = late_time_energies()
    assert np.all(np.isfinite(energies)) and energies.max() <= 1.0
    late = energies[energies.size // 2:]
    assert late.max() <= late[0] * (1 + 1e-9) and late[-1] < 0.5


def test_time_step_is_fitted_to_the_layer(tmp_path):
    """From cfl the driver's step is shortened by the layer's rate; an explicit dt over the
    combined bound is refused."""
    case = case_from_dict(dict(CASE, time={"t_end": 0.05}))
    plain = case_from_dict({k: v for k, v in dict(CASE, time={"t_end": 0.05}).items() if k != "pml"})
    with_pml = Simulation(case, backend="cpu", output_dir=tmp_path / "a", comm=None)
    without = Simulation(plain, backend="cpu", output_dir=tmp_path / "b", comm=None)
    rate, h = with_pml.system.terms[0].largest_rate, with_pml.min_spacing
    fitted = with_pml.system.stable_time_step(case.time.cfl, h)
    assert with_pml.dt <= fitted < 0.9 * without.dt  # (the driver rounds dt down to land on t_end)
    # the same fraction of the stability bound as the user's cfl, the layer's rate included
    assert fitted / h / 0.63 + fitted * rate / RATE_REACH == pytest.approx(case.time.cfl / 0.63, rel=1e-12)
    too_long = case_from_dict(dict(CASE, time={"t_end": 0.05, "dt": 2 * with_pml.dt}))
    with pytest.raises(InputError, match=r"\[time\] dt = .* too long for the \[pml\] layer"):
        Simulation(too_long, backend="cpu", output_dir=tmp_path / "c", comm=None)


# (e) -------------------------------------------------------------------------------------
CASE = {
    "mesh": {"elements": [5, 4, 4], "boundary": "pec", "boundaries": {"xmax": "absorbing"}},
    "discretization": {"order": 3},
    "initial": {"Ez": "exp(-40*((x-0.5)**2 + (y-0.5)**2 + (z-0.5)**2))",
                "Hy": "-exp(-40*((x-0.5)**2 + (y-0.5)**2 + (z-0.5)**2))"},
    "time": {"t_end": 0.4},
    "pml": {"sides": ["xmin", "xmax", "ymax", "zmin"], "elements": 1, "reflection": 1e-4},
    "output": {"formats": ["hdf5"]},
}


def test_restart_continues_bitwise(tmp_path):
    case = case_from_dict(CASE, name="run")
    full = Simulation(case, backend="cpu", output_dir=tmp_path / "full", comm=None)
    full.run()
    first = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None)
    first.advance(5)
    assert np.abs(first.system.terms[0].aux).max() > 1e-3  # the layer holds state at the checkpoint
    path = first.checkpoint()
    first.close()  # one live run per directory: the restart writes there
    rest = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None).restart(path)
    rest.run()
    assert rest.step_count == full.step_count and rest.t == full.t
    assert np.array_equal(rest.backend.to_host(rest.u), full.backend.to_host(full.u))
    assert np.array_equal(rest.system.terms[0].aux, full.system.terms[0].aux)
    pml = full.summary["pml"]
    assert pml["elements"] == 5 * 4 * 4 - 3 * 3 * 3 and pml["auxiliary_fields"] == 18
    assert pml["sides"]["xmin"]["depth"] == pytest.approx(0.2) and pml["sides"]["xmin"]["reflection_normal"] == \
        pytest.approx(1e-4)
    assert case.to_dict()["pml"] == {"sides": ["xmin", "xmax", "ymax", "zmin"], "grading_order": 3.0,
                                     "elements": 1, "reflection": 1e-4}


# (f) -------------------------------------------------------------------------------------
@pytest.mark.parametrize("pml,message", [
    ({"side": "all"}, "unknown key 'pml.side' (did you mean 'pml.sides'?)"),
    ({"sides": ["xmin", "top"]}, "[pml] sides must be a list of distinct box sides"),
    ({"sides": ["xmin", "xmin"]}, "[pml] sides must be a list of distinct box sides"),
    ({"sides": "some"}, "[pml] sides must be"),
    ({"elements": 2, "thickness": 0.3}, "[pml] sets both elements and thickness"),
    ({"elements": 0}, "[pml] elements must be an integer >= 1"),
    ({"thickness": -0.1}, "[pml] thickness must be a positive number"),
    ({"reflection": 1.5}, "[pml] reflection must be a number > 0 and < 1"),
    ({"reflection": 1e-3, "sigma_max": 10.0}, "[pml] sets both reflection and sigma_max"),
    ({"grading_order": -1}, "[pml] grading_order must be a number >= 0"),
    ({"alpha": "big"}, "[pml] alpha must be a number >= 0"),
])
def test_bad_tables_are_one_line_errors(pml, message):
    with pytest.raises(InputError) as error:
        case_from_dict(dict(CASE, pml=pml))
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("change,message", [
    ({"mesh": {"elements": [5, 4, 4], "periodic": [False, True, False]}, "pml": {"sides": ["ymax"]}},
     "[pml] sides: ymax is not a boundary of the mesh"),
    ({"pml": {"sides": ["xmin", "xmax"], "elements": 3}}, "[pml] the layers along x are 1.2 deep in all"),
    ({"pml": {"thickness": 0.05}}, "[pml] thickness = 0.05 at xmin holds no element"),
    ({"mesh": {"elements": [5, 4, 4], "deform": {"x": "0.05*sin(pi*x)*sin(pi*y)"}}, "pml": {"sides": ["xmin"]}},
     "[pml] the layer at xmin is"),
    ({"time": {"t_end": 0.4, "integrator": "rk4"}}, "integrator = 'rk4' cannot step the auxiliary fields of pml"),
])
def test_bad_layers_are_one_line_errors(tmp_path, change, message):
    case = case_from_dict(dict(CASE, **change))
    with pytest.raises(InputError) as error:
        Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    assert message in str(error.value) and "\n" not in str(error.value)
