"""Maxwell cases on the real Nek5000 meshes of tests/data/nek, with their exact solutions.

3dboxper.re2 is the periodic box [-1, 1]^3; NekCEM runs it mapped to [0, 2pi]^3 with the standing
wave of its 3dboxper.usr (omega = sqrt(3)). Maxwell's equations keep their form when space and
time are scaled together, so on the file's box the same wave is that one with x' = pi (x + 1)
and t' = pi t.

cylinder.rea is a perfectly conducting cylinder of radius 7.5, periodic along z: its TM010 mode,
Ez = J0(k r) cos(k t), H = J1(k r) (y, -x)/r sin(k t), k = j01 / 7.5. The case language has no
Bessel functions, so J0 and J1(kr)/r are written as their power series in (k r / 2)^2 (22
terms: below 1e-16 for k r <= j01).
"""

from __future__ import annotations

import math
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "nek"

_X, _Y, _Z, _W = "pi*(x+1)", "pi*(y+1)", "pi*(z+1)", "sqrt(3)*pi"
BOX_EXACT = {
    "Ex": "0*x",
    "Ey": f"cos({_X})*sin({_Y})*sin({_Z})*cos({_W}*t)",
    "Ez": f"cos({_X})*cos({_Y})*cos({_Z})*cos({_W}*t)",
    "Hx": f"2*cos({_X})*sin({_Y})*cos({_Z})*sin({_W}*t)/sqrt(3)",
    "Hy": f"-sin({_X})*cos({_Y})*cos({_Z})*sin({_W}*t)/sqrt(3)",
    "Hz": f"sin({_X})*sin({_Y})*sin({_Z})*sin({_W}*t)/sqrt(3)",
}
BOX_INITIAL = {k: v.replace(f"*cos({_W}*t)", "") for k, v in BOX_EXACT.items() if k in ("Ey", "Ez")}

J01 = 2.404825557695773  # first zero of J0
CYLINDER_RADIUS = 7.5
_K = J01 / CYLINDER_RADIUS


def _horner(coefficients, variable: str) -> str:
    text = repr(coefficients[-1])
    for c in coefficients[-2::-1]:
        text = f"({c!r}+{variable}*{text})"
    return text


_S = f"({_K * _K / 4!r}*(x*x+y*y))"
_J0 = _horner([(-1) ** m / math.factorial(m) ** 2 for m in range(22)], _S)
_J1_OVER_R = _horner([_K / 2 * (-1) ** m / (math.factorial(m) * math.factorial(m + 1)) for m in range(22)], _S)
CYLINDER_EXACT = {
    "Ez": f"{_J0}*cos({_K!r}*t)",
    "Hx": f"y*{_J1_OVER_R}*sin({_K!r}*t)",
    "Hy": f"-x*{_J1_OVER_R}*sin({_K!r}*t)",
}
CYLINDER_INITIAL = {"Ez": _J0}


def box_case(mesh: dict, order: int, t_end: float = 0.2) -> dict:
    """The standing wave on a mesh of [-1, 1]^3 (the Nek file's, or the box generator's)."""
    return {"mesh": mesh, "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": BOX_INITIAL, "exact": BOX_EXACT, "time": {"t_end": t_end},
            "output": {"every": 0, "formats": ["hdf5"]}}


def cylinder_case(order: int, t_end: float = 1.0) -> dict:
    return {"mesh": {"generator": "nek", "file": str(DATA / "cylinder.rea"), "boundaries": {"PEC": "pec"}},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": CYLINDER_INITIAL, "exact": CYLINDER_EXACT, "time": {"t_end": t_end},
            "output": {"every": 0, "formats": ["hdf5"]}}


def toml_text(case: dict) -> str:
    """The case as a TOML file (tables of strings, numbers and lists only)."""
    from lobatto.config.schema import to_toml

    return to_toml(case)
