"""CUDA kernels for the terms around the Maxwell stage (terms.py), where their array-operation
versions would cost more than the step they ride on.

* ``ListedTraces``: the face traces (-n x E, -n x H) of a list of elements, read from and
  written to the full arrays in place (the fused whole-step path rewrites the traces of the
  elements a term changed; gathering them into compact copies and back cost more).
* ``PmlFinish``: the PML's whole ``finish`` in one pass over the layer's points
  (pml.py): the stage's input state is u - b residual (a 2N-storage stage has just added b
  residual to it), from which S and the auxiliary rates follow pointwise; then residual,
  u and the auxiliary fields are updated. A factor whose sigma is 0 at a point keeps its
  auxiliary field at 0, so it is neither read nor written: a face layer touches 6 of the 18.

The array-operation versions (terms.py, pml.py) are the reference; tests/unit/
test_maxwell_terms_gpu.py and test_maxwell_pml_gpu.py compare.
"""

from __future__ import annotations

import numpy as np

from lobatto.mesh.topology import NUM_FACES, face_slice

_TRACES = r"""
const long long n2 = N2, n3 = N3;
const long long el = i / (6 * n2);
const long long rest = i - el * 6 * n2;          // f * n2 + ab
const long long e = elements[el];
const long long vol = e * n3 + face_points[rest];
const long long fs = E * n3;                      // field stride of u
const long long fp = e * 6 * n2 + rest;           // this face point in (E, 6, n, n)
const long long ts = E * 6 * n2;                  // component stride of traces and normals
const T nx = normals[fp], ny = normals[ts + fp], nz = normals[2 * ts + fp];
for (int h = 0; h < 2; ++h) {
    const T vx = u[(3 * h) * fs + vol], vy = u[(3 * h + 1) * fs + vol], vz = u[(3 * h + 2) * fs + vol];
    out[(3 * h) * ts + fp] = -(ny * vz - nz * vy);
    out[(3 * h + 1) * ts + fp] = -(nz * vx - nx * vz);
    out[(3 * h + 2) * ts + fp] = -(nx * vy - ny * vx);
}
"""

_PML_FINISH = r"""
const long long n3 = N3;
const long long el = i / n3, p = i - el * n3;
const long long g = elements[el] * n3 + p;
const long long fs = E * n3, ms = M * n3;
const T sig[3] = {sigma[i], sigma[ms + i], sigma[2 * ms + i]};
for (int f = 0; f < 6; ++f) {
    const int c = f % 3;
    const T gain[3] = {-sig[c], sig[(c + 1) % 3], sig[(c + 2) % 3]};
    if (gain[0] == 0 && gain[1] == 0 && gain[2] == 0) continue;
    const T pole[3] = {alpha + sig[c], alpha, alpha};
    const long long at = f * fs + g;
    const T res = residual[at], uu = u[at];
    T w = uu - b * res;  // the stage's input state
    T s = 0;
    for (int k = 0; k < 3; ++k) {
        if (gain[k] == 0) continue;  // its auxiliary field stays 0
        const long long q_at = (k * 6 + f) * ms + i;
        const T q = aux[q_at];
        const T rate = gain[k] * w - pole[k] * q;
        w += q;
        s -= rate;
        const T qres = a * aux_residual[q_at] + dt * rate;
        aux_residual[q_at] = qres;
        aux[q_at] = q + b * qres;
    }
    residual[at] = res + dt * s;
    u[at] = uu + (b * dt) * s;
}
"""


def face_point_table(order: int) -> np.ndarray:
    """(6 n^2,) offsets in an element's n^3 points of face f's point (a, b), at f n^2 + a n + b."""
    n = order + 1
    volume = np.arange(n**3).reshape(n, n, n)
    return np.concatenate([volume[face_slice(f, order)].reshape(-1) for f in range(NUM_FACES)]).astype(np.int64)


class ListedTraces:
    """traces(u, normals, out, elements, count): the traces of ``count`` listed elements."""

    def __init__(self, backend, order: int):
        n = order + 1
        xp = backend.xp
        self.n2, self.xp = n * n, xp
        self.table = backend.asarray(face_point_table(order), dtype=np.int64)
        source = _TRACES.replace("N2", str(n * n)).replace("N3", str(n**3))
        self.kernel = xp.ElementwiseKernel(
            "raw T u, raw T normals, raw int64 elements, raw int64 face_points, int64 E", "raw T out", source,
            f"lobatto_listed_traces_{order}")

    def __call__(self, u, normals, out, elements, count: int):
        if count:
            # flat views: a raw CArray of many dimensions unravels every index with divisions
            self.kernel(u.reshape(-1), normals.reshape(-1), elements, self.table, np.int64(u.shape[1]), out.reshape(-1),
                        size=count * 6 * self.n2)


class PmlFinish:
    """finish(u, residual, aux, aux_residual, sigma, elements, alpha, a, b, dt) for pml.py's
    layout: aux (3 factors, 6 components, m, n, n, n), sigma (3, m, n, n, n)."""

    def __init__(self, backend, order: int):
        n3 = (order + 1) ** 3
        self.n3 = n3
        self.kernel = backend.xp.ElementwiseKernel(
            "raw T sigma, raw int64 elements, int64 E, int64 M, T alpha, T a, T b, T dt",
            "raw T u, raw T residual, raw T aux, raw T aux_residual", _PML_FINISH.replace("N3", str(n3)),
            f"lobatto_pml_finish_{order}")

    def __call__(self, u, residual, aux, aux_residual, sigma, elements, alpha, a, b, dt):
        m = int(elements.size)
        if m:
            t = u.dtype.type
            self.kernel(sigma.reshape(-1), elements, np.int64(u.shape[1]), np.int64(m), t(alpha), t(a), t(b), t(dt),
                        u.reshape(-1), residual.reshape(-1), aux.reshape(-1), aux_residual.reshape(-1), size=m * self.n3)


_FACE_ADD = r"""
const long long n2 = N2, n3 = N3;
const long long kf = i / n2, ab = i - kf * n2;
const long long vol = elements[kf] * n3 + face_points[face * n2 + ab];
const long long fs = E * n3, ks = K * n2;
const T scaled = rate[i] * dt;
for (int c = 0; c < 6; ++c) {
    const T s = gain[c * ks + i] * scaled;
    residual[c * fs + vol] += s;
    u[c * fs + vol] += b * s;
}
"""


class FaceAdd:
    """residual += dt S, u += b dt S for S = gain * rate at the face points of listed faces,
    all with the same face index (so no two threads add to one point: deterministic), gain
    (6, K, n, n), rate (K, n, n), elements (K,) the faces' elements."""

    def __init__(self, backend, order: int):
        n = order + 1
        self.n2 = n * n
        self.table = backend.asarray(face_point_table(order), dtype=np.int64)
        self.kernel = backend.xp.ElementwiseKernel(
            "raw T gain, raw T rate, raw int64 elements, raw int64 face_points, int64 face, int64 E, int64 K, "
            "T b, T dt", "raw T u, raw T residual", _FACE_ADD.replace("N2", str(n * n)).replace("N3", str(n**3)),
            f"lobatto_face_add_{order}")

    def __call__(self, u, residual, gain, rate, elements, face: int, b, dt):
        k = int(elements.size)
        if k:
            t = u.dtype.type
            self.kernel(gain.reshape(-1), rate.reshape(-1), elements, self.table, np.int64(face), np.int64(u.shape[1]),
                        np.int64(k), t(b), t(dt), u.reshape(-1), residual.reshape(-1), size=k * self.n2)
