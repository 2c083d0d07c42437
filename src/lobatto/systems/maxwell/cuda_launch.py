"""Launch configuration and cost models of the CUDA Maxwell kernels (kernels/maxwell.cu), as
plain arithmetic that needs no GPU: elements per block, threads, shared memory, the face
phase and the curl variant (SPLIT) for an order and precision; the bytes and flops per
element of a stage, an rhs and a traces pass (the roofline and the benchmarks use them).
cuda.py launches with these and re-exports them.

Every function takes the mesh's dimension ``dim`` (3 by default): a 2-D element has n^2
points, four faces of n points and a k axis of one point (kernels/maxwell.cu, DIM).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Points a block aims to own (several small elements share a block).
TARGET_BLOCK_POINTS = 512
#: Use the face phase when its shared memory is at most this share of the per-block limit.
FACE_PHASE_SHARE = 0.6
#: Shared memory a block of several elements may take (about four blocks per H100 SM).
MULTI_ELEMENT_SHARED = 56 * 1024


@dataclass(frozen=True)
class LaunchConfig:
    elements_per_block: int
    threads: int
    shared_bytes: int
    maxrregcount: int | None = None
    face_phase: bool = True  # kernels/maxwell.cu: FP
    split: int = 0  # kernels/maxwell.cu: SPLIT (0 chain rule, 1 split curl with J a^b in shared memory, 2 from device memory)


def padded_dims(order: int) -> tuple[int, int, int, int]:
    """(n, RS, PS, ES) as in kernels/common.cuh."""
    n = order + 1
    rs = n + 1 if n % 2 == 0 else n
    return n, rs, rs * n, rs * n * n


def element_sizes(order: int, dim: int = 3) -> tuple[int, int, int]:
    """(points per element, faces, points per face) of an order-``order`` element in ``dim``-D."""
    if dim not in (2, 3):
        raise ValueError(f"a Maxwell mesh has dimension 2 or 3, not {dim}")
    n = order + 1
    nz = n if dim == 3 else 1
    return nz * n * n, 2 * dim, nz * n


def shared_bytes(order: int, itemsize: int, epb: int, face_phase: bool = False, split: int = 0, dim: int = 3) -> int:
    n, rs, ps, _ = padded_dims(order)
    npe, nf, nfp = element_sizes(order, dim)
    es = ps * (n if dim == 3 else 1)  # one field of one element (kernels/maxwell.cu: MDims::ES)
    fields = 6 + (3 * dim if split == 1 else 0)  # u, and J a^b (b < dim) of curved elements
    return (n * rs + epb * fields * es + (epb * 6 * nf * nfp if face_phase else 0)) * itemsize


def split_mode(order: int, itemsize: int, max_shared: int, curved: bool, dim: int = 3) -> int:
    """kernels/maxwell.cu's SPLIT for a mesh: 0 when every element is affine; else 1 where J a^b
    of one element fits in shared memory beside its fields, 2 where it does not (3-D: float64
    from N = 12, float32 at N = 15 on an H100; 2-D elements always fit)."""
    if not curved:
        return 0
    return 1 if shared_bytes(order, itemsize, 1, False, 1, dim) <= max_shared else 2


def default_launch(order: int, dtype, max_shared: int, split: int = 0, dim: int = 3) -> LaunchConfig:
    n3 = element_sizes(order, dim)[0]  # points per element, n^dim
    itemsize = np.dtype(dtype).itemsize
    epb = max(1, TARGET_BLOCK_POINTS // n3)  # 2-D: n^2 points each, so more elements fill a block

    def shared(epb, face_phase=False):
        return shared_bytes(order, itemsize, epb, face_phase, split, dim)

    while epb > 1 and shared(epb) > max_shared:
        epb -= 1
    # The face phase costs shared memory; where it would take most of an SM's (N >= 12 in
    # float64 with 227 KB per block) the block count per SM is already one and the extra barrier
    # phases cost more than the coalesced face loads gain (benchmarks/notes-cuda.md, "Launch
    # defaults of systems/maxwell/cuda.py").
    face_phase = shared(epb, True) <= FACE_PHASE_SHARE * max_shared
    while epb > 1 and shared(epb, face_phase) > MULTI_ELEMENT_SHARED:
        epb -= 1  # small orders: keep several blocks resident per SM
    smem = shared(epb, face_phase)
    if smem > max_shared:
        raise ValueError(
            f"order {order} in {np.dtype(dtype)} needs {smem} bytes of shared memory per block; the device allows {max_shared}"
        )
    points = epb * n3
    # Few threads per block (several points each) leave room for more resident blocks, so one
    # block's loads overlap another's shared-memory work (benchmarks/notes-cuda.md, "Launch
    # defaults of systems/maxwell/cuda.py").
    threads = 192 if points <= 1024 else 512
    if split == 1 and 512 <= points <= 1024:
        threads = 256  # two blocks per SM (shared memory): more threads each hide more latency (N = 7: +9 %)
    if split == 2:
        threads = min(threads, 384)  # its kernels take about 168 registers a thread (ptxas, sm_90)
    threads = min(threads, 32 * math.ceil(points / 32))
    return LaunchConfig(epb, threads, smem, None, face_phase, split)


# Models -------------------------------------------------------------------------------------
def _metric_values(order: int, affine: bool, dim: int) -> int:
    """Metric values a kernel reads per element: metrics[b, a] for b, a < dim and J at every
    point (the curved elements' split form reads J; counted everywhere, as before), or the
    9 compact values of an affine element (4 of them in 2-D)."""
    return (9 if dim == 3 else 4) if affine else (dim * dim + 1) * element_sizes(order, dim)[0]


def stage_bytes(order: int, itemsize: int, affine: bool = False, read_residual: bool = True, dim: int = 3) -> float:
    """Fewest device-memory bytes per element of the fused stage kernel.

    u read + written (12 P, P = n^dim points), residual read + written (12 P; written only
    when a = 0), metrics (dim^2 P and J P, or dim^2 per element when affine), sums (6 F), normals
    (3 F), lift (F) with F = faces x points per face (6 n^2 in 3-D, 4 n in 2-D), face factors
    (2 per face).
    """
    npe, nf, nfp = element_sizes(order, dim)
    values = 12 * npe + (12 if read_residual else 6) * npe
    values += _metric_values(order, affine, dim)
    values += 10 * nf * nfp + 2 * nf
    return float(values * itemsize)


def rhs_bytes(order: int, itemsize: int, affine: bool = False, dim: int = 3) -> float:
    npe, nf, nfp = element_sizes(order, dim)
    values = 6 * npe + 6 * npe + _metric_values(order, affine, dim) + 10 * nf * nfp + 2 * nf
    return float(values * itemsize)


def traces_bytes(order: int, itemsize: int, dim: int = 3) -> float:
    """Face values of u (each distinct point once), normals, traces written; per element."""
    n = order + 1
    npe, nf, nfp = element_sizes(order, dim)
    face_points = npe - max(n - 2, 0) ** dim
    return float((6 * face_points + 9 * nf * nfp) * itemsize)


def stage_flops(order: int, dim: int = 3) -> float:
    """Flops per point of one stage as the seed paper counts them: 36(N+1) + 84 in 3-D, where
    36(N+1) are the 18 reference derivatives; 2-D does 12 of them, 24(N+1) + 84 (the 84
    pointwise flops counted as in 3-D: an upper bound there)."""
    return 12.0 * dim * (order + 1) + 84.0
