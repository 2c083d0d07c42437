"""Passive scalars of Navier–Stokes (docs/navier-stokes.md, "Passive scalars") against exact
solutions, on the CPU.

A sine wave carried by a uniform flow in a periodic box and diffused, T = exp(-k^2 kappa t)
sin(k (x - U t)): spectral convergence in N, orders 2 and 3 of BDF2 / BDF3. Conduction in a
fluid at rest between a hot and a cold wall (Dirichlet data, the insulated walls by
default) and under a flux wall, each with a decaying mode on top of the steady profile.
Restart equal to the uninterrupted run; pymech reading the temperature slot of a run's
Nek5000 file; the errors of bad scalar keys; examples/channel.toml parsing and running.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict, load_case
from lobatto.errors import InputError

U, KAPPA, K = 1.0, 0.05, math.pi
WAVE = f"exp(-{K}**2*{KAPPA}*t)*sin({K}*(x - {U}*t))"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "channel.toml"


def wave_case(order=6, dt=1e-3, t_end=0.02, integrator="bdf2", **more):
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.1, "scalars": ["T"]},
        "scalar": {"T": {"diffusivity": KAPPA, "tolerance": 1e-13}},
        "mesh": {"elements": [2, 1, 1], "lower": [-1.0, 0.0, 0.0], "upper": [1.0, 1.0, 1.0],
                 "periodic": [True] * 3},
        "discretization": {"order": order},
        "time": {"integrator": integrator, "dt": dt, "t_end": t_end},
        "initial": {"ux": U, "T": WAVE}, "exact": {"ux": U, "T": WAVE},
        "output": {"formats": [], "log_every": 0}, **more,
    }, name="wave")


def scalar_error(case, tmp_path, name="T"):
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.run()
    return sim.errors()[name]["l2"], sim


def test_advected_wave_converges_spectrally_in_n(tmp_path):
    """BDF3, dt = 1e-4 over 20 steps. Measured: L2 4.7e-5, 7.0e-7, 5.9e-9 at N = 4, 6, 8."""
    errors = [scalar_error(wave_case(order=n, dt=1e-4, t_end=2e-3, integrator="bdf3"), tmp_path / str(n))[0]
              for n in (4, 6, 8)]
    assert errors[-1] < 2e-8, errors
    assert all(b < a / 50 for a, b in zip(errors, errors[1:])), errors


@pytest.mark.parametrize("integrator, order", [("bdf2", 2), ("bdf3", 3)])
def test_advected_wave_converges_in_time(tmp_path, integrator, order):
    """N = 10 (space error ~1e-11), t = 0.4, dt = 0.04, 0.02, 0.01. Measured: BDF2 1.3e-2,
    3.2e-3, 8.2e-4 (rates 2.0, 2.0); BDF3 1.3e-3, 1.8e-4, 2.4e-5 (rates 2.8, 2.9: the
    lower-order start still shows)."""
    errors = [scalar_error(wave_case(order=10, dt=dt, t_end=0.4, integrator=integrator), tmp_path / str(dt))[0]
              for dt in (0.04, 0.02, 0.01)]
    rates = [math.log2(a / b) for a, b in zip(errors, errors[1:])]
    assert all(order - 0.3 < r < order + 0.3 for r in rates), (errors, rates)


def conduction_case(boundary, profile, order=6, **more):
    """A fluid at rest in the unit box, periodic in z, scalar walls in y, insulated walls in
    x (no data: the default)."""
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.1, "scalars": ["temperature", "dye"]},
        "scalar": {"temperature": {"diffusivity": KAPPA, "tolerance": 1e-13},
                   "dye": {"diffusivity": 0.2, "source": "1", "tolerance": 1e-13}},
        "mesh": {"elements": [1, 3, 1], "periodic": [False, False, True]},
        "discretization": {"order": order},
        "time": {"integrator": "bdf3", "dt": 2e-3, "t_end": 0.1},
        "boundary": boundary,
        "initial": {"temperature": profile, "dye": "0"}, "exact": {"temperature": profile},
        "output": {"formats": [], "log_every": 0}, **more,
    }, name="conduction")


def test_hot_and_cold_walls_give_the_linear_profile_plus_a_decaying_mode(tmp_path):
    """T(y=0) = 1, T(y=1) = 0: T = 1 - y + exp(-pi^2 kappa t) sin(pi y). Measured: L2 7.3e-10
    at N = 6, BDF3, dt = 2e-3."""
    profile = f"1 - y + exp(-pi**2*{KAPPA}*t)*sin(pi*y)"
    error, sim = scalar_error(conduction_case({"ymin": {"temperature": 1}, "ymax": {"temperature": "0"}}, profile),
                              tmp_path, "temperature")
    assert error < 1e-7, error
    # the flow stays at rest, and the second scalar (a uniform source, insulated everywhere)
    # grows uniformly: dye = t
    fields = sim.fields()
    assert np.abs(fields["ux"]).max() < 1e-12
    assert np.allclose(fields["dye"], sim.t, rtol=0, atol=1e-10)


def test_a_flux_wall(tmp_path):
    """T(y=0) = 0 and kappa dT/dn = g on y = 1: T = g y / kappa + exp(-(pi/2)^2 kappa t)
    sin(pi y / 2). Measured: L2 3.5e-12 at N = 6."""
    g = 0.02
    profile = f"{g}*y/{KAPPA} + exp(-pi**2/4*{KAPPA}*t)*sin(pi*y/2)"
    error, _ = scalar_error(conduction_case({"ymin": {"temperature": 0}, "ymax": {"temperature_flux": g}}, profile),
                            tmp_path, "temperature")
    assert error < 1e-7, error


def test_restart_equals_uninterrupted(tmp_path):
    def case():
        return wave_case(order=5, dt=0.01, t_end=1.0, integrator="bdf3")

    whole = Simulation(case(), backend="cpu", output_dir=tmp_path / "a", comm=None)
    whole.advance(6)
    first = Simulation(case(), backend="cpu", output_dir=tmp_path / "b", comm=None)
    first.advance(3)
    path = first.checkpoint()
    second = Simulation(case(), backend="cpu", output_dir=tmp_path / "c", comm=None)
    second.restart(path)
    second.advance(3)
    for name, values in whole.fields().items():
        assert np.array_equal(values, second.fields()[name]), name
    assert np.abs(whole.fields()["T"]).max() > 0.5


def test_outputs_carry_the_scalars_by_name(tmp_path):
    """pymech reads the first scalar from the Nek5000 temperature slot and the second from
    the first passive-scalar slot; HDF5 names them; the summary has their iterations."""
    pymech = pytest.importorskip("pymech")
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng()
    a, b = (float(v) for v in rng.uniform(0.5, 1.5, 2))
    case = conduction_case({"ymin": {"temperature": a}, "ymax": {"temperature": 0}},
                           f"{a}*(1 - y) + {b}*sin(pi*y)*cos(pi*x)", order=4,
                           output={"formats": ["nek", "hdf5"], "every": 2, "name": "heat", "log_every": 0})
    case = case_from_dict({**case.to_dict(), "time": {"integrator": "bdf2", "dt": 0.01, "t_end": 0.02}},
                          name="heat")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    summary = sim.run()
    fields = sim.fields()
    data = pymech.readnek(str(tmp_path / "heat0.f00001"))
    assert list(data.var) == [3, 3, 1, 1, 1]
    temperature = np.stack([e.temp[0] for e in data.elem])
    dye = np.stack([e.scal[0] for e in data.elem])
    assert np.array_equal(temperature, fields["temperature"])
    assert np.array_equal(dye, fields["dye"])
    with h5py.File(tmp_path / "heat_000002.h5") as f:
        assert np.array_equal(f["fields/temperature"][...], fields["temperature"])
        assert np.array_equal(f["fields/dye"][...], fields["dye"])
    parts = summary["navier_stokes"]["parts"]
    assert parts["scalars"]["seconds"] > 0
    assert summary["navier_stokes"]["scalars"]["temperature"]["iterations_per_step"] > 0
    assert summary["navier_stokes"]["last_step"]["scalar_iterations"] > 0


BASE = {"physics": {"equations": "navier_stokes", "scalars": ["T"]}, "scalar": {"T": {"diffusivity": 0.1}},
        "mesh": {"elements": [2, 2, 2]}, "time": {"dt": 0.1, "t_end": 1.0}}


@pytest.mark.parametrize("change, message", [
    ({"physics": {"equations": "navier_stokes", "scalars": ["p"]}}, r"scalars: 'p' is a name of the flow's fields"),
    ({"physics": {"equations": "navier_stokes", "scalars": ["T", "T"]}}, r"'T' is named twice"),
    ({"physics": {"equations": "navier_stokes", "scalars": ["2T"]}}, r"\[physics\] scalars must be a list of "
                                                                     r"distinct names"),
    ({"physics": {"equations": "navier_stokes", "scalars": "T"}}, r"\[physics\] scalars must be a list"),
    ({"physics": {"equations": "navier_stokes", "scalars": ["T", "T_flux"]}}, r"'T_flux' is the flux key"),
    ({"scalar": {"T": {}}}, r"\[scalar\.T\] diffusivity is required"),
    ({"scalar": {"T": {"diffusivity": -1.0}}}, r"\[scalar\.T\] diffusivity must be a positive number"),
    ({"scalar": {"T": {"diffusivity": 1.0, "source": "sin(q)"}}}, r"\[scalar\.T\] source"),
    ({"scalar": {"T": {"diffusivity": 1.0}, "S": {"diffusivity": 1.0}}}, r"unknown key 'scalar\.S'"),
    ({"boundary": {"ymin": {"t": 1}}}, r"unknown key 'boundary\.ymin\.t' \(did you mean 'boundary\.ymin\.T'\?\)"),
    ({"initial": {"S": "x"}}, r"unknown key 'initial\.S'"),
])
def test_bad_scalar_keys_are_refused(change, message):
    with pytest.raises(InputError, match=message):
        case_from_dict({**BASE, **change}, name="bad")


def test_a_scalar_table_without_scalars_is_refused():
    with pytest.raises(InputError, match=r"unknown key 'scalar'"):
        case_from_dict({**BASE, "physics": {"equations": "navier_stokes"}}, name="bad")


@pytest.mark.parametrize("boundary, message", [
    ({"xmin": {"ux": 1}}, r"the scalar T has no boundary data on the velocity \(inflow\) boundary xmin"),
    ({"xmin": {"T": 1, "T_flux": 0}}, r"\[boundary\.xmin\] sets both T and T_flux"),
])
def test_bad_scalar_boundaries_are_refused(tmp_path, boundary, message):
    case = case_from_dict({**BASE, "boundary": boundary}, name="bad")
    with pytest.raises(InputError, match=message):
        Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)


def test_scalar_data_leaves_walls_and_outflows_as_they_are(tmp_path):
    """A table with only a scalar's data keeps its side a wall (no slip), and may sit on an
    outflow side."""
    case = case_from_dict({**BASE, "mesh": {"elements": [2, 2, 2], "boundaries": {"xmax": "outflow"}},
                           "boundary": {"xmin": {"T": 1}, "xmax": {"T_flux": 0}}}, name="ok")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    kinds = sim.system.boundaries.kind
    assert "velocity" not in set(kinds.ravel())
    assert sim.system.field_names == ("ux", "uy", "uz", "p", "T")


def test_channel_example_parses_and_runs(tmp_path):
    case = load_case(EXAMPLE)
    assert case.physics.scalars == ("temperature",)
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.advance(3)
    fields = sim.fields()
    assert np.isfinite(fields["temperature"]).all()
    # the walls hold their temperatures, and the flow rate its target
    assert sim.system.flow_rate.mean(sim.u[:3]) == pytest.approx(
        case.physics.flow_rate, rel=1e-10)


def test_a_second_scalar_with_boundary_data_is_set_up_and_runs(tmp_path):
    """examples/channel.toml made small, with a second scalar fixed on a wall and an inflow
    face of its own: set-up crashed (the check loop of the first scalar reused the name of the
    face-group array, so the second's face groups were a string)."""
    import tomllib

    data = tomllib.loads(EXAMPLE.read_text())
    data["physics"]["scalars"] = ["temperature", "dye"]
    data["scalar"]["dye"] = {"diffusivity": 0.01}
    data["mesh"].update(elements=[2, 2, 1], periodic=[False, False, True])
    data["mesh"]["boundaries"] = {"xmax": "outflow"}
    data["discretization"]["order"] = 3
    data["time"].update(dt=0.01, t_end=0.02)
    del data["physics"]["flow_rate"], data["physics"]["flow_direction"]
    data["boundary"]["xmin"] = {"ux": "1 - y**2", "temperature": 0.5, "dye": "1 - y**2"}
    data["boundary"]["ymax"]["dye"] = 0.25
    data["output"] = {"formats": [], "log_every": 0}
    sim = Simulation(case_from_dict(data, name="channel2"), backend="cpu", output_dir=tmp_path, comm=None)
    temperature, dye = sim.system.scalars.scalars
    assert dye.name == "dye" and dye.dirichlet == {"xmin", "ymax"}
    assert dye.dirichlet_faces.any() and {f.name for f in dye.values} == {"xmin", "ymax"}
    assert temperature.dirichlet_faces.sum() > dye.dirichlet_faces.sum()  # ymin, ymax, xmin
    sim.advance(2)
    assert sim.step_count == 2
    fields, (x, y, _) = sim.fields(), sim.system.geometry.coords
    assert np.isfinite(fields["dye"]).all() and np.isfinite(fields["temperature"]).all()
    wall = np.isclose(y, 1.0) & (x > 1e-12)  # ymax away from the inflow's edge
    np.testing.assert_allclose(fields["dye"][wall], 0.25, atol=1e-12)
    inflow = np.isclose(x, 0.0) & (np.abs(y) < 1 - 1e-12)
    np.testing.assert_allclose(fields["dye"][inflow], (1 - y**2)[inflow], atol=1e-12)
