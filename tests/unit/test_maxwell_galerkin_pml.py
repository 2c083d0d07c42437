"""The [pml] layer with volume_form = "galerkin" (systems/maxwell/galerkin.py check_supported):
the layer's rates are local to a point and in the polynomial space, so adding them to M_W^-1 L u
pointwise is the Galerkin form of the layer. Shown as for the collocated forms
(test_maxwell_pml.py): a pulse reflects from it about as little (measured: 1.5e-7 and 1.9e-7 of
its energy with absorbing and PEC walls behind it, the split form 5.0e-7 and 4.9e-7), no late-time
growth in a lined box, and a case with a dipole in a lined box runs with the fitted step."""

from __future__ import annotations

import numpy as np

from lobatto.api import Simulation, case_from_dict
from lobatto.systems.maxwell import galerkin

from test_maxwell_pml import ORDER, H, beam_run, late_time_energies


def test_pulse_reflects_little_from_the_layer():
    factor = galerkin.step_factor(ORDER)
    reference, mass, _ = beam_run(0.75, 0, "absorbing", volume_form="galerkin", step_factor=factor)
    energy0 = 0.5 * np.sum(mass * np.sum(reference[0] ** 2, axis=0))

    def reflected(samples):
        return max(0.5 * np.sum(mass * np.sum((s - r) ** 2, axis=0)) for s, r in zip(samples, reference)) / energy0

    run = lambda pad, layers, boundary: beam_run(pad, layers, boundary, volume_form="galerkin",  # noqa: E731
                                                 step_factor=factor)[0]
    silver_mueller = reflected(run(0.0, 0, "absorbing"))
    layer_pec, layer_absorbing = reflected(run(2 * H, 2, "pec")), reflected(run(2 * H, 2, "absorbing"))
    assert 1e-3 < silver_mueller < 0.1
    assert layer_pec < 1e-6 and layer_absorbing < 1e-6
    assert layer_pec < 1e-3 * silver_mueller and layer_absorbing < 1e-3 * silver_mueller


def test_no_late_time_growth_over_100_crossings():
    """As test_maxwell_pml's, with the Galerkin form and its step (its factor, then fitted to the
    layer): the energy (in M_W) never exceeds its start and does not grow over the last half of
    100 crossing times."""
    energies = late_time_energies("galerkin", galerkin.step_factor(2))
    late = energies[energies.size // 2:]
    assert np.all(np.isfinite(energies)) and energies.max() <= 1.0
    assert late.max() <= late[0] * (1 + 1e-9) and late[-1] < 0.5


def test_dipole_in_a_lined_box_case(tmp_path):
    """A case file's [pml] with the Galerkin form and a dipole: accepted, the step is the Galerkin
    form's fitted to the layer, and the pulse leaves through the layer: measured, the energy at
    t = 4 is 1.6e-5 of its largest value (the split form: 8.1e-5), 254 steps (split 195)."""
    data = {"mesh": {"elements": [5, 5, 5], "lower": [-1, -1, -1], "upper": [1, 1, 1], "boundary": "pec"},
            "discretization": {"order": 3, "volume_form": "galerkin"}, "physics": {"equations": "maxwell"},
            "pml": {"sides": "all", "elements": 1}, "time": {"t_end": 4.0, "cfl": 0.5}, "output": {"formats": []},
            "source": {"d": {"type": "electric_dipole", "position": [0.05, -0.03, 0.02], "direction": [0, 0, 1],
                             "waveform": "ricker", "frequency": 2.0, "t0": 0.5}}}
    sim = Simulation(case_from_dict(data, name="lined"), backend="cpu", output_dir=str(tmp_path / "g"), comm=None)
    assert sim.system.galerkin is not None and any(t.name == "pml" for t in sim.system.terms)
    split = Simulation(case_from_dict({**data, "discretization": {"order": 3}}, name="lined"), backend="cpu",
                       output_dir=str(tmp_path / "s"), comm=None)
    # the Galerkin factor on the wave's part of the step, then the layer's fit: between the two
    assert split.dt * galerkin.step_factor(3) < sim.dt < split.dt
    split.close()
    energies = []
    while sim.step_count < sim.steps:
        sim.advance(min(20, sim.steps - sim.step_count))
        energies.append(sim.system.energy(sim.u))
    assert np.all(np.isfinite(energies))
    assert energies[-1] < 1e-4 * max(energies), (energies[-1], max(energies))
    sim.close()
