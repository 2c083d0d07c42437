"""Dispersive poles with volume_form = "galerkin" under ``mpiexec -n P lobatto run``: a Drude
table on whole elements (eps_inf constant, no mask: the compiled pointwise coupling) and a
Lorentz + Debye ball sampled per point with its own eps_inf (cut elements: the consistent
coupling -M_{eps W}^-1 W M_W J, dispersive_galerkin.py) on a curved box give the serial fields
and energy on 2 and 3 ranks, upwind and central. The partitions are slabs along x: checked once,
(metal, film) elements per rank (9, 8) / (0, 0) on 2 ranks and (0, 8) / (9, 0) / (0, 0) on 3
(each cut: 0 and 8), so the last rank holds no dispersive element and on 3 ranks each of the
others lacks one table (their terms are empty, the collective set-up still runs there)."""

from __future__ import annotations

import numpy as np
import pytest

from maxwell_cases import max_relative_difference, run_case
from mpirun import SKIP_REASON

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [6, 3, 3]
upper = [1.5, 0.75, 0.75]
boundary = "absorbing"
[mesh.deform]
y = "0.02*sin(4*pi*x)*sin(4*pi*y)*sin(4*pi*z)"
[discretization]
order = 3
volume_form = "galerkin"
flux = "FLUX"
[physics]
equations = "maxwell"
[initial]
Ey = "exp(-20*((x-0.6)**2 + (z-0.4)**2))"
Hz = "exp(-20*(x-0.6)**2)*cos(pi*z)"
[time]
t_end = 0.4
cfl = 0.3
[output]
formats = ["hdf5"]
[material.metal]
where = "(x - 0.5)*(0.75 - x)"
sampling = "element"
epsilon = 1.5
model = "drude"
poles = [{plasma_frequency = 1.5, collision_frequency = 0.2}]
[material.film]
where = "0.0196 - (x-0.33)**2 - (y-0.3)**2 - (z-0.35)**2"
epsilon = 2.2
poles = [{model = "lorentz", resonance_frequency = 1.0, delta_epsilon = 1.2, damping_frequency = 0.1},
         {model = "debye", delta_epsilon = 0.8, relaxation_time = 0.3}]
"""


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_ranks_reproduce_serial_fields_with_poles(flux, tmp_path):
    text = CASE.replace("FLUX", flux)
    serial_summary, serial_ids, serial_fields = run_case(tmp_path / "serial", text, 1)
    assert serial_summary["dispersion.metal"]["elements"] > 0 and serial_summary["dispersion.film"]["elements"] > 0
    for nprocs in (2, 3):
        summary, ids, fields = run_case(tmp_path / str(nprocs), text, nprocs)
        assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
        assert summary["steps"] == serial_summary["steps"]
        for name in ("dispersion.metal", "dispersion.film"):
            for key in ("elements", "cut_elements"):
                assert summary[name][key] == serial_summary[name][key]
        assert summary["dispersion.metal"]["cut_elements"] == 0 < summary["dispersion.film"]["cut_elements"]
        assert max_relative_difference(fields, serial_fields) <= 1e-13
        energy, serial_energy = summary["energy"]["final"], serial_summary["energy"]["final"]
        assert abs(energy - serial_energy) <= 1e-12 * serial_energy
        assert energy <= summary["energy"]["initial"]  # fields and poles: no gain
