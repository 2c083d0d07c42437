"""The flux spectra of a Bloch run (MaxwellSystem.flux_spectrum) take the transform of the
complex field's e^(i(k.x - wt)) part: a continuous oblique TF/SF plane wave, which has no other,
gives the wave's power through a plane, not ~0."""

from __future__ import annotations

import math

import h5py
import numpy as np

import lobatto
from lobatto.api import case_from_dict


def test_oblique_tfsf_flux_is_the_waves_power(tmp_path):
    theta = math.pi / 6  # 30 degrees from z in the x-z plane, f = 1, s-polarised (E along y)
    data = {
        "mesh": {"lower": [0, 0, 0], "upper": [0.25, 0.25, 3.0], "elements": [1, 1, 12],
                 "periodic": [True, True, False], "boundary": "pec"},
        "discretization": {"order": 3},
        "physics": {"equations": "maxwell", "bloch_k": [2 * math.pi * math.sin(theta), 0.0, 0.0]},
        "pml": {"sides": ["zmin", "zmax"], "elements": 3},
        "source": {"inc": {"type": "plane_wave", "direction": [math.sin(theta), 0.0, math.cos(theta)],
                           "polarization": [0, 1, 0], "waveform": "continuous", "frequency": 1.0,
                           "ramp": 2.0, "lower": [0, 0, 1.0], "upper": [0.25, 0.25, 2.0]}},
        "time": {"t_end": 5.0},
        "output": {"formats": [], "name": "w", "dft": {"frequencies": [1.0], "planes": ["z = 1.5"]}},
    }
    lobatto.run(case_from_dict(data, name="w"), backend="cpu", output_dir=tmp_path)
    with h5py.File(tmp_path / "w_dft.h5", "r") as f:
        g = f["surfaces/z = 1.5"]
        flux = g["flux/poynting_flux"][0]
        area = g.attrs["area"]
        ey = g["Ey"][0] - 1j * g["Ey_im"][0]  # the e^(-iwt) wave's transform at +f
        hx = g["Hx"][0] - 1j * g["Hx_im"][0]
        ey_re = g["Ey"][0]
    # a plane wave: |E| is the same at every point of the plane, so the mean is the integral's
    direct = area * np.mean(-0.5 * np.real(ey * np.conj(hx)))
    assert abs(flux - direct) < 0.03 * abs(direct), (flux, direct)
    # and it is the wave's power: S_z = cos(theta) |E|^2 / 2, |E| = 2 |E_re| (the real part holds
    # half) up to the short ramp's e^(+iwt) share (measured 0.185 against 0.165; before the fix the
    # flux was ~1e-5 of this)
    power = area * 0.5 * math.cos(theta) * np.mean(np.abs(2 * ey_re) ** 2)
    assert 0.8 * power < flux < 1.25 * power, (flux, power)
