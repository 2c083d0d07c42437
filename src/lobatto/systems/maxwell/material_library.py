"""A small library of dispersive materials: published pole fits, scaled to lobatto's units.

``[material.<name>] material = "Au"`` with ``length_unit`` (metres per lobatto length: 1e-6
when a length of 1 is 1 um) gives the table the entry's eps_inf (its ``epsilon``) and poles
(dispersion_fit.py's models, e^(+i omega t)). lobatto is unit-free (docs/electromagnetics.md,
"Units"): a frequency f in cycles per unit time is c0 / a, so a photon energy E (eV) is

    f = E a / (h c0),   h c0 = 1.239841984e-6 eV m  (CODATA 2018, exact: h and c0 are defined)

and a Sellmeier wavelength C (um) is a resonance at f = a / (C 1e-6). The entries:

* Ag, Au, Cu, Al: the Lorentz–Drude (LD) model of A. D. Rakić, A. B. Djurišić, J. M. Elazar,
  M. L. Majewski, "Optical properties of metallic films for vertical-cavity optoelectronic
  devices", Appl. Opt. 37, 5271–5283 (1998), Table 2 (fitted to measured data over 0.1–6 eV,
  wavelengths 0.207–12.4 um), their eq. (3)–(4):

      eps(w) = 1 - f0 wp^2 / (w (w - i G0)) + sum_j f_j wp^2 / (w_j^2 - w^2 + i w G_j)

  (as printed, e^(+i omega t), Im eps <= 0: lobatto's convention). So the Drude pole has
  plasma frequency sqrt(f0) wp and collision frequency G0; Lorentz pole j has resonance w_j,
  damping G_j and delta_eps = f_j wp^2 / w_j^2; eps_inf = 1.
* SiO2 (fused silica): the Sellmeier formula of I. H. Malitson, "Interspecimen comparison of
  the refractive index of fused silica", J. Opt. Soc. Am. 55, 1205–1209 (1965), measured
  0.21–3.71 um at 20 C: n^2 - 1 = sum_i B_i lambda^2 / (lambda^2 - C_i^2), each term a
  lossless Lorentz pole (delta_eps = B_i, resonance c0 / C_i, damping 0); eps_inf = 1.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

from lobatto.config.ranges import Range, check_number
from lobatto.systems.maxwell.dispersion_fit import Pole

HC_EV_M = 1.239841984e-6  # h c0 in eV m
#: metres per lobatto length; the frequencies E a / (h c0) must stay in the poles' ranges
LENGTH_UNIT = Range(1e-15, 1e3, reason="metres per lobatto length (1e-6: a length of 1 is 1 um); the entries' "
                    "frequencies E a / (h c0) are then within the poles' ranges")


@dataclass(frozen=True)
class Entry:
    """One library material: eV parameters of a Rakić LD fit, or Malitson's Sellmeier terms."""

    source: str
    band_um: tuple  # the wavelengths (um) the fit was made over
    plasma_ev: float = 0.0  # Rakić: wp; f0, G0; then (f_j, G_j, w_j) per oscillator
    drude: tuple = ()
    oscillators: tuple = ()
    sellmeier: tuple = ()  # Malitson: (B_i, C_i in um)


RAKIC = "A. D. Rakić et al., Appl. Opt. 37, 5271 (1998), Table 2, Lorentz-Drude model"
MALITSON = "I. H. Malitson, J. Opt. Soc. Am. 55, 1205 (1965), Sellmeier formula of fused silica"
ENTRIES = {
    "Ag": Entry(RAKIC, (0.207, 12.4), 9.01, (0.845, 0.048),
                ((0.065, 3.886, 0.816), (0.124, 0.452, 4.481), (0.011, 0.065, 8.185), (0.840, 0.916, 9.083),
                 (5.646, 2.419, 20.29))),
    "Au": Entry(RAKIC, (0.207, 12.4), 9.03, (0.760, 0.053),
                ((0.024, 0.241, 0.415), (0.010, 0.345, 0.830), (0.071, 0.870, 2.969), (0.601, 2.494, 4.304),
                 (4.384, 2.214, 13.32))),
    "Cu": Entry(RAKIC, (0.207, 12.4), 10.83, (0.575, 0.030),
                ((0.061, 0.378, 0.291), (0.104, 1.056, 2.957), (0.723, 3.213, 5.300), (0.638, 4.305, 11.18))),
    "Al": Entry(RAKIC, (0.207, 12.4), 14.98, (0.523, 0.047),
                ((0.227, 0.333, 0.162), (0.050, 0.312, 1.544), (0.166, 1.351, 1.808), (0.030, 3.382, 3.473))),
    "SiO2": Entry(MALITSON, (0.21, 3.71),
                  sellmeier=((0.6961663, 0.0684043), (0.4079426, 0.1162414), (0.8974794, 9.896161))),
}


def poles_of(name: str, length_unit: float) -> tuple:
    """The entry's poles (case-file values, frequencies in cycles per lobatto time unit)."""
    e = ENTRIES[name]
    scale = length_unit / HC_EV_M  # eV -> cycles per unit time
    if e.sellmeier:
        return tuple(Pole("lorentz", {"resonance_frequency": length_unit / (c * 1e-6), "delta_epsilon": b,
                                      "damping_frequency": 0.0}) for b, c in e.sellmeier)
    f0, g0 = e.drude
    poles = [Pole("drude", {"plasma_frequency": math.sqrt(f0) * e.plasma_ev * scale,
                            "collision_frequency": g0 * scale})]
    for f, g, w in e.oscillators:
        poles.append(Pole("lorentz", {"resonance_frequency": w * scale, "delta_epsilon": f * e.plasma_ev**2 / w**2,
                                      "damping_frequency": g * scale}))
    return tuple(poles)


@dataclass(frozen=True)
class LibraryMaterial:
    """A table's library entry as given (``material``, ``length_unit``)."""

    name: str
    length_unit: float

    epsilon_infinity = 1.0  # every entry's (Rakić's free-space 1, Malitson's 1)

    def to_dict(self) -> dict:
        return {"material": self.name, "length_unit": self.length_unit}

    def describe(self) -> dict:
        e = ENTRIES[self.name]
        return {"material": self.name, "length_unit": self.length_unit, "source": e.source,
                "band_um": list(e.band_um),
                "band": [self.length_unit / (e.band_um[1] * 1e-6), self.length_unit / (e.band_um[0] * 1e-6)]}


def parse_library(ctx, where: str, table) -> tuple:
    """(LibraryMaterial, poles) of ``[where] material = "..."``: one-line errors naming the key."""
    for key in ("model", "poles", "data", "wavelength_unit", "fit", "epsilon"):
        if key in table:
            raise ctx.error(f"[{where}] {key} cannot go with material (the library entry sets "
                            f"{'epsilon (eps_inf)' if key == 'epsilon' else 'the poles'})")
    name = table["material"]
    if name not in ENTRIES:
        same_letters = [k for k in ENTRIES if k.lower() == str(name).lower()]  # "au": Au, not Cu
        close = same_letters or difflib.get_close_matches(str(name), list(ENTRIES), n=1, cutoff=0.5)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ctx.bad(where, "material", "one of " + ", ".join(f'"{k}"' for k in ENTRIES) + hint, name)
    if "length_unit" not in table:
        raise ctx.error(f"[{where}] length_unit is required with material: metres per lobatto length (1e-6 when "
                        "a length of 1 is 1 um), which scales the entry's frequencies")
    unit = check_number(ctx, where, "length_unit", table["length_unit"], LENGTH_UNIT)
    return LibraryMaterial(name, float(unit)), poles_of(name, float(unit))


__all__ = ["ENTRIES", "HC_EV_M", "LibraryMaterial", "parse_library", "poles_of"]
