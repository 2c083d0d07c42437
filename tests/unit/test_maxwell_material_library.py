"""The materials library (systems/maxwell/material_library.py): each entry's eps(omega) at three
wavelengths against the cited paper's formula, written again here from the paper (Rakić et al.
1998 eq. (3)-(4) with their Table 2; Malitson 1965's Sellmeier formula), a run with
``material = "Au"`` equal to one with the same poles given by hand, and bad input as one line,
exit 2."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lobatto import cli
from lobatto.api import Simulation, case_from_dict
from lobatto.systems.maxwell.dispersion_fit import permittivity
from lobatto.systems.maxwell.material_library import ENTRIES, poles_of

ROOT = Path(__file__).resolve().parents[2]
HC = 1.239841984e-6  # eV m (h c0, exact in SI 2019)

# Rakić et al., Appl. Opt. 37, 5271 (1998), Table 2 (Lorentz-Drude): wp (eV); f_j, G_j, w_j (eV), j = 0.. with w_0 = 0
RAKIC_TABLE = {
    "Ag": (9.01, [0.845, 0.065, 0.124, 0.011, 0.840, 5.646], [0.048, 3.886, 0.452, 0.065, 0.916, 2.419],
           [0.0, 0.816, 4.481, 8.185, 9.083, 20.29]),
    "Au": (9.03, [0.760, 0.024, 0.010, 0.071, 0.601, 4.384], [0.053, 0.241, 0.345, 0.870, 2.494, 2.214],
           [0.0, 0.415, 0.830, 2.969, 4.304, 13.32]),
    "Cu": (10.83, [0.575, 0.061, 0.104, 0.723, 0.638], [0.030, 0.378, 1.056, 3.213, 4.305],
           [0.0, 0.291, 2.957, 5.300, 11.18]),
    "Al": (14.98, [0.523, 0.227, 0.050, 0.166, 0.030], [0.047, 0.333, 0.312, 1.351, 3.382],
           [0.0, 0.162, 1.544, 1.808, 3.473]),
}


def rakic(name, wavelength_m):
    """eq. (3)-(4): eps = 1 - f0 wp^2 / (w (w - i G0)) + sum f_j wp^2 / (w_j^2 - w^2 + i w G_j), w in eV."""
    wp, f, g, w0 = RAKIC_TABLE[name]
    w = HC / wavelength_m
    eps = 1 - f[0] * wp**2 / (w * (w - 1j * g[0]))
    for fj, gj, wj in zip(f[1:], g[1:], w0[1:]):
        eps += fj * wp**2 / (wj**2 - w**2 + 1j * w * gj)
    return eps


def malitson(wavelength_um):
    """n^2 = 1 + 0.6961663 l^2/(l^2 - 0.0684043^2) + 0.4079426 l^2/(l^2 - 0.1162414^2)
    + 0.8974794 l^2/(l^2 - 9.896161^2), l in um (Malitson 1965)."""
    l2 = wavelength_um**2
    return (1 + 0.6961663 * l2 / (l2 - 0.0684043**2) + 0.4079426 * l2 / (l2 - 0.1162414**2)
            + 0.8974794 * l2 / (l2 - 9.896161**2))


@pytest.mark.parametrize("name", sorted(ENTRIES))
@pytest.mark.parametrize("unit", [1e-6, 5e-8])
def test_entries_match_the_published_formula(name, unit):
    """At 0.4, 0.8 and 1.6 um (lobatto f = a / lambda), eps of the library's poles equals the
    paper's formula (Rakić's as printed has Im eps <= 0, lobatto's e^(+i omega t) sign)."""
    wavelengths = np.array([0.4e-6, 0.8e-6, 1.6e-6])
    omega = 2 * math.pi * unit / wavelengths
    ours = permittivity(1.0, poles_of(name, unit), omega)
    exact = malitson(wavelengths * 1e6) + 0j if name == "SiO2" else rakic(name, wavelengths)
    assert np.max(np.abs(ours - exact) / np.abs(exact)) < 1e-12, (ours, exact)
    assert np.all(ours.imag <= 0)  # passive
    if name != "SiO2":
        assert np.all(ours.real[1:] < -3)  # metals in the near infrared


def test_fused_silica_and_gold_against_other_data():
    """A check of the transcriptions' size against other sources: fused silica's n at the sodium
    d line (587.56 nm) is 1.4585 (Malitson's table); Rakić's gold within 25 % of Vial et al.'s
    model of Johnson & Christy's data (tests/data/dispersion/gold_vial2005.csv) at 600, 800 and
    1000 nm (measured: 16 % at 800 nm, 15 % at 1000 nm: two data sets, two fits)."""
    sio2 = permittivity(1.0, poles_of("SiO2", 1e-6), np.array([2 * math.pi / 0.58756]))
    assert abs(math.sqrt(sio2[0].real) - 1.4585) < 2e-4
    rows = np.loadtxt(ROOT / "tests" / "data" / "dispersion" / "gold_vial2005.csv", delimiter=",", comments="#",
                      skiprows=7)
    rows = rows[np.isin(rows[:, 0], [600, 800, 1000])]
    vial = (rows[:, 1] - 1j * rows[:, 2]) ** 2
    gold = permittivity(1.0, poles_of("Au", 1e-9), 2 * math.pi / rows[:, 0])
    assert len(rows) == 3 and np.all(np.abs(gold - vial) / np.abs(vial) < 0.25), (gold, vial)


CASE = {
    "mesh": {"elements": [4, 2, 1], "periodic": [False, True, True], "boundary": "pec"},
    "discretization": {"order": 3}, "physics": {"equations": "maxwell"},
    "initial": {"Ey": "exp(-20*(x-0.3)**2)*sin(pi*y)", "Hz": "exp(-20*(x-0.3)**2)"},
    "time": {"t_end": 0.25},
    "output": {"formats": []},
}


def by_hand(unit):
    """Rakić's gold (Table 2) as poles in lobatto's units, converted here: E (eV) -> E a / (h c0)."""
    wp, f, g, w0 = RAKIC_TABLE["Au"]
    s = unit / HC
    poles = [{"model": "drude", "plasma_frequency": math.sqrt(f[0]) * wp * s, "collision_frequency": g[0] * s}]
    poles += [{"model": "lorentz", "resonance_frequency": wj * s, "delta_epsilon": fj * wp**2 / wj**2,
               "damping_frequency": gj * s} for fj, gj, wj in zip(f[1:], g[1:], w0[1:])]
    return poles


def test_run_with_the_library_equals_the_poles_by_hand(tmp_path):
    unit = 1e-7  # a length of 1 is 100 nm: gold's frequencies are 0.004 to 1.07 cycles per unit time
    where = {"where": "x - 0.5", "sampling": "element"}
    library = case_from_dict(dict(CASE, material={"gold": dict(where, material="Au", length_unit=unit)}), name="lib")
    hand = case_from_dict(dict(CASE, material={"gold": dict(where, epsilon=1.0, poles=by_hand(unit))}), name="hand")
    runs = []
    for case in (library, hand):
        sim = Simulation(case, backend="cpu", output_dir=tmp_path / case.name, comm=None)
        summary = sim.run()
        runs.append((sim, summary))
    (a, sa), (b, sb) = runs
    assert sa["steps"] == sb["steps"] > 5
    ua, ub = a.backend.to_host(a.u), b.backend.to_host(b.u)
    assert np.max(np.abs(ua - ub)) <= 1e-13 * np.max(np.abs(ub)), np.max(np.abs(ua - ub))
    assert np.max(np.abs(a.system.terms[0].aux)) > 1e-6  # the poles hold something
    described = sa["dispersion.gold"]
    assert described["library"]["material"] == "Au" and "Rakić" in described["library"]["source"]
    assert described["library"]["band"] == pytest.approx([unit / 12.4e-6, unit / 0.207e-6])
    assert sa["config"]["material"]["gold"] == {"where": "x - 0.5", "sampling": "element", "material": "Au",
                                                "length_unit": unit}
    again = case_from_dict(__import__("tomllib").loads(library.to_toml()), name="lib")
    assert again.to_dict() == library.to_dict()


GOOD = """\
[mesh]
elements = [2, 1, 1]
[discretization]
order = 2
[physics]
equations = "maxwell"
[time]
t_end = 0.01
"""


@pytest.mark.parametrize("table, fragments", [
    ('material = "Au"', ["[material.all] length_unit is required with material"]),
    ('material = "gold"\nlength_unit = 1e-6', ["[material.all] material must be one of", '"Au"']),
    ('material = "AU"\nlength_unit = 1e-6', ["did you mean 'Au'?"]),
    ('material = "au"\nlength_unit = 1e-6', ["did you mean 'Au'?"]),  # not Cu
    ('material = "Au"\nlength_unit = -1.0', ["[material.all] length_unit must be a number from 1e-15 to 1000"]),
    ('material = "Au"\nlength_unit = 1e-6\nepsilon = 2.0', ["epsilon cannot go with material"]),
    ('material = "Ag"\nlength_unit = 1e-6\nmodel = "drude"', ["model cannot go with material"]),
    ('length_unit = 1e-6\nepsilon = 2.0', ["length_unit goes with material"]),
])
def test_bad_library_entry_is_one_line_exit_2(table, fragments, tmp_path, capsys):
    case = tmp_path / "case.toml"
    case.write_text(GOOD + "[material.all]\n" + table + "\n")
    code = cli.main(["run", str(case), "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("lobatto: error: ") and "case.toml" in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
