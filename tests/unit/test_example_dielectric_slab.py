"""examples/dielectric_slab.toml, run as it is and without its slab: the reflection and
transmission magnitudes from its DFT monitors against the Airy formula of a slab of index 2."""

from __future__ import annotations

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
    text = EXAMPLE.read_text()
    free = text[:text.index("\n[material.slab]")] + text[text.index("\n[output]"):]
    (tmp_path / "free.toml").write_text(free)
    for case, out in ((EXAMPLE, tmp_path / "slab"), (tmp_path / "free.toml", tmp_path / "free")):
        assert main(["run", str(case), "--output", str(out), "--quiet"]) == 0
    freq, slab = spectra(next((tmp_path / "slab").glob("*_dft.h5")))
    _, incident = spectra(next((tmp_path / "free").glob("*_dft.h5")))
    assert np.all(incident["xmin"] < 1e-6 * incident["xmax"])  # no wave runs to -x without the slab
    table = tomllib.loads(text)["material"]["slab"]
    n, d = np.sqrt(table["epsilon"]), 0.25
    r12 = (1 - n) / (1 + n)
    phase = np.exp(-2j * (2 * np.pi * freq * n * d))
    r = np.abs(r12 * (1 - phase) / (1 - r12**2 * phase))
    got_r, got_t = slab["xmin"] / incident["xmax"], slab["xmax"] / incident["xmax"]
    assert np.max(np.abs(got_r - r)) < 1.5e-3, (got_r, r)
    assert np.max(np.abs(got_t - np.sqrt(1 - r**2))) < 1.5e-3, (got_t, np.sqrt(1 - r**2))
    assert np.max(r) > 0.5  # strong reflection at some frequency: the check is not of a weak slab
