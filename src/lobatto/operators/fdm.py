"""Fast-diagonalization solve of a separable element operator (Lynch, Rice & Thomas 1964;
the local solve of Nek5000's hsmg / nekRS's Schwarz smoother).

On an element's m x m x m points ([k, j, i], i along r) the separable operator

    A = h1 (Bz (x) By (x) Ax + Bz (x) Ay (x) Bx + Az (x) By (x) Bx) + h2 Bz (x) By (x) Bx

with the 1-D generalized eigenproblems A_d S_d = B_d S_d Lambda_d, S_d^T B_d S_d = I, has the
inverse (Sz (x) Sy (x) Sx) diag(1 / (h1 (lx_i + ly_j + lz_k) + h2)) (Sz (x) Sy (x) Sx)^T.
The eigenvectors and the inverse eigenvalue sums are made once (solvers/schwarz.py); the
kernel applies that inverse:

    u = S^T r along i, j, k;  u *= inverse;  out = S u along i, j, k

Kernels (``backend.kernel("fdm_apply", size=m)``), all with the signature
``apply(r, out, sx, sy, sz, inverse)`` (r, out, inverse (E, m, m, m); sx, sy, sz (E, m, m),
column a of S[e] the a-th eigenvector):
    reference   here, on ``xp`` (NumPy or CuPy): the oracle; batched matrix products
    cuda        fdm_cuda.py, kernels/fdm.cu (one block per element, the element in shared memory)
"""

from __future__ import annotations

from lobatto.backends.base import reference_kernel
from lobatto.operators import fdm_cuda  # noqa: F401  (registers the tuned kernel)


@reference_kernel("fdm_apply")
def make_apply(backend, size):
    xp = backend.xp
    m = int(size)

    def transform(u, sx, sy, sz, transpose: bool):
        """(Sz (x) Sy (x) Sx)^T u (transpose) or (Sz (x) Sy (x) Sx) u, u (E, m, m, m)."""
        E = u.shape[0]
        if transpose:
            u = xp.matmul(u, sx[:, None])  # [e, k, j, a] = sum_i u[e, k, j, i] sx[e, i, a]
            u = xp.matmul(xp.swapaxes(sy, 1, 2)[:, None], u)  # along j
            u = xp.matmul(xp.swapaxes(sz, 1, 2), u.reshape(E, m, m * m)).reshape(E, m, m, m)
        else:
            u = xp.matmul(u, xp.swapaxes(sx, 1, 2)[:, None])
            u = xp.matmul(sy[:, None], u)
            u = xp.matmul(sz, u.reshape(E, m, m * m)).reshape(E, m, m, m)
        return u

    def apply(r, out, sx, sy, sz, inverse):
        if r.shape[1:] != (m, m, m):
            raise ValueError(f"fdm_apply: r must be (E, {m}, {m}, {m}), got {tuple(r.shape)}")
        if r.shape[0] == 0:
            return out
        u = transform(r, sx, sy, sz, True)
        u *= inverse
        out[...] = transform(u, sx, sy, sz, False)
        return out

    return apply
