"""Overlapping additive Schwarz with fast-diagonalization local solves (Lottes & Fischer 2005,
"Hybrid multigrid/Schwarz algorithms for the spectral element method"; Nek5000's hsmg
smoother, nekRS's ASM in its default Chebyshev+ASM smoother), as the preconditioner M of a
Chebyshev smoother (chebyshev.py) on one p-multigrid level.

Subdomains: each element's (N+1)^3 points extended by one layer on each face, an (N+3)^3
"ext" array; ext index 1..N+1 is the element's own point 0..N, the face layer 0 (N+2) holds
the face neighbour's point one GLL node inside the neighbour. Ext edges and corners are not
used (zero in the right-hand side, dropped from the solution).

Exchange ("extrude", Nek5000's hsmg_extrude) with no new numbering: an order-(N+2) Assembly
identifies A's ext layer N+2 with its face neighbour B's ext layer 0, point by point and
oriented (both are the shared face of an ordinary order-(N+2) numbering; those points are
shared by exactly the two elements). Putting each element's own value one inside its face
into its face layer, dssum, and subtracting the own value again leaves the neighbour's value
there (0 on a boundary face), across ranks and periodic faces as dssum is.

Local solve: each element as a box of lengths L_r, L_s, L_t (mean distance between its
opposite faces' points) with its face neighbours' normal lengths; per direction the 1-D GLL
stiffness (2/L) Ahat and lumped mass (L/2) Bhat of left | self | right assembled and
restricted to the N+3 ext unknowns (zero beyond). A boundary face drops its ext point, and a
Dirichlet face also its own face point (identity rows: zero right-hand side, zero solution).
The separable h1 (B B A + B A B + A B B) + h2 B B B is inverted by fast diagonalization
(operators/fdm.py); on an undeformed box element it is the exact element operator.

    M r = mask W^1/2 sum_e R_e^T A_e^-1 R_e W^1/2 mask r,   W = 1 / (subdomains covering a point)

The weight is split into W^1/2 before and after so that M is symmetric (the V-cycle stays a
fixed symmetric map that plain PCG may use, and the CG-Lanczos estimate of lambda_max(M A)
holds). nekRS weights once, after the sum (W M_as), which is not symmetric, so its cycle
needs a flexible Krylov method. Cost per application: two order-(N+2) dssums (extend, then
return the overlap; they also exchange the ext edge and vertex points, which are then
ignored), one order-N dssum, the
FDM kernel (12 (N+3)^4 flops, two (N+3)^3 arrays moved per element) and four ext_layers
launches, against one multiply for Jacobi.

On a 2-D mesh (quads: arrays (E, 1, n, n)) the ext element is (1, N+3, N+3): four face
layers (lines), two 1-D problems (r, s) per element, the separable h1 (B A + A B) + h2 B B;
the thin k axis is never extended.
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization import derivative_matrix, gll_weights
from lobatto.mesh.geometry import element_coordinates
from lobatto.operators.fdm import FILL, RETURN, SAVE, SUBTRACT, layer_slice
from lobatto.operators.assembly import Assembly

#: an element's separable eigenvalue sum below this fraction of its largest is the null
#: space of an all-Neumann element with h2 = 0 (the constant): its inverse is set to 0
SINGULAR_FRACTION = 1e-10


def element_lengths(mesh, order: int) -> np.ndarray:
    """(E, dim) mean distance between opposite faces' GLL points along r, s, t (deformation
    included; r, s on a 2-D mesh)."""
    coords = element_coordinates(mesh, order)
    if mesh.deform is not None:
        coords = coords + np.asarray(mesh.deform(coords[0], coords[1], coords[2]), dtype=np.float64)
    lengths = np.empty((coords.shape[1], mesh.dim))
    for d, axis in enumerate((4, 3, 2)[:mesh.dim]):  # r along i (axis 4 of (3, E, k, j, i)), s along j, t along k
        diff = np.take(coords, -1, axis=axis) - np.take(coords, 0, axis=axis)
        lengths[:, d] = np.sqrt((diff ** 2).sum(axis=0)).reshape(coords.shape[1], -1).mean(axis=1)
    return lengths


def one_dimensional(order: int, length, left, right, left_fixed, right_fixed):
    """Per element (arrays over E) the 1-D stiffness A (E, m, m) and lumped mass b (E, m) on
    the ext unknowns [left's point one inside, own 0..N, right's point one inside], m = N+3.
    ``left``/``right``: the neighbour's length (0: no neighbour: the ext point is dropped);
    ``*_fixed``: the own face is Dirichlet (its point is dropped too). Dropped points get
    identity rows."""
    n, m = order + 1, order + 3
    d = derivative_matrix(order)
    w = gll_weights(order)
    ahat = d.T @ (w[:, None] * d)
    E = len(length)
    a = np.zeros((E, m, m))
    b = np.zeros((E, m))
    a[:, 1:n + 1, 1:n + 1] += (2.0 / length)[:, None, None] * ahat
    b[:, 1:n + 1] += (0.5 * length)[:, None] * w
    has_left, has_right = left > 0, right > 0
    scale_l = np.where(has_left, 2.0 / np.where(has_left, left, 1.0), 0.0)
    scale_r = np.where(has_right, 2.0 / np.where(has_right, right, 1.0), 0.0)
    a[:, 0:2, 0:2] += scale_l[:, None, None] * ahat[order - 1:, order - 1:]
    b[:, 0:2] += (0.5 * left)[:, None] * w[order - 1:]
    a[:, m - 2:, m - 2:] += scale_r[:, None, None] * ahat[:2, :2]
    b[:, m - 2:] += (0.5 * right)[:, None] * w[:2]
    drops = [(~has_left, 0), (left_fixed, 1), (~has_right, m - 1), (right_fixed, m - 2)]
    for where, p in drops:
        rows = np.flatnonzero(where)
        a[rows, p, :] = 0.0
        a[rows, :, p] = 0.0
        a[rows, p, p] = 1.0
        b[rows, p] = 1.0
    return a, b


def generalized_eigen(a, b):
    """S (E, m, m) and lambda (E, m) with A S = B S Lambda, S^T B S = I, for diagonal B:
    the symmetric B^-1/2 A B^-1/2 = V Lambda V^T, S = B^-1/2 V (batched, on the host)."""
    root = 1.0 / np.sqrt(b)
    c = root[:, :, None] * a * root[:, None, :]
    lam, v = np.linalg.eigh(0.5 * (c + np.swapaxes(c, 1, 2)))
    return root[:, :, None] * v, lam


def _element_mean(value, num_elements: int) -> np.ndarray:
    if np.ndim(value) == 0:
        return np.full(num_elements, float(value))
    host = value.get() if hasattr(value, "get") else np.asarray(value)
    return host.reshape(num_elements, -1).mean(axis=1)


class AdditiveSchwarz:
    """``M(r)`` on one multigrid Level (module docstring); made collectively over ``comm``.

    mesh, level: the level's mesh and ``multigrid.Level`` (its operator's h1 and h2, its
    assembly's Dirichlet faces and mask); arrays in the level's dtype."""

    def __init__(self, mesh, level, comm=None):
        backend, xp = level.assembly.backend, level.assembly.backend.xp
        self.backend, self.level, self.order = backend, level, level.order
        N, E = self.order, level.assembly.num_elements
        self.m = m = N + 3
        self.dim = dim = mesh.dim
        self._ext_shape = ext_shape = (m, m, m) if dim == 3 else (1, m, m)
        # the element's own points inside its ext array (the thin k axis of 2-D is not extended)
        self.inside = (slice(None), slice(1, -1) if dim == 3 else slice(None), slice(1, -1), slice(1, -1))
        self.dtype = level.dtype
        self.ext = Assembly(mesh, N + 2, backend, comm)  # collective
        # only its dssum is used: its (N+3)^3 ids and counting arrays would be four more ext arrays
        self.ext.multiplicity = self.ext.inverse_multiplicity = self.ext.mask = self.ext.ids = None
        self.layers = [(layer_slice(f, m, 0, dim), layer_slice(f, m, 2, dim)) for f in range(2 * dim)]
        lengths = element_lengths(mesh, N) if E else np.zeros((0, dim))
        neighbour = self._neighbour_lengths(lengths)
        fixed = np.asarray(level.assembly.dirichlet, dtype=bool)
        h1 = _element_mean(level.operator.h1, E)
        h2 = _element_mean(level.operator.h2, E)
        matrices, eigenvalues = [], []
        for d in range(dim):  # r, s, t: faces 2d (left) and 2d + 1 (right)
            a, b = one_dimensional(N, lengths[:, d], neighbour[:, 2 * d], neighbour[:, 2 * d + 1],
                                   fixed[:, 2 * d], fixed[:, 2 * d + 1])
            s, lam = generalized_eigen(a, b) if E else (np.zeros((0, m, m)), np.zeros((0, m)))
            matrices.append(s)
            eigenvalues.append(lam)
        tops = [lam.max(axis=1, initial=0) for lam in eigenvalues]
        largest = h1 * (tops[0] + tops[1] + tops[2] if dim == 3 else tops[0] + tops[1]) + h2 if E else np.zeros(0)
        coefficients = np.stack([h1, h2, SINGULAR_FRACTION * np.abs(largest)], axis=1)
        arrays = [backend.asarray(s, dtype=self.dtype) for s in matrices]
        self.sx, self.sy, self.sz = arrays[0], arrays[1], (arrays[2] if dim == 3 else None)  # 2-D: no t
        self.eigenvalues = backend.asarray(np.stack(eigenvalues, axis=1).reshape(E, dim, m), dtype=self.dtype)
        self.coefficients = backend.asarray(coefficients.reshape(E, 3), dtype=self.dtype)
        self.kernel = backend.kernel("fdm_apply", size=m, dim=dim)
        self.move = backend.kernel("ext_layers", size=m, dim=dim)
        self._saved = backend.zeros((E, 2 * dim) + ((m - 2, m - 2) if dim == 3 else (1, m - 2)), dtype=self.dtype)
        self._r_ext = backend.zeros((E,) + ext_shape, dtype=self.dtype)
        self._z_ext = backend.zeros((E,) + ext_shape, dtype=self.dtype)
        count = self._sum_subdomains(backend.zeros(level.assembly.shape, dtype=self.dtype) + 1, lambda ext: ext)
        safe = xp.where(count > 0, count, 1)
        self.root_weight = (level.mask / xp.sqrt(safe)).astype(self.dtype)

    def _neighbour_lengths(self, lengths) -> np.ndarray:
        """(E, 2 dim): the face neighbour's length normal to the shared face, 0 on a boundary
        face (the ext exchange of a field holding each element's normal lengths on its layers)."""
        E, m = lengths.shape[0], self.m
        field = np.zeros((E,) + self._ext_shape)
        for f, (layer, _) in enumerate(self.layers):
            field[layer] = lengths[:, f // 2, None, None]
        ext = self.ext.dssum(self.backend.asarray(field.copy(), dtype=np.float64))  # asarray may not copy
        host = ext.get() if hasattr(ext, "get") else np.asarray(ext)
        neighbour = np.zeros((E, 2 * self.dim))
        for f, (layer, _) in enumerate(self.layers):
            neighbour[:, f] = (host[layer] - field[layer]).reshape(E, -1).mean(axis=1)
        return np.where(neighbour > 1e-12 * max(float(lengths.max(initial=0.0)), 1e-300), neighbour, 0.0)

    def extend(self, r, out, weight=None):
        """out (E, m, m, m): r (times ``weight``) inside, the face neighbours' points one inside
        on the layers. The ext edges and corners of ``out`` are left as they are (zero in the
        work array: never written)."""
        inside_view = out[self.inside]
        if weight is None:
            inside_view[...] = r
        else:
            self.backend.xp.multiply(r, weight, out=inside_view)
        self.move(out, self._saved, FILL)
        self.ext.dssum(out)
        return self.move(out, self._saved, SUBTRACT)

    def _return_overlap(self, z):
        """The reverse of ``extend``: each element's point one inside a face receives the
        neighbour's solution on its layer there; returns the own (N+1)^3 part (a view). The
        ext edges and corners are never read: whatever the solve left there is summed among
        edge copies only (other ids than the face layers') and dropped."""
        self.move(z, self._saved, SAVE)
        self.ext.dssum(z)
        self.move(z, self._saved, RETURN)
        return z[self.inside]

    def _sum_subdomains(self, r, solve, weight=None):
        """weight sum_e R_e^T solve(R_e (weight r)), continuous: the copies of the own part
        weighted (a continuous weight: the same at every copy, so before the sum) and summed
        by the order-N dssum."""
        z = self._return_overlap(solve(self.extend(r, self._r_ext, weight)))
        xp = self.backend.xp
        out = xp.ascontiguousarray(z) if weight is None else xp.multiply(z, weight)
        return self.level.assembly.dssum(out)

    def solve_local(self, ext):
        return self.kernel(ext, self._z_ext, self.sx, self.sy, self.sz, self.eigenvalues, self.coefficients)

    def __call__(self, r):
        return self._sum_subdomains(r, self.solve_local, self.root_weight)
