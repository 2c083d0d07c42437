"""Acoustics on curved elements: the split-form gradient and divergence keep the semi-discrete
energy balance (central flux: B(u, Lu) = 0; upwind: <= 0), as the split curl does for Maxwell
(test_maxwell_energy_curved.py). The chain-rule pair gave a relative rate of -5.5e-4 with the
central flux on this deformed box at N = 4."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from test_maxwell_energy_curved import MESHES, energy_rate


@pytest.mark.parametrize("mesh", sorted(MESHES))
@pytest.mark.parametrize("order", [2, 4])
def test_central_conserves_and_upwind_dissipates(tmp_path, mesh, order):
    rng = np.random.default_rng()
    rates = {}
    for flux in ("central", "upwind"):
        data = {"mesh": {**MESHES[mesh], **({"boundary": "wall"} if "boundary" in MESHES[mesh] else {})},
                "discretization": {"order": order, "flux": flux}, "physics": {"equations": "acoustics"},
                "time": {"t_end": 1.0, "cfl": 0.4}, "output": {"formats": []}}
        sim = Simulation(case_from_dict(data, name="acoustics"), backend="cpu", output_dir=str(tmp_path), comm=None)
        sim.close()  # only its system is used (one live run per directory)
        rates[flux] = energy_rate(sim, rng)
    assert abs(rates["central"]) < 1e-12, rates
    assert -1.0 < rates["upwind"] < -1e-3, rates
