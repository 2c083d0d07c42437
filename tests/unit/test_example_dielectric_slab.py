"""examples/dielectric_slab.toml, run as it is and without its slab: the reflection and
transmission magnitudes from its DFT monitors against the Airy formula of a slab of index 2."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from lobatto.cli import main
from lobatto.config.schema import tomllib

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dielectric_slab.toml"


def spectra(path: Path):
    with h5py.File(path, "r") as f:
        freq = f["frequencies"][()]
        return freq, {side: np.abs(f[f"surfaces/{side}/Ey"][()]).reshape(len(freq), -1).mean(axis=1)
                      for side in ("xmin", "xmax")}


def test_slab_example_matches_airy(tmp_path):
    """One command: the example's `normalize = "xmax"` runs the pulse without the slab first
    (out/normalization/), whose spectra give the incident one here, and writes R and T."""
    out = tmp_path / "slab"
    assert main(["run", str(EXAMPLE), "--output", str(out), "--quiet"]) == 0
    freq, slab = spectra(out / "slab_dft.h5")
    _, incident = spectra(out / "normalization" / "slab_dft.h5")
    assert np.all(incident["xmin"] < 1e-6 * incident["xmax"])  # no wave runs to -x without the slab
    table = tomllib.loads(EXAMPLE.read_text())["material"]["slab"]
    n, d = np.sqrt(table["epsilon"]), 0.25
    r12 = (1 - n) / (1 + n)
    phase = np.exp(-2j * (2 * np.pi * freq * n * d))
    r = np.abs(r12 * (1 - phase) / (1 - r12**2 * phase))
    got_r, got_t = slab["xmin"] / incident["xmax"], slab["xmax"] / incident["xmax"]
    assert np.max(np.abs(got_r - r)) < 1.5e-3, (got_r, r)
    assert np.max(np.abs(got_t - np.sqrt(1 - r**2))) < 1.5e-3, (got_t, np.sqrt(1 - r**2))
    assert np.max(r) > 0.5  # strong reflection at some frequency: the check is not of a weak slab
    # the normalised Poynting fluxes: R = |r|^2 from the scattered flux out through xmin, T through
    # xmax, over the incident flux through xmax (measured: R within 1e-4 and T within 3e-4 up to
    # f = 1.2; at f = 1.5 8e-4 and 1.4e-3, the pulse's band edge at N = 5)
    with h5py.File(out / "slab_dft.h5", "r") as f:
        assert f.attrs["normalized_by"] == "xmax"
        reflectance = f["surfaces/xmin/normalized_scattered/poynting_flux"][()]
        transmittance = f["surfaces/xmax/normalized/poynting_flux"][()]
        incident_flux = f["surfaces/xmax/flux_incident/poynting_flux"][()]
    with h5py.File(out / "normalization" / "slab_dft.h5", "r") as f:
        assert np.allclose(incident_flux, f["surfaces/xmax/flux/poynting_flux"][()], rtol=1e-12, atol=0)
    assert np.max(np.abs(reflectance - r**2)) < 2e-3, (reflectance, r**2)
    assert np.max(np.abs(transmittance - (1 - r**2))) < 2e-3, (transmittance, 1 - r**2)
    assert np.max(np.abs(reflectance + transmittance - 1)[:4]) < 5e-4  # lossless
    summary = json.loads((out / "summary.json").read_text())
    assert summary["time_series"]["dft"]["normalized_by"] == "xmax"
