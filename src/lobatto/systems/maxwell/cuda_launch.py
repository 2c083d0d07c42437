"""Launch configuration and cost models of the CUDA Maxwell kernels (kernels/maxwell.cu), as
plain arithmetic that needs no GPU: elements per block, threads, shared memory, the face
phase and the curl variant (SPLIT) for an order and precision; the bytes and flops per
element of a stage, an rhs and a traces pass (the roofline and the benchmarks use them).
cuda.py launches with these and re-exports them.
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


def shared_bytes(order: int, itemsize: int, epb: int, face_phase: bool = False, split: int = 0) -> int:
    n, rs, _, es = padded_dims(order)
    fields = 6 + (9 if split == 1 else 0)  # u, and J a^b of curved elements
    return (n * rs + epb * fields * es + (epb * 36 * n * n if face_phase else 0)) * itemsize


def split_mode(order: int, itemsize: int, max_shared: int, curved: bool) -> int:
    """kernels/maxwell.cu's SPLIT for a mesh: 0 when every element is affine; else 1 where J a^b
    of one element fits in shared memory beside its fields, 2 where it does not (float64 from
    N = 12, float32 at N = 15 on an H100)."""
    if not curved:
        return 0
    return 1 if shared_bytes(order, itemsize, 1, False, 1) <= max_shared else 2


def default_launch(order: int, dtype, max_shared: int, split: int = 0) -> LaunchConfig:
    n3 = (order + 1) ** 3
    itemsize = np.dtype(dtype).itemsize
    epb = max(1, TARGET_BLOCK_POINTS // n3)

    def shared(epb, face_phase=False):
        return shared_bytes(order, itemsize, epb, face_phase, split)

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
def stage_bytes(order: int, itemsize: int, affine: bool = False, read_residual: bool = True) -> float:
    """Fewest device-memory bytes per element of the fused stage kernel.

    u read + written (12 n^3), residual read + written (12 n^3; written only when a = 0),
    metrics (9 n^3 and J n^3, or 9 per element when affine), sums (36 n^2), normals (18 n^2),
    lift (6 n^2), face factors (12 per element).
    """
    n = order + 1
    values = 12 * n**3 + (12 if read_residual else 6) * n**3
    values += 9 if affine else 10 * n**3
    values += 60 * n**2 + 12
    return float(values * itemsize)


def rhs_bytes(order: int, itemsize: int, affine: bool = False) -> float:
    n = order + 1
    values = 6 * n**3 + 6 * n**3 + (9 if affine else 10 * n**3) + 60 * n**2 + 12
    return float(values * itemsize)


def traces_bytes(order: int, itemsize: int) -> float:
    """Face values of u (each distinct point once), normals, traces written; per element."""
    n = order + 1
    face_points = n**3 - max(n - 2, 0) ** 3
    return float((6 * face_points + 18 * n**2 + 36 * n**2) * itemsize)


def stage_flops(order: int) -> float:
    """Flops per point of one stage as the seed paper counts them: 36(N+1) + 84."""
    return 36.0 * (order + 1) + 84.0
