"""Fast-diagonalization solve of a separable element operator (Lynch, Rice & Thomas 1964;
the local solve of Nek5000's hsmg / nekRS's Schwarz smoother).

On an element's m x m x m points ([k, j, i], i along r) the separable operator

    A = h1 (Bz (x) By (x) Ax + Bz (x) Ay (x) Bx + Az (x) By (x) Bx) + h2 Bz (x) By (x) Bx

with the 1-D generalized eigenproblems A_d S_d = B_d S_d Lambda_d, S_d^T B_d S_d = I, has the
inverse (Sz (x) Sy (x) Sx) diag(1 / (h1 (lx_i + ly_j + lz_k) + h2)) (Sz (x) Sy (x) Sx)^T.
The eigenvectors and eigenvalues are made once (solvers/schwarz.py); the kernel applies that
inverse, forming the diagonal from the 3m eigenvalues and h1, h2 of each element as it goes
(reading an (E, m, m, m) array of it would be a third of the kernel's memory traffic):

    u = S^T r along i, j, k;  u *= 1 / (h1 (lx + ly + lz) + h2);  out = S u along i, j, k

where the sum is at most ``floor`` (an all-Neumann element's constant mode with h2 = 0: the
separable operator is singular there) the factor is 0 instead.

On a 2-D mesh (``dim=2``: ext arrays (E, 1, m, m), the thin k axis) the operator is
h1 (By (x) Ax + Ay (x) Bx) + h2 By (x) Bx: two 1-D eigenproblems, ``sz`` is None and
``eigenvalues`` is (E, 2, m); the four face layers are lines (E, 1, m-2) and ``saved`` is
(E, 4, 1, m-2).

``ext_layers`` (``backend.kernel("ext_layers", size=m, dim=3 or 2)``, ``apply(z, saved, mode)``) moves
values between the six face layers of (E, m, m, m) ext arrays (ext index 0 or m-1 along
the face's axis, the others 1..m-2) and the planes one inside them (index 2 or m-3):
``FILL`` layer = inside, ``SUBTRACT`` layer -= inside, ``SAVE`` saved[:, f] = layer f,
``RETURN`` inside += layer - saved (face after face: the inside planes of two faces share an
edge); ``saved`` is (E, 6, m-2, m-2). The Schwarz smoother's extend and return steps
(solvers/schwarz.py) are these around a gather-scatter.

Kernels (``backend.kernel("fdm_apply", size=m, dim=3 or 2)``), all with the signature
``apply(r, out, sx, sy, sz, eigenvalues, coefficients)`` (r, out (E, m, m, m); sx, sy, sz
(E, m, m), column a of S[e] the a-th eigenvector; eigenvalues (E, 3, m): lx, ly, lz;
coefficients (E, 3): h1, h2, floor):
    reference   here, on ``xp`` (NumPy or CuPy): the oracle; batched matrix products, the
                diagonal kept for the last few (eigenvalues, coefficients) arrays passed
                (by identity: a smoother's are made once and never changed)
    cuda        fdm_cuda.py, kernels/fdm.cu (one block per element, the element in shared memory)
and the same two for ``ext_layers`` (the CUDA one: one block per element, a thread per face
point, the six faces in turn).
"""

from __future__ import annotations

from lobatto.backends.base import reference_kernel
from lobatto.operators import fdm_cuda  # noqa: F401  (registers the tuned kernel)


#: ext_layers modes (the CUDA kernel takes the same integers)
FILL, SUBTRACT, SAVE, RETURN = 0, 1, 2, 3


def layer_slice(face: int, m: int, index: int, dim: int = 3) -> tuple:
    """Ext index of ``face``'s plane at normal index ``index`` counted from that face (0: the
    face layer, 2: one inside the own face), face-interior points only, for (E, m, m, m)
    ((E, 1, m, m) with ``dim=2``: the k axis, of one point, is kept whole)."""
    inner = slice(1, m - 1)
    idx = [slice(None), inner if dim == 3 else slice(None), inner, inner]
    axis = 3 - face // 2  # face 0/1 -> i (axis 3), 2/3 -> j, 4/5 -> k
    idx[axis] = index if face % 2 == 0 else m - 1 - index
    return tuple(idx)


@reference_kernel("ext_layers")
def make_layers(backend, size, dim=3):
    m = int(size)
    planes = [(layer_slice(f, m, 0, dim), layer_slice(f, m, 2, dim)) for f in range(2 * dim)]

    def apply(z, saved, mode):
        for f, (layer, inside) in enumerate(planes):
            if mode == FILL:
                z[layer] = z[inside]
            elif mode == SUBTRACT:
                z[layer] -= z[inside]
            elif mode == SAVE:
                saved[:, f] = z[layer]
            elif mode == RETURN:
                z[inside] += z[layer] - saved[:, f]
            else:
                raise ValueError(f"ext_layers: mode must be 0..3, got {mode}")
        return z

    return apply


@reference_kernel("fdm_apply")
def make_apply(backend, size, dim=3):
    xp = backend.xp
    m = int(size)
    shape = (m, m, m) if dim == 3 else (1, m, m)

    def transform(u, sx, sy, sz, transpose: bool):
        """(Sz (x) Sy (x) Sx)^T u (transpose) or (Sz (x) Sy (x) Sx) u, u (E, m, m, m); in 2-D
        (Sy (x) Sx) on (E, 1, m, m)."""
        E = u.shape[0]
        if transpose:
            u = xp.matmul(u, sx[:, None])  # [e, k, j, a] = sum_i u[e, k, j, i] sx[e, i, a]
            u = xp.matmul(xp.swapaxes(sy, 1, 2)[:, None], u)  # along j
            if dim == 2:
                return u
            u = xp.matmul(xp.swapaxes(sz, 1, 2), u.reshape(E, m, m * m)).reshape(E, m, m, m)
        else:
            u = xp.matmul(u, xp.swapaxes(sx, 1, 2)[:, None])
            u = xp.matmul(sy[:, None], u)
            if dim == 2:
                return u
            u = xp.matmul(sz, u.reshape(E, m, m * m)).reshape(E, m, m, m)
        return u

    def diagonal(eigenvalues, coefficients):
        """1 / (h1 (lx_i + ly_j + lz_k) + h2) per element, 0 where the sum is at most floor
        (lz_k absent in 2-D)."""
        lx, ly = eigenvalues[:, 0], eigenvalues[:, 1]
        h1, h2, floor = (coefficients[:, c, None, None, None] for c in range(3))
        if dim == 3:
            sums = eigenvalues[:, 2][:, :, None, None] + ly[:, None, :, None] + lx[:, None, None, :]
        else:
            sums = ly[:, None, :, None] + lx[:, None, None, :]
        total = h1 * sums + h2
        regular = total > floor
        return xp.where(regular, 1 / xp.where(regular, total, 1), 0).astype(total.dtype)

    kept: list = []  # [(eigenvalues, coefficients, their diagonal)]: a smoother's are set once

    def cached_diagonal(eigenvalues, coefficients):
        for e, c, d in kept:
            if e is eigenvalues and c is coefficients:
                return d
        d = diagonal(eigenvalues, coefficients)
        kept.insert(0, (eigenvalues, coefficients, d))
        del kept[4:]
        return d

    def apply(r, out, sx, sy, sz, eigenvalues, coefficients):
        if tuple(r.shape[1:]) != shape:
            raise ValueError(f"fdm_apply: r must be (E, {', '.join(map(str, shape))}), got {tuple(r.shape)}")
        if r.shape[0] == 0:
            return out
        u = transform(r, sx, sy, sz, True)
        u *= cached_diagonal(eigenvalues, coefficients)
        out[...] = transform(u, sx, sy, sz, False)
        return out

    return apply
