"""Waveguide port modes of any cross-section: a 2-D spectral-element eigen-solve on the port
plane's own faces (``solved_modes``), and the analytic modes of a circular guide
(``circular_mode``), both as (cutoff wavenumber k_c, transverse E profile e_t on the faces' GLL
points) in the layout of the rectangular modes (docs/electromagnetics.md, "Port modes of any cross-section").

The plane's faces are a 2-D spectral-element mesh: coincident points of neighbouring faces are
merged by position, each face's stiffness and GLL-lumped mass come from its own 2-D map (faces
may be curved in the plane: a circle's O-grid), and the wall is the edges that belong to one face
only. TM modes: E_z = phi, phi = 0 on the wall, e_t = grad_t phi / k_c. TE modes: H_z = psi with
natural walls (the constant is skipped), e_t = d x grad_t psi / k_c. Both are normalised to unit
face quadrature (GLL weights x surface Jacobian) of |e_t|^2 on the faces themselves, so the
modal decomposition with the same quadrature sees exactly unit norm.

Conventions (the ports' modal decomposition relies on them): the in-plane axes (u, v) are the
two axes other than ``axis`` in increasing order (z: x, y; x: y, z; y: x, z). In a degenerate
pair (a square's TE10/TE01, a circle's TE11) the second mode has no mean e_t along u, so the
first has all of the pair's (its mean is along u, the second's along v); where the means vanish
(a circle's TM11) the same with the next of the test functions below. The sign: the component c
with the largest integral of e_c^2 (the first of equal ones) gets a positive mean, or, where its
mean vanishes (TE20: odd about the centre), a positive integral against the first test function
that gives a nonzero one: a bump 1 - r^2/r_max^2 about the plane's centroid, the first moments
u, v (plain and times the bump), then uv and u^2 - v^2; else a positive largest value. The rules
use integrals only, so they do not depend on the faces' order or orientation (the rank count).
"""

from __future__ import annotations

import re

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
import scipy.sparse.linalg
import scipy.special
from scipy.spatial import cKDTree

from lobatto.discretization import derivative_matrix, gll_weights
from lobatto.errors import InputError

#: points of different faces closer than this fraction of the smallest GLL spacing are one point
MERGE = 1e-3
#: the faces lie on one plane when their points' spread along the axis is below this x their extent
FLAT = 1e-8
#: eigenvalues closer than this (relative) are one degenerate group
DEGENERATE = 1e-7
#: below this size the generalised eigenproblem is solved densely
DENSE = 2500
#: circular_mode's tolerance on the wall's radius and the disc's area (relative)
ROUND = 1e-2
AXES = "xyz"


class _PlaneMesh:
    """The port plane's faces as a 2-D spectral-element mesh: in-plane coordinates, metrics,
    quadrature, global point numbers and wall points."""

    def __init__(self, coords, axis: int, what: str):
        coords = np.asarray(coords, dtype=np.float64)
        if axis not in (0, 1, 2):
            raise InputError(f"{what}: axis must be 0, 1 or 2, got {axis!r}")
        if coords.ndim != 4 or coords.shape[0] != 3 or coords.shape[2] != coords.shape[3] or coords.shape[2] < 2:
            raise InputError(f"{what}: face coordinates must be (3, K, n, n) with n >= 2, got {coords.shape}")
        if coords.shape[1] < 1:
            raise InputError(f"{what}: too few faces: the port plane has none")
        if not np.all(np.isfinite(coords)):
            raise InputError(f"{what}: the face coordinates are not all finite")
        extent = float(np.ptp(coords.reshape(3, -1), axis=1).max())
        spread = float(np.ptp(coords[axis]))
        if extent <= 0 or spread > FLAT * extent:
            raise InputError(f"{what}: the faces do not lie on one plane {AXES[axis]} = c (their {AXES[axis]} "
                             f"spans {spread:.3g}, the plane's extent is {extent:.3g})")
        self.axis, self.extent = axis, extent
        self.u_axis, self.v_axis = [a for a in range(3) if a != axis]
        self.u, self.v = coords[self.u_axis], coords[self.v_axis]
        self.faces, self.n = coords.shape[1], coords.shape[2]
        order = self.n - 1
        d, w = derivative_matrix(order), gll_weights(order)
        self.d = d
        self.ur, self.us = np.einsum("ai,kib->kab", d, self.u), np.einsum("bj,kaj->kab", d, self.u)
        self.vr, self.vs = np.einsum("ai,kib->kab", d, self.v), np.einsum("bj,kaj->kab", d, self.v)
        self.jac = self.ur * self.vs - self.us * self.vr
        if np.any(np.abs(self.jac) <= 1e-12 * extent ** 2):
            bad = int(np.argmax(np.any(np.abs(self.jac) <= 1e-12 * extent ** 2, axis=(1, 2))))
            raise InputError(f"{what}: face {bad} of the port plane is degenerate (zero area Jacobian)")
        self.mass = w[:, None] * w[None, :] * np.abs(self.jac)  # (K, n, n) face quadrature
        self.area = float(self.mass.sum())
        self._number(what)
        self._weights = self._test_functions()

    def _number(self, what: str) -> None:
        """Global point numbers (coincident points merged) and the wall: edges of one face only
        (the faces must be conforming: a hanging edge would be taken for wall)."""
        spacing = np.hypot(np.diff(self.u, axis=1), np.diff(self.v, axis=1)).min()
        spacing = min(spacing, np.hypot(np.diff(self.u, axis=2), np.diff(self.v, axis=2)).min())
        points = np.stack([self.u.ravel(), self.v.ravel()], axis=1)
        pairs = cKDTree(points).query_pairs(MERGE * spacing, output_type="ndarray")
        total = points.shape[0]
        graph = scipy.sparse.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(total, total))
        self.count, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
        self.ids = labels.reshape(self.faces, self.n, self.n)
        if len({frozenset(face.ravel().tolist()) for face in self.ids}) < self.faces:
            raise InputError(f"{what}: the port plane has the same face twice (both sides of an interior face?)")
        edges: dict = {}
        for k in range(self.faces):
            g = self.ids[k]
            for edge in (g[0, :], g[-1, :], g[:, 0], g[:, -1]):
                key = frozenset(edge.tolist())
                edges[key] = edges.get(key, 0) + 1
        wall = np.zeros(self.count, dtype=bool)
        for key, uses in edges.items():
            if uses == 1:
                wall[list(key)] = True
        self.wall = wall
        self.point_mass = np.bincount(self.ids.ravel(), self.mass.ravel(), minlength=self.count)

    def gradient(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(df/du, df/dv) per face of a nodal field f (K, n, n)."""
        fr, fs = np.einsum("ai,kib->kab", self.d, f), np.einsum("bj,kaj->kab", self.d, f)
        return (self.vs * fr - self.vr * fs) / self.jac, (self.ur * fs - self.us * fr) / self.jac

    def stiffness(self) -> scipy.sparse.csr_matrix:
        """The assembled scalar Laplacian's stiffness sum_faces int grad a . grad b dA."""
        n2, eye = self.n * self.n, np.eye(self.n)
        gr, gs = np.kron(self.d, eye), np.kron(eye, self.d)  # along the face's first / second index
        flat = lambda a: a.reshape(self.faces, n2, 1)  # noqa: E731
        gu = (flat(self.vs) * gr - flat(self.vr) * gs) / flat(self.jac)
        gv = (flat(self.ur) * gs - flat(self.us) * gr) / flat(self.jac)
        wm = self.mass.reshape(self.faces, n2, 1)
        local = np.einsum("kqi,kqj->kij", gu, wm * gu) + np.einsum("kqi,kqj->kij", gv, wm * gv)
        ids = self.ids.reshape(self.faces, n2)
        rows = np.broadcast_to(ids[:, :, None], local.shape).ravel()
        cols = np.broadcast_to(ids[:, None, :], local.shape).ravel()
        return scipy.sparse.coo_matrix((local.ravel(), (rows, cols)), shape=(self.count, self.count)).tocsr()

    def vector(self, gu: np.ndarray, gv: np.ndarray) -> np.ndarray:
        """(3, K, n, n) from in-plane components."""
        out = np.zeros((3, self.faces, self.n, self.n))
        out[self.u_axis], out[self.v_axis] = gu, gv
        return out

    def _test_functions(self) -> list[np.ndarray]:
        du = self.u - np.sum(self.mass * self.u) / self.area
        dv = self.v - np.sum(self.mass * self.v) / self.area
        r2 = du * du + dv * dv
        bump = 1.0 - r2 / r2.max()
        quad = du * du - dv * dv
        return [np.ones_like(du), bump, du, dv, du * bump, dv * bump, du * dv, du * dv * bump, quad, quad * bump]

    def weights(self) -> list[np.ndarray]:
        """The test functions of the sign and pair rules, in order: 1, a bump peaked at the
        centroid, then first and second moments about it (with and without the bump). Integrals
        against them do not depend on the faces' order or orientation."""
        return self._weights

    def moment(self, f: np.ndarray, w: np.ndarray) -> tuple[float, float]:
        """(int f w dA, the Cauchy-Schwarz bound sqrt(int f^2 dA int w^2 dA))."""
        return float(np.sum(self.mass * f * w)), float(np.sqrt(np.sum(self.mass * f * f) * np.sum(self.mass * w * w)))

    def normalised(self, e: np.ndarray) -> np.ndarray:
        """e_t scaled to unit face quadrature of |e_t|^2, with the sign rule (module docstring)."""
        e = e / np.sqrt(np.sum(self.mass * np.sum(e * e, axis=0)))
        power = np.array([np.sum(self.mass * e[c] ** 2) for c in range(3)])
        comp = int(np.flatnonzero(power >= (1 - 1e-6) * power.max())[0])  # ties (TM21 of a 2:1 guide): the first
        for weight in self.weights():
            value, bound = self.moment(e[comp], weight)
            if abs(value) > 1e-6 * bound:
                return e if value > 0 else -e
        return e if e[comp].ravel()[np.argmax(np.abs(e[comp]).ravel())] > 0 else -e

    def mean(self, e: np.ndarray) -> np.ndarray:
        """(u, v) parts of the face-quadrature integral of e_t."""
        return np.array([np.sum(self.mass * e[self.u_axis]), np.sum(self.mass * e[self.v_axis])])

    def field(self, kind: str, phi: np.ndarray) -> np.ndarray:
        """e_t (3, K, n, n), unnormalised, of the potential phi (K, n, n): TM grad phi, TE d x grad psi."""
        gu, gv = self.gradient(phi)
        grad = self.vector(gu, gv)
        if kind == "TM":
            return grad
        d = np.zeros(3)
        d[self.axis] = 1.0
        return np.cross(d, grad, axis=0)


def _check_kind(kind, count, what: str) -> None:
    if kind not in ("TE", "TM"):
        raise InputError(f'{what}: kind must be "TE" or "TM", got {kind!r}')
    if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 1:
        raise InputError(f"{what}: count must be an integer >= 1, got {count!r}")


def _eigenpairs(plane: _PlaneMesh, kind: str, wanted: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The lowest `wanted` nonzero eigenvalues k_c^2 and their potentials (count, K, n, n)."""
    free = ~plane.wall if kind == "TM" else np.ones(plane.count, dtype=bool)
    index = np.flatnonzero(free)
    constants = 1 if kind == "TE" else 0
    if kind == "TM" and not plane.wall.any():
        raise InputError(f"{what}: the port plane's faces have no wall (no edge belongs to one face only)")
    if index.size < wanted + constants + 1:
        raise InputError(f"{what}: too few faces: the port plane has {index.size} free points, too few for "
                         f"{wanted} {kind} modes (refine the port's faces or raise the order)")
    scale = 1.0 / np.sqrt(plane.point_mass[index])
    stiff = plane.stiffness()[index][:, index]
    matrix = scipy.sparse.diags(scale) @ stiff @ scipy.sparse.diags(scale)
    ask = min(wanted + constants + 2, index.size - 1)
    if index.size <= DENSE:
        values, vectors = scipy.linalg.eigh(matrix.toarray(), subset_by_index=[0, ask - 1])
    else:  # shift-invert below the spectrum: the nearest eigenvalues are the lowest
        sigma = -1e-2 * (np.pi / plane.extent) ** 2
        values, vectors = scipy.sparse.linalg.eigsh(matrix.tocsc(), k=ask, sigma=sigma, which="LM")
        order = np.argsort(values)
        values, vectors = values[order], vectors[:, order]
    keep = values * plane.extent ** 2 > 1e-6  # TE: the constant potential is no mode
    values, vectors = values[keep], vectors[:, keep]
    if values.size < wanted:
        raise InputError(f"{what}: too few faces: only {values.size} {kind} modes found on the port plane")
    potentials = np.zeros((values.size, plane.count))
    potentials[:, index] = (vectors * scale[:, None]).T
    return values, potentials[:, plane.ids]


def solved_modes(coords, axis, kind, count, *, where: str = "port mode solver") -> list[tuple[float, np.ndarray]]:
    """coords (3, K, n, n): GLL points of ALL the port plane's faces (gathered from every rank,
    faces in a fixed order), lying on x_axis = c. The `count` lowest modes of `kind` ("TE" or
    "TM"), each (cutoff wavenumber k_c, e_t (3, K, n, n) with e_t[axis] = 0), normalised so that
    the face quadrature (GLL weights x surface Jacobian) of |e_t|^2 is 1; sign and degenerate
    pairs as the module docstring says. `where` starts the error messages."""
    what = where
    _check_kind(kind, count, what)
    plane = _PlaneMesh(coords, axis, what)
    values, potentials = _eigenpairs(plane, kind, int(count), what)
    fields = [plane.normalised(plane.field(kind, p)) for p in potentials]
    modes, i = [], 0
    while i < values.size and len(modes) < count:
        j = i + 1
        while j < values.size and values[j] - values[i] <= DEGENERATE * values[i]:
            j += 1
        group = fields[i:j]
        if len(group) == 2:
            group = _pair_basis(plane, *group)
        modes += [(float(np.sqrt(values[m])), e) for m, e in zip(range(i, j), group)]
        i = j
    return modes[:count]


def _pair_basis(plane: _PlaneMesh, e1: np.ndarray, e2: np.ndarray) -> list[np.ndarray]:
    """A degenerate pair rotated so that the second has none of the first nonzero functional
    in the list (the mean of e_u, of e_v, then their integrals against the plane's other test
    functions): a square's TE10/TE01 and a circle's TE11 have their means along u (first) and v
    (second); a circle's TM11 (no mean: E_z = 0 on the wall) its centre-weighted mean. Unchanged
    where every functional vanishes (nothing picks a direction)."""
    for weight in plane.weights():
        for c in (plane.u_axis, plane.v_axis):
            (m1, b1), (m2, b2) = plane.moment(e1[c], weight), plane.moment(e2[c], weight)
            if max(abs(m1), abs(m2)) > 1e-6 * max(b1, b2):
                theta = np.arctan2(m2, m1)
                first = np.cos(theta) * e1 + np.sin(theta) * e2
                second = -np.sin(theta) * e1 + np.cos(theta) * e2
                return [plane.normalised(first), plane.normalised(second)]
    return [e1, e2]


MODE_NAME = re.compile(r"^(TE|TM)([0-9])([1-9])$")


def circular_mode(name, coords, axis, *, where: str | None = None) -> tuple[float, np.ndarray]:
    """An analytic mode ("TE11", "TM01", ...: TE<n><m> / TM<n><m>, n the azimuthal and m the
    radial index, one digit each) of a circular guide whose cross-section is the faces' (centre
    and radius from the points); same normalisation and layout as solved_modes. Polarisation:
    TE_nm has H_z ~ J_n(k_c rho) sin(n phi) (J_0 for n = 0), TM_nm has E_z ~ J_n(k_c rho) cos(n phi),
    phi measured from u towards v: for n = 1 the field at the centre lies along u, as
    solved_modes's first of a degenerate pair. `where` starts the error messages."""
    what = f"{where}: mode = {name!r}" if where else f"circular port mode {name!r}"
    match = MODE_NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise InputError(f"{what}: unknown mode name (expected TE<n><m> or TM<n><m>, n = 0-9, m = 1-9: TE11, TM01)")
    kind, n, m = match.group(1), int(match.group(2)), int(match.group(3))
    plane = _PlaneMesh(coords, axis, what)
    centre, radius = _disc(plane, what)
    zeros = scipy.special.jnp_zeros(n, m) if kind == "TE" else scipy.special.jn_zeros(n, m)
    kc = float(zeros[-1]) / radius
    du, dv = plane.u - centre[0], plane.v - centre[1]
    rho, phi = np.hypot(du, dv), np.arctan2(dv, du)
    x = kc * rho
    # J_n(x) / x, smooth at the centre: (J_{n-1} + J_{n+1}) / (2n) for n >= 1
    jn_over_x = (scipy.special.jv(n - 1, x) + scipy.special.jv(n + 1, x)) / (2 * n) if n else np.zeros_like(x)
    jn_prime = scipy.special.jvp(n, x)
    if kind == "TM":  # grad of J_n(k rho) cos(n phi)
        cos, sin = np.cos(n * phi), np.sin(n * phi)
        g_rho, g_phi = kc * jn_prime * cos, -n * kc * jn_over_x * sin
    else:  # grad of J_n(k rho) sin(n phi) (J_0 for n = 0)
        cos, sin = (np.cos(n * phi), np.sin(n * phi)) if n else (np.zeros_like(phi), np.ones_like(phi))
        g_rho, g_phi = kc * jn_prime * sin, n * kc * jn_over_x * cos
    gu = g_rho * np.cos(phi) - g_phi * np.sin(phi)
    gv = g_rho * np.sin(phi) + g_phi * np.cos(phi)
    grad = plane.vector(gu, gv)
    if kind == "TE":
        d = np.zeros(3)
        d[axis] = 1.0
        grad = np.cross(d, grad, axis=0)
    return kc, plane.normalised(grad)


def _disc(plane: _PlaneMesh, what: str) -> tuple[np.ndarray, float]:
    """Centre and radius of a disc-shaped plane; InputError when it is not a disc."""
    centre = np.array([(plane.u.max() + plane.u.min()) / 2, (plane.v.max() + plane.v.min()) / 2])
    u = np.zeros(plane.count)
    v = np.zeros(plane.count)
    u[plane.ids], v[plane.ids] = plane.u, plane.v
    if not plane.wall.any():
        raise InputError(f"{what}: the cross-section is not a disc (it has no wall)")
    wall = np.hypot(u[plane.wall] - centre[0], v[plane.wall] - centre[1])
    radius = float(wall.mean())
    off = float(np.abs(wall - radius).max()) / radius
    area = abs(plane.area / (np.pi * radius ** 2) - 1.0)
    if off > ROUND or area > ROUND:
        raise InputError(f"{what}: the cross-section is not a disc (wall points {off:.2g} off the mean radius "
                         f"{radius:.4g}, area {area:.2g} off pi R^2; tolerance {ROUND:g})")
    return centre, radius


ANY_MODE = re.compile(r"^(TE|TM)([1-9][0-9]*)$")


def circle_shape(name: str, coords, axis: int, where: str) -> tuple[float, np.ndarray]:
    """The ports' shape "circle" (port_modes.register_shape's signature): circular_mode."""
    return circular_mode(name, coords, axis, where=where)


def any_shape(name: str, coords, axis: int, where: str) -> tuple[float, np.ndarray]:
    """The ports' shape "any": mode "TE<k>" / "TM<k>" is the k-th lowest of its kind from the
    eigen-solve on the plane's own faces (k >= 1)."""
    match = ANY_MODE.match(name) if isinstance(name, str) else None
    if match is None:
        raise InputError(f'{where}: mode = {name!r}: shape "any" takes TE<k> or TM<k>, the k-th lowest mode of a '
                         'kind ("TE1", "TM2")')
    k = int(match.group(2))
    return solved_modes(coords, axis, match.group(1), k, where=f"{where}: mode = {name!r}")[k - 1]
