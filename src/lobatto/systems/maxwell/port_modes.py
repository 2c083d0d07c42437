"""Waveguide port modes (docs/electromagnetics.md, "Ports and S-parameters"): the registry of
mode shapes, the analytic modes of a rectangular guide, the face quadrature of a port plane,
and the modal wavenumber and wave impedance.

A mode is ``(k_c, e_t)``: its cutoff wavenumber and its transverse electric field on the
points of ALL a port plane's faces, ``coords`` (3, K, n, n) in a fixed face order (the same on
every rank), with ``e_t[axis] = 0`` and the face quadrature (GLL weights x surface Jacobian)
of |e_t|^2 equal to 1; sign: the integral of its largest component positive. With it
h_t = d x e_t (d the unit vector into the device), and a wave travelling along d is
E_t = a e_t, H_t = a h_t / Z, Z the wave impedance (TE: omega mu / beta, TM: beta / (omega eps)).

``MODES[shape](name, coords, axis, where) -> (k_c, e_t)``; "circle" and "any" come from
port_mode_solver.py; ``register_shape`` adds others.
"""

from __future__ import annotations

import re

import numpy as np

from lobatto.discretization import gll_weights
from lobatto.discretization.gll import derivative_matrix
from lobatto.errors import InputError
from lobatto.systems.maxwell.port_mode_solver import any_shape, circle_shape

#: "TE10", "TM11": a rectangle's modes; "TE1", "TM2": the n-th lowest of a kind (shape "any")
MODE_TEXT = re.compile(r"^(TE|TM)(\d+)$")
#: a plane's faces fill its bounding rectangle when their area is within this share of it
AREA_TOL = 1e-8


def transverse_axes(axis: int) -> tuple[int, int]:
    """(u, v): the two axes across a plane normal to ``axis``, in increasing order."""
    return tuple(a for a in range(3) if a != axis)


def face_weights(coords: np.ndarray) -> np.ndarray:
    """(K, n, n) quadrature weights of faces given by their GLL points (3, K, n, n): GLL weights
    times |dx/dr x dx/ds| of the faces' own interpolant (exact for the mesh's faces, which are
    that interpolant)."""
    n = coords.shape[-1]
    d, w = derivative_matrix(n - 1), gll_weights(n - 1)
    dr = np.einsum("ij,ckjl->ckil", d, coords)  # along the faces' first index
    ds = np.einsum("ij,cklj->ckli", d, coords)
    return np.linalg.norm(np.cross(dr, ds, axis=0), axis=0) * np.outer(w, w)


def normalise(e: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """e scaled to unit face-quadrature norm, signed so the largest component's integral is
    positive (where that integral vanishes, an odd mode, the sign given stays)."""
    norm = float(np.sqrt(np.sum(weights * np.sum(e * e, axis=0))))
    if not norm > 0:
        raise ValueError("a mode with zero field on the port plane")
    e = e / norm
    integrals = np.array([float(np.sum(weights * c)) for c in e])
    sizes = np.array([float(np.sum(weights * np.abs(c))) for c in e])
    c = int(np.argmax(sizes))
    if abs(integrals[c]) <= 1e-12 * sizes[c]:  # an odd mode (zero integral): the formula's sign stays
        return e
    return e if integrals[c] > 0 else -e


def rectangle(coords: np.ndarray, axis: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(lower (2,), size (2,)) of the rectangle across ``axis`` that the plane's faces fill;
    InputError when they do not fill their bounding rectangle (not a rectangle)."""
    u, v = transverse_axes(axis)
    low = np.array([coords[u].min(), coords[v].min()])
    size = np.array([coords[u].max(), coords[v].max()]) - low
    area = float(np.sum(face_weights(coords)))
    if not np.all(size > 0) or abs(area - size[0] * size[1]) > AREA_TOL * size[0] * size[1]:
        raise InputError(f"{where}: shape = \"rectangle\" but the plane's faces (area {area:.6g}) do not fill their "
                         f"bounding rectangle {size[0]:.6g} x {size[1]:.6g}: the guide's cross-section there is not "
                         "a rectangle across the plane's axis")
    return low, size


def rectangular_mode(name: str, coords: np.ndarray, axis: int, where: str = "case") -> tuple[float, np.ndarray]:
    """The analytic mode TE<m><n> / TM<m><n> of a PEC rectangular guide whose cross-section the
    plane's faces fill (m along the first transverse axis, n along the second):
    TE: E_u ~ (n pi/b) cos(m pi u/a) sin(n pi v/b), E_v ~ -(m pi/a) sin(m pi u/a) cos(n pi v/b);
    TM: E_u ~ (m pi/a) cos(m pi u/a) sin(n pi v/b), E_v ~ (n pi/b) sin(m pi u/a) cos(n pi v/b);
    k_c^2 = (m pi/a)^2 + (n pi/b)^2."""
    kind, m, n = parse_rectangle_mode(name, where)
    (u0, v0), (a, b) = rectangle(coords, axis, where)
    u_axis, v_axis = transverse_axes(axis)
    ku, kv = m * np.pi / a, n * np.pi / b
    u, v = coords[u_axis] - u0, coords[v_axis] - v0
    e = np.zeros_like(coords)
    if kind == "TE":
        e[u_axis] = kv * np.cos(ku * u) * np.sin(kv * v)
        e[v_axis] = -ku * np.sin(ku * u) * np.cos(kv * v)
    else:
        e[u_axis] = ku * np.cos(ku * u) * np.sin(kv * v)
        e[v_axis] = kv * np.sin(ku * u) * np.cos(kv * v)
    return float(np.hypot(ku, kv)), normalise(e, face_weights(coords))


def parse_rectangle_mode(name: str, where: str = "case") -> tuple[str, int, int]:
    """("TE" | "TM", m, n) of a rectangle's mode name; InputError for one that does not exist."""
    match = MODE_TEXT.match(name) if isinstance(name, str) else None
    if match is None or len(match.group(2)) != 2:
        raise InputError(f"{where}: mode = {name!r}: a rectangle's mode is TE<m><n> or TM<m><n> with one digit each "
                         "(\"TE10\", \"TM11\")")
    kind, m, n = match.group(1), int(match.group(2)[0]), int(match.group(2)[1])
    if (kind == "TE" and m + n == 0) or (kind == "TM" and (m == 0 or n == 0)):
        raise InputError(f"{where}: mode = \"{name}\" does not exist in a rectangular guide (TE needs m + n > 0, "
                         "TM needs m > 0 and n > 0)")
    return kind, m, n


#: shape -> (name, coords, axis, where) -> (k_c, e_t); the kind of a mode is its name's prefix:
#: the analytic rectangle here, the analytic circle and the 2-D eigen-solve of any cross-section
#: in port_mode_solver.py
MODES = {"rectangle": rectangular_mode, "circle": circle_shape, "any": any_shape}


def register_shape(shape: str, function) -> None:
    """Add a port shape: ``function(name, coords, axis, where) -> (k_c, e_t)`` as MODES's."""
    MODES[shape] = function


def transverse_h(e_t: np.ndarray, axis: int, sign: float) -> np.ndarray:
    """h_t = d x e_t for a mode's e_t (3, ...), d the unit vector sign * e_axis (into the device)."""
    d = np.zeros(3)
    d[axis] = sign
    return np.cross(d.reshape((3,) + (1,) * (e_t.ndim - 1)) + 0 * e_t, e_t, axis=0)


def mode_kind(name: str) -> str:
    return name[:2]


def wavenumber(k_c: float, frequency, epsilon: float, mu: float):
    """beta = sqrt(eps mu omega^2 - k_c^2): real above cutoff, NaN below (evanescent)."""
    omega = 2 * np.pi * np.asarray(frequency, dtype=float)
    square = epsilon * mu * omega * omega - k_c * k_c
    with np.errstate(invalid="ignore"):
        return np.where(square > 0, np.sqrt(np.where(square > 0, square, 1.0)), np.nan)


def impedance(kind: str, k_c: float, frequency, epsilon: float, mu: float):
    """The wave impedance E_t / H_t of a travelling mode: TE omega mu / beta, TM beta / (omega
    eps); NaN below cutoff."""
    omega = 2 * np.pi * np.asarray(frequency, dtype=float)
    beta = wavenumber(k_c, frequency, epsilon, mu)
    return omega * mu / beta if kind == "TE" else beta / (omega * epsilon)


def cutoff_frequency(k_c: float, epsilon: float, mu: float) -> float:
    return float(k_c / (2 * np.pi * np.sqrt(epsilon * mu)))
