"""The PML's whole ``finish`` in one CUDA kernel over the layer's points (pml.py): the stage's
input state is u - b residual (a 2N-storage stage has just added b residual to it), from
which S and the auxiliary rates follow pointwise; then residual, u and the auxiliary fields
are updated. A factor whose sigma is 0 keeps its auxiliary field at 0, so it is neither read
nor written: a face layer touches 6 of the 18. The array operations of pml.py are the
reference (tests/unit/test_maxwell_terms_gpu.py compares).
"""

from __future__ import annotations

import numpy as np

from lobatto.systems.maxwell.terms_cuda import TRACES_OF_POINT_SOURCE, PointUpdate, element_sizes, specialise

_PML_FINISH = r"""
// one thread per point of a layer element whose non-zero sigma directions are MASK (bits x, y, z)
const long long n3 = N3;
const long long gi = i / n3, p = i - gi * n3;
const long long el = group[gi];                     // in the layer's compact arrays
const long long e = elements[el];
const long long g = e * n3 + p, at = el * n3 + p;
const long long fs = E * n3, ms = M * n3;
T sig[3];
#pragma unroll
for (int d = 0; d < 3; ++d) sig[d] = ((MASK >> d) & 1) ? sigma[d * ms + at] : T(0);
// every load before any store: the raw arrays may alias as far as the compiler knows
T uu[6], res[6], q[3][6], qres[3][6];
#pragma unroll
for (int f = 0; f < 6; ++f) {
    uu[f] = u[f * fs + g];
    res[f] = residual[f * fs + g];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        if (ACTIVE(k, f)) {
            q[k][f] = aux[(k * 6 + f) * ms + at];
            qres[k][f] = aux_residual[(k * 6 + f) * ms + at];
        }
    }
}
#pragma unroll
for (int f = 0; f < 6; ++f) {
    T w = FOLD ? uu[f] : uu[f] - b * res[f];  // the stage's input state
    T s = 0;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        if (!ACTIVE(k, f)) continue;  // sigma is 0 there: its auxiliary field stays 0
        const T sd = sig[(f % 3 + k) % 3];
        const T rate = (k == 0) ? (-sd * w - (alpha + sd) * q[k][f]) : (sd * w - alpha * q[k][f]);
        w += q[k][f];
        s -= rate;
        const T r = a * qres[k][f] + dt * rate;
        aux_residual[(k * 6 + f) * ms + at] = r;
        aux[(k * 6 + f) * ms + at] = q[k][f] + b * r;
    }
    residual[f * fs + g] = res[f] + scale * s;
    if (!FOLD) {
        uu[f] += (b * dt) * s;
        u[f * fs + g] = uu[f];
    }
}
if (!FOLD && write_traces) {
    TRACES_OF_POINT
}
"""


class PmlFinish(PointUpdate):
    """finish(u, residual, aux, aux_residual, sigma, elements, alpha, a, b, dt, traces) for
    pml.py's layout: aux (3 factors, 6 components, m, n, n, n), sigma (3, m, n, n, n) (m, 1, n, n
    on a 2-D mesh, ``dim`` = 2). The
    layer's elements are grouped by which sigma directions are non-zero on them (a face
    layer one, an edge two, a corner three), and each group's kernel is compiled for its
    directions: it reads only the auxiliary fields that can be non-zero, with no branches.
    Rewriting the traces itself saves a pass over the layer's faces (ListedTraces)."""

    def __init__(self, backend, order: int, sigma_host: np.ndarray, dim: int = 3):
        self.n3 = element_sizes(order, dim)[0]  # points per element
        self.setup_points(backend, order, dim)
        active = np.any(np.asarray(sigma_host).reshape(3, sigma_host.shape[1], -1) != 0, axis=2)  # (3, m)
        masks = active[0] * 1 + active[1] * 2 + active[2] * 4
        self.groups = []
        for mask in np.unique(masks):
            if mask == 0:
                continue  # sigma is 0 on the whole element: the layer leaves it alone
            members = np.nonzero(masks == mask)[0]
            kernels = self.compile_both(
                backend.xp, "raw T sigma, raw int64 group, raw int64 elements, raw int64 point_faces, raw T normals, "
                "int64 E, int64 M, T alpha, T a, T b, T dt, T scale, int32 write_traces",
                "raw T u, raw T residual, raw T aux, raw T aux_residual, raw T traces",
                specialise(_PML_FINISH.replace("TRACES_OF_POINT", TRACES_OF_POINT_SOURCE)
                           .replace("ACTIVE(k, f)", "((MASK >> (((f) % 3 + (k)) % 3)) & 1)")
                           .replace("MASK", str(int(mask))), order, dim),
                f"lobatto_pml_{order}_{dim}d_{int(mask)}")
            self.groups.append((kernels, backend.asarray(members, dtype=np.int64), int(members.size)))

    def __call__(self, u, residual, aux, aux_residual, sigma, elements, alpha, a, b, dt, traces=None, normals=None,
                 fold=False):
        """After the stage kernel, or folded into the residual before it (PointUpdate)."""
        m = int(elements.size)
        if not m:
            return
        self.check_shape(u)
        t = u.dtype.type
        write, traces, normals, scale = self.trace_arguments(traces, normals, fold, a, dt)
        for kernels, members, count in self.groups:
            kernels[fold](
                sigma.reshape(-1), members, elements, self.point_faces, normals, np.int64(u.shape[1]),
                np.int64(m), t(alpha), t(a), t(b), t(dt), t(scale), write, u.reshape(-1), residual.reshape(-1),
                aux.reshape(-1), aux_residual.reshape(-1), traces, size=count * self.n3)
