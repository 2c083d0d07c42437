"""CUDA kernels for the terms around the Maxwell stage (terms.py), where their array-operation
versions would cost more than the step they ride on: what the terms' kernels share, and the
traces of listed elements.

* ``ListedTraces``: the face traces (-n x E, -n x H) of a list of elements, read from and
  written to the full arrays in place (the fused whole-step path rewrites the traces of the
  elements a term changed; gathering them into compact copies and back cost more).
* ``PointUpdate``: the base of the terms' kernels, one thread per point: ``PmlFinish``
  (pml_cuda.py), ``SurfaceAdd`` and ``DiscreteIncidentStage`` (tfsf_cuda.py),
  ``DispersiveStep`` (dispersive_cuda.py). They rewrite, on the fused path, the traces of the
  points they change (:data:`TRACES_OF_POINT_SOURCE`), so the terms need no separate trace
  pass (ListedTraces) after them.

The array-operation versions (terms.py, pml.py, tfsf.py, tfsf_discrete.py, dispersive.py) are
the reference; tests/unit/test_maxwell_terms_gpu.py and test_maxwell_pml_gpu.py compare.
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


#: the traces (-n x E, -n x H) at the face points of volume point p of element e, from uu[6]:
#: point_faces (n^3, 3) lists the point's slots f n^2 + ab on its element's faces (-1: none);
#: the terms' kernels put it where their text says TRACES_OF_POINT
TRACES_OF_POINT_SOURCE = r"""
const long long ts = E * 6 * N2;
#pragma unroll
for (int slot = 0; slot < 3; ++slot) {
    const long long fslot = point_faces[p * 3 + slot];
    if (fslot < 0) break;
    const long long fp = e * 6 * N2 + fslot;
    const T nx = normals[fp], ny = normals[ts + fp], nz = normals[2 * ts + fp];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const T vx = uu[3 * h], vy = uu[3 * h + 1], vz = uu[3 * h + 2];
        traces[(3 * h) * ts + fp] = -(ny * vz - nz * vy);
        traces[(3 * h + 1) * ts + fp] = -(nz * vx - nx * vz);
        traces[(3 * h + 2) * ts + fp] = -(nx * vy - ny * vx);
    }
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


def point_face_table(order: int) -> np.ndarray:
    """(n^3, 3): for each of an element's points, its slots f n^2 + ab on the element's faces
    (an interior point has none, a face point one, an edge point two, a corner three), -1 after."""
    n = order + 1
    table = np.full((n**3, 3), -1, dtype=np.int64)
    filled = np.zeros(n**3, dtype=np.int64)
    for slot, point in enumerate(face_point_table(order)):
        table[point, filled[point]] = slot
        filled[point] += 1
    return table


class PointUpdate:
    """What the terms' kernels share. Each is compiled twice (FOLD): after the stage kernel it
    adds dt S to the residual and b dt S to u, and given the fused path's trace buffer it
    rewrites the traces of the points it changed; before the stage kernel, for a stage whose
    a is not 0, it adds (dt / a) S to the residual alone, which the kernel's a * residual turns
    into dt S, so u is neither read back nor its traces rewritten."""

    def setup_points(self, backend, order: int) -> None:
        self.unused = backend.zeros(1)  # stands for traces and normals when none are written
        self.point_faces = backend.asarray(point_face_table(order).reshape(-1), dtype=np.int64)

    @staticmethod
    def compile_both(xp, params: str, outputs: str, source: str, name: str, **options) -> dict:
        """{fold: kernel} for fold False and True."""
        return {fold: xp.ElementwiseKernel(params, outputs, source.replace("FOLD", "true" if fold else "false"),
                                           f"{name}_{'fold' if fold else 'finish'}", **options)
                for fold in (False, True)}

    def trace_arguments(self, traces, normals, fold: bool, a, dt) -> tuple:
        """(write flag, traces, normals, scale of S in the residual) for a launch."""
        write = traces is not None and not fold
        if not write:
            traces = normals = self.unused
        return np.int32(write), traces.reshape(-1), normals.reshape(-1), (dt / a if fold else dt)
