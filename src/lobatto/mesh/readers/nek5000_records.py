"""A Nek5000 mesh as its files store it (:class:`NekMesh`, Nek's numbering), and the checks
both readers make of what they read: the element counts, the corners, the curved-side
records. The ``.re2`` reader is nek5000_re2.py, the ``.rea`` reader nek5000_rea.py; nek5000.py
picks one and converts the result to lobatto's conventions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.box import MAX_EXTENT
from lobatto.mesh.readers.nek5000_curves import CIRCLE_EDGES

#: curve types built: midpoint edge, circle edge, sphere face
CURVE_TYPES = ("m", "C", "s")
#: how many of a curve record's five values each type uses (midpoint; radius; centre and radius)
CURVE_VALUES = {"m": 3, "C": 1, "s": 4}
#: boundary codes of faces that have a neighbour
INTERIOR_CODES = ("E", "")


@dataclass
class NekMesh:
    """A Nek5000 mesh as its file stores it: Nek's corner, edge and face numbering, 0-based.

    corners:  (E, 8, 3) corners, counter-clockwise per layer; (E, 4, 3) with z = 0 in 2-D.
    groups:   (E,) element group numbers.
    curves:   {"elements", "sides", "values", "types"}: one entry per curved edge (face for
              ``s``), side 0..11 (0..5; 0..3 in 2-D), five values, one-letter type.
    bc_codes: (E, 6) stripped boundary codes of the first field, Nek face order ((E, 4) in 2-D:
              sides 1-4 are edges 1-4, the first four faces).
    bc_values:(E, 6, 5) their values ((E, 4, 5) in 2-D).
    """

    corners: np.ndarray
    groups: np.ndarray
    curves: dict
    bc_codes: np.ndarray
    bc_values: np.ndarray
    source: str
    info: dict = field(default_factory=dict)

    @property
    def num_elements(self) -> int:
        return int(self.corners.shape[0])

    @property
    def dim(self) -> int:
        return 2 if self.corners.shape[1] == 4 else 3


def check_counts(path: Path, nelt: int, ndim: int, nelv: int) -> None:
    """InputError unless the header's counts describe a 2-D or 3-D mesh of fluid elements only."""
    if ndim not in (2, 3):
        raise InputError(f"{path}: a {ndim}-D mesh (NDIM = {ndim}); lobatto reads 2-D and 3-D meshes")
    if nelt <= 0:
        raise InputError(f"{path}: element count {nelt} (expected a positive number)")
    if nelv != nelt:
        raise InputError(f"{path}: NELT = {nelt} but NELV = {nelv}: meshes with solid "
                         "(thermal-only) elements are not supported")


def record_ids(values) -> np.ndarray:
    """Element and side numbers of records as integers; a value that is no whole number in range
    (a damaged file) becomes 0, which the range checks after this refuse."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(values) & (np.abs(values) < 2.0**62), values, 0).astype(np.int64)


def check_corners(path, corners: np.ndarray) -> None:
    """Corners (E, 8, 3) that are finite and within MAX_EXTENT, before any geometry is built
    from them (where they would overflow); elements are named 1-based, as Nek counts them."""
    size = np.abs(corners).reshape(len(corners), -1).max(axis=1, initial=0.0)
    bad = ~np.isfinite(size) | (size > MAX_EXTENT)
    if bad.any():
        e = int(np.argmax(bad))
        if not np.isfinite(size[e]):
            raise InputError(f"{path}: element {e + 1} has corner coordinates that are not finite numbers")
        raise InputError(f"{path}: element {e + 1} has a corner coordinate of magnitude {size[e]:.3g}; coordinates "
                         f"must lie within {MAX_EXTENT:.0e} of the origin: rescale the mesh's units")


def check_quadrilaterals(path, corners: np.ndarray) -> None:
    """A 2-D mesh's (E, 4, 3) corners run counter-clockwise (Nek5000's convention; its
    Jacobians are positive only then) around a positive area."""
    x, y = corners[:, :, 0], corners[:, :, 1]
    area = 0.5 * np.sum(x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y, axis=1)
    scale = np.max(np.ptp(corners[:, :, :2], axis=1), axis=1) ** 2
    bad = ~(area > 1e-12 * scale)
    if bad.any():
        e = int(np.argmax(bad))
        raise InputError(f"{path}: element {e + 1} of this 2-D mesh (NDIM = 2) has corners "
                         f"{np.round(corners[e, :, :2], 6).tolist()} that run clockwise or enclose no area "
                         f"(signed area {area[e]:.3g}); Nek5000 numbers a 2-D element's corners counter-clockwise")


def curve_records(path, nelt: int, elements, sides, values, types, ndim: int = 3) -> dict:
    """Check the curve records (1-based element and side) and keep the curved ones, 0-based;
    a later record for the same side replaces an earlier one, as in Nek5000. A 2-D mesh has
    edges 1-4 and no sphere faces."""
    keep = np.array([t not in ("", "0") for t in types], dtype=bool)
    elements, sides, values, types = elements[keep], sides[keep], values[keep], types[keep]
    for i in range(len(types)):
        e, s, t = int(elements[i]), int(sides[i]), types[i]
        if not 1 <= e <= nelt:
            raise InputError(f"{path}: a curved side is for element {e}; expected 1..{nelt}")
        if t not in CURVE_TYPES or (ndim == 2 and t == "s"):
            if t == "s":
                raise InputError(f"{path}: element {e} side {s}: a sphere face ('s') in a 2-D mesh (NDIM = 2); "
                                 "its curved sides are 'C' (circle) and 'm' (midpoint) edges")
            raise InputError(f"{path}: element {e} edge {s}: curve type {t!r} is not supported "
                             f"(supported: m = midpoint, C = circle, s = sphere)")
        limit = 6 if t == "s" else 12 if ndim == 3 else 4
        if not 1 <= s <= limit:
            raise InputError(f"{path}: element {e}: curve type {t!r} on side {s}; expected 1..{limit}")
        if t == "C" and s - 1 not in CIRCLE_EDGES:
            raise InputError(f"{path}: element {e} edge {s}: circle ('C') sides are defined on "
                             "edges 1-8 only (Nek5000 ignores them elsewhere)")
        used = values[i][:CURVE_VALUES[t]]
        if not np.all(np.isfinite(used)) or np.any(np.abs(used) > MAX_EXTENT):
            raise InputError(f"{path}: element {e} side {s}: curve {t!r} has values {list(map(float, used))}; "
                             f"expected finite numbers within {MAX_EXTENT:.0e}")
    key = (elements - 1) * 100 + (sides - 1) + np.where(types == "s", 50, 0)
    _, last = np.unique(key[::-1], return_index=True)
    pick = np.sort(len(key) - 1 - last)
    return {"elements": (elements[pick] - 1).astype(np.int64), "sides": (sides[pick] - 1).astype(np.int64),
            "values": values[pick].astype(np.float64), "types": np.asarray(types[pick], dtype=object)}
