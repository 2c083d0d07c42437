"""The case-file side of dispersive media: the poles of one ``[material.<name>]`` table, given
(``model`` and ``poles``), fitted to a data file (``data``, ``wavelength_unit``, ``fit``:
dispersion_fit.py) or taken from the library (``material``, ``length_unit``:
material_library.py), checked with one-line errors naming the key.

materials.py parses the [material] tables with :func:`parse_dispersion`; dispersive.py steps
the poles (its DispersiveTerm) on the elements where a table applies.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from lobatto.config.ranges import LARGE, SMALL, Range, check_number
from lobatto.errors import InputError
from lobatto.systems.maxwell.dispersion_fit import AUX_PER_POLE, POLE_KEYS, POSITIVE_KEYS, Fit, Pole, fit_nk_file
from lobatto.systems.maxwell.material_library import LibraryMaterial, parse_library

MODELS = tuple(POLE_KEYS)
_RATE = "2 pi f (cycles per unit time) is a rate the step must resolve, squared in the pole's equation"
#: the valid values of each pole key, with the reason (frequencies in cycles per unit time)
POLE_RANGES = {
    "plasma_frequency": Range(SMALL, LARGE, reason=_RATE),
    "resonance_frequency": Range(SMALL, LARGE, reason=_RATE),
    "collision_frequency": Range(0.0, LARGE, reason="2 pi f (cycles per unit time) is a damping rate"),
    "damping_frequency": Range(0.0, LARGE, reason="2 pi f (cycles per unit time) is a damping rate"),
    "delta_epsilon": Range(SMALL, LARGE, reason="it multiplies omega0^2 E and divides the pole's energy"),
    "relaxation_time": Range(SMALL, LARGE, reason="1/tau is a rate the step must resolve"),
}
assert set(POLE_RANGES) == {k for keys in POLE_KEYS.values() for k in keys}
assert all(POLE_RANGES[k].low > 0 for k in POSITIVE_KEYS)
#: lobatto lengths per unit of a data file's wavelengths; the largest relative error of a fit
WAVELENGTH_UNIT = Range(SMALL, LARGE, reason="the data's frequencies are 1 / (wavelength * unit)")
FIT_TOLERANCE = Range(0.0, LARGE, low_open=True, reason="a relative error")
FIT_MODELS = ("lorentz", "drude_lorentz")
FIT_KEYS = ("poles", "model", "tolerance")
DEFAULT_FIT_TOLERANCE = 0.02
_FITS: dict = {}  # fits by (file, its size and time, unit, poles): a case parsed twice fits once


@dataclass(frozen=True)
class Dispersion:
    """The poles of one [material] table, given or fitted to a data file."""

    poles: tuple
    data: dict | None = None  # {"data", "wavelength_unit", "fit": {...}} as given, when fitted
    fit: Fit | None = None
    library: LibraryMaterial | None = None  # material = "Au" (material_library.py)

    @property
    def epsilon_infinity(self) -> float | None:
        """The fitted or library eps_inf (the table's epsilon), or None when the poles were given."""
        if self.library is not None:
            return self.library.epsilon_infinity
        return None if self.fit is None else self.fit.epsilon_infinity

    @property
    def aux_count(self) -> int:
        return sum(AUX_PER_POLE[p.model] for p in self.poles)

    def to_dict(self) -> dict:
        if self.library is not None:
            return self.library.to_dict()
        if self.data is not None:
            return dict(self.data)
        return {"poles": [p.to_dict() for p in self.poles]}

    def describe(self) -> dict:
        out = {"poles": [p.to_dict() for p in self.poles]}
        if self.fit is not None:
            fitted = self.fit.describe()
            fitted.pop("poles")
            out["fit"] = {**self.data, **fitted}
        if self.library is not None:
            out["library"] = self.library.describe()
        return out


def parse_dispersion(ctx, where: str, table: Mapping) -> Dispersion | None:
    """The dispersion of ``[where]`` (a [material.<name>] table), or None when it has none."""
    if not any(k in table for k in ("model", "poles", "data", "wavelength_unit", "fit", "material", "length_unit")):
        return None
    if "material" in table:
        library, poles = parse_library(ctx, where, table)
        return Dispersion(poles, library=library)
    if "length_unit" in table:
        raise ctx.error(f"[{where}] length_unit goes with material = \"Au\" (a library entry)")
    if "data" in table:
        for key in ("poles", "model", "epsilon"):
            if key in table:
                hint = {"poles": "give poles or data, not both",
                        "model": "with data, the fitted model is fit.model",
                        "epsilon": "with data, epsilon (eps_inf) is fitted"}[key]
                raise ctx.error(f"[{where}] {key} cannot go with data ({hint})")
        return _fitted(ctx, where, table)
    for key in ("wavelength_unit", "fit"):
        if key in table:
            raise ctx.error(f"[{where}] {key} goes with data = \"file.csv\" (a table to fit)")
    if "poles" not in table:
        raise ctx.error(f"[{where}] model needs poles, for example poles = [{{plasma_frequency = 2.0, "
                        "collision_frequency = 0.1}]")
    default_model = table.get("model")
    if default_model is not None and default_model not in MODELS:
        raise ctx.bad(where, "model", "one of " + ", ".join(f'"{m}"' for m in MODELS), default_model)
    given = table["poles"]
    if not isinstance(given, (list, tuple)) or not given:
        raise ctx.bad(where, "poles", "a non-empty list of tables, for example [{plasma_frequency = 2.0, "
                                      "collision_frequency = 0.1}]", given)
    return Dispersion(tuple(_pole(ctx, where, i, p, default_model) for i, p in enumerate(given)))


def _pole(ctx, where: str, index: int, given: Any, default_model) -> Pole:
    name = f"poles[{index}]"
    if not isinstance(given, Mapping):
        raise ctx.bad(where, name, "a table such as {plasma_frequency = 2.0, collision_frequency = 0.1}", given)
    model = given.get("model", default_model)
    if model is None:
        raise ctx.error(f"[{where}] {name} has no model: set model = " + " or ".join(f'"{m}"' for m in MODELS)
                        + " in the table or the pole")
    if model not in MODELS:
        raise ctx.bad(where, f"{name}.model", "one of " + ", ".join(f'"{m}"' for m in MODELS), model)
    keys = POLE_KEYS[model]
    for key in given:
        if key != "model" and key not in keys:
            close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ctx.error(f"[{where}] unknown key '{name}.{key}' of a {model} pole{hint}; expected "
                            f"{', '.join(keys)}")
    values = {}
    for key in keys:
        if key not in given:
            raise ctx.error(f"[{where}] {name} ({model}) lacks {key}; a {model} pole needs {', '.join(keys)}")
        values[key] = check_number(ctx, where, f"{name}.{key}", given[key], POLE_RANGES[key])
    return Pole(model, values)


def _fitted(ctx, where: str, table: Mapping) -> Dispersion:
    given = table["data"]
    if not isinstance(given, str) or not given:
        raise ctx.bad(where, "data", 'a file name, "wavelength, n, k" rows (CSV)', given)
    unit = table.get("wavelength_unit")
    if unit is None:
        raise ctx.error(f"[{where}] wavelength_unit is required with data: the data's wavelength unit in "
                        "lobatto's unit length (for example 0.001 for nm data and a unit length of 1 um)")
    unit = check_number(ctx, where, "wavelength_unit", unit, WAVELENGTH_UNIT)
    fit = table.get("fit")
    if not isinstance(fit, Mapping):
        raise ctx.error(f"[{where}] fit is required with data, for example fit = {{poles = 2, model = \"lorentz\"}}")
    for key in fit:
        if key not in FIT_KEYS:
            raise ctx.error(f"[{where}] unknown key 'fit.{key}'; expected {', '.join(FIT_KEYS)}")
    model = fit.get("model", "lorentz")
    if model not in FIT_MODELS:
        raise ctx.bad(where, "fit.model", "one of " + ", ".join(f'"{m}"' for m in FIT_MODELS), model)
    drude = model == "drude_lorentz"
    count = fit.get("poles")
    if isinstance(count, bool) or not isinstance(count, int) or count < (0 if drude else 1) or count > 8:
        raise ctx.bad(where, "fit.poles", f"the number of Lorentz poles, an integer from {0 if drude else 1} to 8",
                      count)
    tolerance = check_number(ctx, where, "fit.tolerance", fit.get("tolerance", DEFAULT_FIT_TOLERANCE), FIT_TOLERANCE)
    path = Path(given).expanduser()
    if not path.is_absolute() and not (ctx.source.startswith("<") and ctx.source.endswith(">")):
        path = Path(ctx.source).parent / path
    path = Path(os.path.abspath(path))
    label = f"{ctx.source}: [{where}] data"
    if not path.is_file():
        where_from = "" if Path(given).is_absolute() else " (relative to the case file's directory)"
        raise InputError(f"{label}: no such file {path}{where_from}")
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, float(unit), count, drude)
    if key not in _FITS:
        _FITS[key] = fit_nk_file(path, float(unit), count, drude, where=label)
    result = _FITS[key]
    if result.max_relative_error > tolerance:
        raise InputError(f"{label}: the fit of {count} Lorentz{' and a Drude' if drude else ''} pole(s) to "
                         f"{path.name} has a relative error of up to {result.max_relative_error:.3g} over its band "
                         f"(f = {result.band[0]:.4g} to {result.band[1]:.4g}), above fit.tolerance = {tolerance:g}; "
                         "fit more poles or raise the tolerance")
    if not result.passivity["passive"]:  # passive by construction: this is a guard against a bug
        raise InputError(f"{label}: the fitted poles are not passive (Im eps = "
                         f"{result.passivity['largest_imaginary_part']:.3g} > 0 somewhere)")
    data = {"data": given, "wavelength_unit": float(unit),
            "fit": {"poles": count, "model": model, "tolerance": float(tolerance)}}
    return Dispersion(result.poles, data, result)
