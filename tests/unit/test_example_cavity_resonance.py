"""examples/cavity_resonance.toml, run as it is: a PEC unit cube filled with a weak conductor
(eps = 2, sigma = 0.02). Every mode decays at sigma / (2 eps), so the extracted frequencies
and Q factors have closed forms: f = sqrt(l^2 + m^2 + n^2) / (2 sqrt(eps)), Q = 2 pi f eps / sigma."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.analysis.resonance_table import resonance_report
from lobatto.cli import main
from lobatto.config.schema import tomllib

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cavity_resonance.toml"


def test_cavity_example_gives_the_analytic_frequencies_and_q(tmp_path):
    physics = tomllib.loads(EXAMPLE.read_text())["physics"]
    eps, sigma = physics["epsilon"], physics["sigma"]
    assert main(["run", str(EXAMPLE), "--output", str(tmp_path), "--quiet"]) == 0
    modes, _ = resonance_report(tmp_path, "p0", "Ez", band=(0.4, 0.95))
    found = {}
    for squares in (2, 3, 5, 6):  # (1,1,0), (1,1,1), (1,2,0), (1,1,2)
        f = np.sqrt(squares) / (2 * np.sqrt(eps))
        nearest = int(np.argmin(np.abs(modes.frequency - f)))
        found[squares] = (modes.frequency[nearest] / f - 1, modes.q[nearest] / (2 * np.pi * f * eps / sigma) - 1)
    for squares, (df, dq) in found.items():
        assert abs(df) < 1e-5, found
        assert abs(dq) < 1e-3, found
    # the loss is what sets Q: a lossless filling would give Q of 1e8 and more (upwind damping only)
    assert max(modes.q[:4]) < 1e3
