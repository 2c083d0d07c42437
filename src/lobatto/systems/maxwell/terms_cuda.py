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

Every kernel takes the mesh's dimension ``dim`` (3 by default): its source's N3 is the points
per element, N2 the points per face and NFACES the faces (:func:`specialise`), so a 2-D element
is n^2 points with four faces of n points (the thin layout of reference.py).
"""

from __future__ import annotations

import numpy as np

from lobatto.mesh.topology import element_shape, face_shape, face_slice, num_faces

_TRACES = r"""
const long long n2 = N2, n3 = N3;
const long long el = i / (NFACES * n2);
const long long rest = i - el * NFACES * n2;     // f * n2 + ab
const long long e = elements[el];
const long long vol = e * n3 + face_points[rest];
const long long fs = E * n3;                      // field stride of u
const long long fp = e * NFACES * n2 + rest;      // this face point in (E, 6, n, n) or (E, 4, 1, n)
const long long ts = E * NFACES * n2;             // component stride of traces and normals
const T nx = normals[fp], ny = normals[ts + fp], nz = normals[2 * ts + fp];
for (int h = 0; h < 2; ++h) {
    const T vx = u[(3 * h) * fs + vol], vy = u[(3 * h + 1) * fs + vol], vz = u[(3 * h + 2) * fs + vol];
    out[(3 * h) * ts + fp] = -(ny * vz - nz * vy);
    out[(3 * h + 1) * ts + fp] = -(nz * vx - nx * vz);
    out[(3 * h + 2) * ts + fp] = -(nx * vy - ny * vx);
}
"""


#: the traces (-n x E, -n x H) at the face points of volume point p of element e, from uu[6]:
#: point_faces (N3, 3) lists the point's slots f N2 + ab on its element's faces (-1: none);
#: the terms' kernels put it where their text says TRACES_OF_POINT
TRACES_OF_POINT_SOURCE = r"""
const long long ts = E * NFACES * N2;
#pragma unroll
for (int slot = 0; slot < 3; ++slot) {
    const long long fslot = point_faces[p * 3 + slot];
    if (fslot < 0) break;
    const long long fp = e * NFACES * N2 + fslot;
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


def element_sizes(order: int, dim: int = 3) -> tuple[int, int, int]:
    """(points per element, faces, points per face): (n^3, 6, n^2), or (n^2, 4, n) in 2-D."""
    return int(np.prod(element_shape(dim, order))), num_faces(dim), int(np.prod(face_shape(dim, order)))


def specialise(source: str, order: int, dim: int = 3) -> str:
    """``source`` with NFACES, N3 (points per element) and N2 (points per face) filled in."""
    npe, nf, nfp = element_sizes(order, dim)
    return source.replace("NFACES", str(nf)).replace("N3", str(npe)).replace("N2", str(nfp))


def check_element_shape(u, order: int, dim: int, what: str) -> None:
    """ValueError unless u is (6, E, *element_shape(dim, order)): a kernel compiled for one
    dimension would index another's arrays wrongly, without an error of its own."""
    if tuple(u.shape[2:]) != element_shape(dim, order):
        raise ValueError(f"{what}: compiled for a {dim}-D mesh of order {order} (element shape "
                         f"{element_shape(dim, order)}), got u of shape {tuple(u.shape)}")


def face_point_table(order: int, dim: int = 3) -> np.ndarray:
    """(F P,) offsets in an element's points of face f's point (a, b), at f P + a n + b (F faces
    of P points: 6 of n^2, or 4 of n in 2-D)."""
    npe = element_sizes(order, dim)[0]
    volume = np.arange(npe).reshape(element_shape(dim, order))
    return np.concatenate([volume[face_slice(f, order)].reshape(-1) for f in range(num_faces(dim))]).astype(np.int64)


class ListedTraces:
    """traces(u, normals, out, elements, count): the traces of ``count`` listed elements."""

    def __init__(self, backend, order: int, dim: int = 3):
        xp = backend.xp
        self.order, self.dim, self.xp = order, dim, xp
        _, nf, nfp = element_sizes(order, dim)
        self.per_element = nf * nfp
        self.table = backend.asarray(face_point_table(order, dim), dtype=np.int64)
        self.kernel = xp.ElementwiseKernel(
            "raw T u, raw T normals, raw int64 elements, raw int64 face_points, int64 E", "raw T out",
            specialise(_TRACES, order, dim), f"lobatto_listed_traces_{order}_{dim}d")

    def __call__(self, u, normals, out, elements, count: int):
        if count:
            check_element_shape(u, self.order, self.dim, "ListedTraces")
            # flat views: a raw CArray of many dimensions unravels every index with divisions
            self.kernel(u.reshape(-1), normals.reshape(-1), elements, self.table, np.int64(u.shape[1]), out.reshape(-1),
                        size=count * self.per_element)


def point_face_table(order: int, dim: int = 3) -> np.ndarray:
    """(P, 3): for each of an element's P points, its slots f P_f + ab on the element's faces
    (an interior point has none, a face point one, an edge point two, a corner three; two at
    most in 2-D), -1 after."""
    npe = element_sizes(order, dim)[0]
    table = np.full((npe, 3), -1, dtype=np.int64)
    filled = np.zeros(npe, dtype=np.int64)
    for slot, point in enumerate(face_point_table(order, dim)):
        table[point, filled[point]] = slot
        filled[point] += 1
    return table


class PointUpdate:
    """What the terms' kernels share. Each is compiled twice (FOLD): after the stage kernel it
    adds dt S to the residual and b dt S to u, and given the fused path's trace buffer it
    rewrites the traces of the points it changed; before the stage kernel, for a stage whose
    a is not 0, it adds (dt / a) S to the residual alone, which the kernel's a * residual turns
    into dt S, so u is neither read back nor its traces rewritten."""

    def setup_points(self, backend, order: int, dim: int = 3) -> None:
        self.order, self.dim = order, dim
        self.unused = backend.zeros(1)  # stands for traces and normals when none are written
        self.point_faces = backend.asarray(point_face_table(order, dim).reshape(-1), dtype=np.int64)

    def check_shape(self, u) -> None:
        """ValueError where u is not of the dimension the kernel was compiled for."""
        check_element_shape(u, self.order, self.dim, type(self).__name__)

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
