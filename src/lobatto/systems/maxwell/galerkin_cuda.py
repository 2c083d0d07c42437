"""The Galerkin volume form's CUDA kernel (kernels/galerkin.cu): its 1D matrices, launch and
arguments.

``GalerkinCuda(backend, operator)(u, sums, factors, out, epsilon, mu, alpha)`` computes what
``WeightAdjustedOperator.rhs`` computes (galerkin.py, the reference: the skew volume term
(B + B_w) / 2, any Q >= N + 1; an operator with volume = "strong" gets no kernel), and ``.stage(...)`` a whole
low-storage Runge-Kutta stage with it, from the operator's own arrays (weighted_cofactors,
inverse_jacobian_weights, normals, face_weights) and 1D matrices built here once: V, V D, their
transposes, V M^-1 and M^-1 V^T (M the exact 1D mass); at Q = N + 1 (the default rule)
galerkin_square_kernel instead, the whole rhs at the Gauss points with their own derivative
D_G = V D V^-1 (kernels/galerkin.c's square_rhs; square_matrices; about 0.6 of the general
passes' flops, see benchmarks/galerkin_cuda_speed.py), unless its block does not fit (float64
from N = 16: then the general passes). Affine elements (galerkin_cpu.
affine_constants, as the C kernel) take galerkin_affine_kernel's closed form, one thread per
node; the others one block of ``threads`` threads per (element, field triple), two Gauss planes
per pass where that costs no resident block (default_planes; an odd Q takes one); the general
passes' shared memory is ``shared_values(P, Q, planes)`` values (float64, one plane, Q = quadrature_points(N)
= N + 1: 25.5 KiB at N = 7, 70.9 KiB at N = 11, 128 KiB at N = 14, 205 KiB at N = 17). Where one
plane does not fit the device (on an H100, 227 KiB: float64 from N = 18, 238 KiB; float32 from
N = 24) ``kernel_for`` returns None and the array code runs; with the strong form's rule
Q = max(ceil(3N / 2), N + 1) before the skew form, float64 stopped at N = 16 and float32 at 21.
The square kernel's is ``square_shared_values(P)`` (two buffers of 3 Q^3 values, rows padded to
an odd length, and the 1D matrices; float64: 30.7 KiB at N = 7, 92.5 KiB at N = 11, 166 KiB at
N = 14, 212 KiB at N = 15; float32 to N = 20).
With a per-point medium (operator.medium, galerkin_media.py) the same two kernels' media
instantiations (galerkin_rhs_media_kernel, galerkin_square_media_kernel; MEDIUM, and LOSS with a
conductor: the uniform instantiations' code is unchanged) read the medium's w / (J eps_c),
w / (J mu_c) rows, its face coefficients a, b, c, d and w J sigma, and every element takes the
block kernel (the affine closed form has no medium). The square kernel's faces then carry 9
components instead of 6 (square_shared_values(P, medium=True): more shared memory below N = 11).
Nothing allocates once compiled and nothing waits for the host, so a step can be recorded as a
CUDA graph.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from lobatto.backends.base import check_kernel_arrays
from lobatto.discretization import derivative_matrix, interpolation_matrix
from lobatto.jit.nvrtc import ctype, get_module, run_into
from lobatto.systems.maxwell.galerkin_cpu import affine_constants

SOURCE = Path(__file__).resolve().parent / "kernels" / "galerkin.cu"


def shared_values(p: int, q: int, planes: int = 1) -> int:
    """Values of shared memory per block: GalerkinLayout<P, Q, planes>::SIZE in galerkin.cu
    (regions at even offsets, volume rows of an even length, plane buffers for ``planes`` planes)."""
    ps = p + p % 2
    buffers = 9 * q * ps + 12 * q * q  # R2, R3 of one plane (R1 shares R3)
    return 6 * q * p + 3 * p ** 3 + (3 * p ** 3) % 2 + planes * buffers


def square_shared_values(p: int, medium: bool = False) -> int:
    """Values of shared memory per block of galerkin_square_kernel (Q = P): GalerkinSquareLayout<P, medium>::SIZE
    (with a medium the faces' scratch holds 9 components instead of 6)."""
    q2, cs = p * p, p * p * (p | 1)
    mats = 4 * q2 + 3 * p
    return mats + mats % 2 + 3 * cs + max(3 * cs, (2 * (9 if medium else 6) + 18) * q2)


def default_threads(q: int) -> int:
    """One thread per Gauss point of a plane (the heaviest pass), in whole warps, 64 to 1024."""
    return int(min(1024, max(64, 32 * -(-q * q // 32))))


def default_min_blocks(p: int, q: int, itemsize: int, threads: int, max_shared: int = 227 * 1024,
                       planes: int = 1) -> int:
    """Blocks per SM the kernel's registers must allow (its __launch_bounds__): as many as the
    shared memory and the SM's 2048 threads hold, with at least 80 registers a thread. nvcc 13.0
    -Xptxas -v, sm_90, float64, one plane, Q = N + 1: N = 7 (64 threads) 186 registers unbounded,
    128 at 8 blocks (the default), 96 and 48 bytes of spills at 10, 80 and 208 bytes at 12;
    N = 11 (160 threads) 220 unbounded, 168 at 2, 128 and 96 bytes of spills at 3 (the default),
    96 and 288 bytes at 4. Not measured on a GPU: benchmarks/galerkin_cuda_speed.py times other
    launches beside this one."""
    by_shared = max_shared // max(1, shared_values(p, q, planes) * itemsize)
    return int(max(1, min(by_shared, 2048 // threads, 65536 // (80 * threads), 32)))


def square_min_blocks(p: int, itemsize: int, threads: int, max_shared: int = 227 * 1024,
                      medium: bool = False) -> int:
    """galerkin_square_kernel's blocks per SM (its __launch_bounds__): as many as the shared memory
    and the SM's 2048 threads hold, with registers for a line pass's two lines of 3 Q values
    (f_G and G_b) besides about 64, in whole 32s: nvcc 13.0 -Xptxas -v, sm_90, float64, N = 7 (64
    threads): 160 registers unbounded, 128 with 64 bytes of spills at 7 blocks, none at 6 (the
    default); N = 5: 4 bytes at 7, none at 6 (the default). From N = 11 the estimate (224 at
    N = 11, 12 in float64) left one block per SM; capped at 168 registers (2 blocks) the step ran
    in 2.713 against 3.647 ms at N = 11 (160 threads) and 3.465 against 4.323 at N = 12 (192),
    H100, float64, benchmarks/galerkin_cuda_speed.py (notes-curved-maxwell.md section 11),
    although the cap spills: 168 / 224 bytes of spill stores / loads at N = 11, 324 / 360 at
    N = 12 (nvcc 13.0 -Xptxas -v, sm_90; none at N = 9 (168 registers) nor in float32 at N = 11)."""
    registers = min(255, 32 * -(-(3 * 2 * p * max(1, itemsize // 4) + 64) // 32))
    if p >= 12:
        registers = min(registers, 168)
    by_shared = max_shared // max(1, square_shared_values(p, medium) * itemsize)
    return int(max(1, min(by_shared, 2048 // threads, 65536 // (registers * threads), 32)))


def default_planes(p: int, q: int, itemsize: int, threads: int, max_shared: int = 227 * 1024) -> int:
    """Gauss planes per pass: 2 (half the barriers, twice the work items per pass) where their
    buffers fit and cost no resident block (default_min_blocks), else 1. Not measured on a GPU:
    benchmarks/galerkin_cuda_speed.py times the other choice beside it."""
    if q % 2 or shared_values(p, q, 2) * itemsize > max_shared:
        return 1
    one = default_min_blocks(p, q, itemsize, threads, max_shared, 1)
    return 2 if default_min_blocks(p, q, itemsize, threads, max_shared, 2) >= one else 1


def matrices(order: int, points: int) -> np.ndarray:
    """V, V D, the pairs (V^T, (V D)^T) (P x Q x 2), V M^-1, M^-1 V^T (float64, 6 Q P values): the
    kernel's order."""
    xg, wg = np.polynomial.legendre.leggauss(points)
    v = interpolation_matrix(order, xg)
    vd = v @ derivative_matrix(order)
    wt = v @ np.linalg.inv(v.T @ (wg[:, None] * v))  # V M^-1, M the exact 1D mass
    return np.concatenate([m.ravel() for m in (v, vd, np.stack([v.T, vd.T], axis=-1), wt, wt.T)])


def square_matrices(order: int) -> np.ndarray:
    """galerkin_square_kernel's (Q = P = N + 1): V, V^T, D_G = V D V^-1, A^T (A = V M^-1),
    w_q A[q][0, P - 1] (Q x 2), 1 / w (float64, 4 P^2 + 3 P values)."""
    xg, wg = np.polynomial.legendre.leggauss(order + 1)
    v = interpolation_matrix(order, xg)
    a = v @ np.linalg.inv(v.T @ (wg[:, None] * v))
    dg = v @ derivative_matrix(order) @ np.linalg.inv(v)
    wa = wg[:, None] * a[:, [0, -1]]
    return np.concatenate([m.ravel() for m in (v, v.T, dg, a.T, wa, 1.0 / wg)])


def affine_matrices(order: int, points: int) -> np.ndarray:
    """D (P x P), then the columns 0 and P - 1 of M^-1 (M the exact 1D mass): galerkin_affine_kernel's."""
    xg, wg = np.polynomial.legendre.leggauss(points)
    v = interpolation_matrix(order, xg)
    inverse = np.linalg.inv(v.T @ (wg[:, None] * v))
    return np.concatenate([derivative_matrix(order).ravel(), inverse[:, 0], inverse[:, -1]])


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


class GalerkinCuda:
    """The compiled rhs of one operator, per dtype (compiled on first use)."""

    def __init__(self, backend, operator, threads: int | None = None, min_blocks: int | None = None,
                 planes: int | None = None, square: bool | None = None):
        if getattr(operator, "volume", "skew") != "skew":
            raise ValueError(f"the CUDA kernel computes the skew volume term only, not {operator.volume!r} "
                             "(kernel_for: None, the array code runs it)")
        self.backend, self.operator = backend, operator
        self.medium = getattr(operator, "medium", None)  # per-point media (galerkin_media.py): the media kernels
        self.p, self.q = operator.order + 1, operator.points
        # Q = N + 1: galerkin_square_kernel (the whole rhs at the Gauss points) unless square=False
        # (the general passes, kept for comparisons) or its block does not fit the device
        self.square = self.q == self.p if square is None else bool(square)
        if self.square and self.q != self.p:
            raise ValueError(f"the square kernel needs Q = N + 1, not Q = {self.q} at N = {operator.order}")
        self.threads = default_threads(self.q) if threads is None else int(threads)
        self.min_blocks = min_blocks  # None: default_min_blocks per dtype
        self.planes = planes  # None: default_planes per dtype
        self._host_matrices = square_matrices(operator.order) if self.square else matrices(operator.order,
                                                                                          operator.points)
        self._host_affine = affine_matrices(operator.order, operator.points)
        # the elements of the block kernel (curved) and of the closed form (affine), and the latter's
        # constants; with a medium every element takes the block kernel (the closed form has none)
        if self.medium is not None:
            flat, constants = np.zeros(operator.weighted_cofactors.shape[2], dtype=bool), None
            # the raw pointers need C order (GalerkinMedium.to gives it: no copy then)
            xp, loss = backend.xp, self.medium.loss_weights
            self._media = tuple(None if a is None else xp.ascontiguousarray(a)
                                for a in (self.medium.inverse_weights, self.medium.flux, loss))
        else:
            flat, constants = affine_constants(SimpleNamespace(points=operator.points, **{
                name: _host(getattr(operator, name))
                for name in ("weighted_cofactors", "inverse_jacobian_weights", "normals", "face_weights")}))
        self.affine_elements = int(flat.sum())
        self._curved = backend.asarray(np.flatnonzero(flat == 0).astype(np.int64), dtype=np.int64)
        self._affine = backend.asarray(np.flatnonzero(flat).astype(np.int64), dtype=np.int64)
        self._host_constants = constants
        self._compiled: dict = {}
        self._affine_compiled: dict = {}
        self._update: dict = {}  # dtype name -> the stage update kernel
        self._faces: dict = {}  # dtype name -> the face values kernel
        self._stage_buffer: dict = {}  # (shape, dtype) -> du of stage()

    def launch(self, dtype) -> tuple[int, int]:
        """(blocks per SM, planes per pass) of the launch in this dtype."""
        size, limit = np.dtype(dtype).itemsize, self.backend.max_shared_per_block
        if self.square:
            medium = self.medium is not None
            return self.min_blocks or square_min_blocks(self.p, size, self.threads, limit, medium), 1
        planes = self.planes or default_planes(self.p, self.q, size, self.threads, limit)
        return self.min_blocks or default_min_blocks(self.p, self.q, size, self.threads, limit, planes), planes

    def shared_bytes(self, dtype) -> int:
        if self.square:
            return square_shared_values(self.p, self.medium is not None) * np.dtype(dtype).itemsize
        return shared_values(self.p, self.q, self.launch(dtype)[1]) * np.dtype(dtype).itemsize

    def fits(self, dtype) -> bool:
        return self.shared_bytes(dtype) <= self.backend.max_shared_per_block

    def function(self, dtype):
        dtype = np.dtype(dtype)
        entry = self._compiled.get(dtype.name)
        if entry is None:
            blocks, planes = self.launch(dtype)
            name = (f"lobatto::galerkin_square_kernel<{self.p}, {ctype(dtype)}, {self.threads}, {blocks}>"
                    if self.square else f"lobatto::galerkin_rhs_kernel<{self.p}, {self.q}, {ctype(dtype)}, "
                    f"{self.threads}, {blocks}, {planes}>")
            if self.medium is not None:  # the media instantiation: LOSS with a conductor
                loss = "true" if self.medium.loss_weights is not None else "false"
                name = name.replace("_kernel<", "_media_kernel<")[:-1] + f", {loss}>"
            fn = get_module(SOURCE, (name,)).get_function(name)
            smem = self.shared_bytes(dtype)
            if smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = smem
            if fn.max_threads_per_block < self.threads:
                raise ValueError(f"{name}: {self.threads} threads per block, but its registers allow "
                                 f"{fn.max_threads_per_block}")
            mats = self.backend.asarray(self._host_matrices, dtype=dtype)
            entry = self._compiled[dtype.name] = (fn, smem, mats)
        return entry

    def affine_function(self, dtype):
        """(the closed form's kernel, its 1D matrices, the elements' constants) in this dtype."""
        dtype = np.dtype(dtype)
        entry = self._affine_compiled.get(dtype.name)
        if entry is None:
            name = f"lobatto::galerkin_affine_kernel<{self.p}, {ctype(dtype)}>"
            fn = get_module(SOURCE, (name,)).get_function(name)
            entry = self._affine_compiled[dtype.name] = (
                fn, self.backend.asarray(self._host_affine, dtype=dtype),
                self.backend.asarray(self._host_constants, dtype=dtype))
        return entry

    def __call__(self, u, sums, factors, out, epsilon, mu, alpha):
        op, p, q = self.operator, self.p, self.q
        xp, dtype, e = self.backend.xp, u.dtype, u.shape[1]
        sums = xp.ascontiguousarray(sums)
        check_kernel_arrays("galerkin_rhs", dtype, [
            (u, (6, e, p, p, p), "u"), (sums, (6, e, 6, p, p), "sums"), (factors, (2, e, 6), "face_factors"),
            (op.weighted_cofactors, (3, 3, e, q, q, q), "weighted_cofactors"),
            (op.inverse_jacobian_weights, (e, q, q, q), "inverse_jacobian_weights"),
            (op.normals, (3, e, 6, q, q), "normals"), (op.face_weights, (e, 6, q, q), "face_weights")])
        if e == 0:
            return out
        if self.medium is not None:
            return self._media_call(u, sums, factors, out, alpha)
        fn, smem, mats = self.function(dtype)
        real = dtype.type
        impedance = (float(mu) / float(epsilon)) ** 0.5
        scalars = (real(1.0 / float(epsilon)), real(1.0 / float(mu)), real(float(alpha) / impedance),
                   real(float(alpha) * impedance))

        curved, affine = int(self._curved.size), int(self._affine.size)

        def launch(target):
            if curved:
                fn((2 * curved,), (self.threads,), (u, sums, factors, self._curved, op.weighted_cofactors,
                                                    op.inverse_jacobian_weights, op.normals, op.face_weights, mats,
                                                    target, *scalars, np.int64(e)), shared_mem=smem)
            if affine:
                afn, amats, constants = self.affine_function(dtype)
                n = affine * p ** 3
                afn((min(-(-n // 256), 65536),), (256,), (u, sums, factors, self._affine, np.int64(affine), constants,
                                                         amats, target, *scalars, np.int64(e)))

        return run_into(xp, out, launch)

    def _media_call(self, u, sums, factors, out, alpha):
        """The rhs with the medium: every element's block pair (no closed form), eps and mu in its
        arrays (the scalars epsilon, mu unused, as in WeightAdjustedOperator.loads)."""
        op, q, dtype, e = self.operator, self.q, u.dtype, u.shape[1]
        weights, flux, loss = self._media
        check_kernel_arrays("galerkin_rhs", dtype, [
            (weights, (6, e, q, q, q), "medium.inverse_weights"),
            (flux, (4, e, 6, q, q), "medium.flux")] + ([] if loss is None else [
            (loss, (e, q, q, q), "medium.loss_weights")]))
        fn, smem, mats = self.function(dtype)
        curved = int(self._curved.size)

        def launch(target):  # without a conductor the loss pointer is not read (LOSS false): the flux stands in
            fn((2 * curved,), (self.threads,), (u, sums, factors, self._curved, op.weighted_cofactors,
                                                weights, op.normals, op.face_weights, mats, target,
                                                flux, flux if loss is None else loss,
                                                dtype.type(float(alpha)), np.int64(e)), shared_mem=smem)

        return run_into(self.backend.xp, out, launch)

    def face_values(self, u, out):
        """out (6, E, 6, P, P) = u's values at its face points (systems/dg.face_values) in one
        kernel: the traces the exchange sums before each stage."""
        check_kernel_arrays("galerkin_face_values", u.dtype, [(u, (6, u.shape[1]) + (self.p,) * 3, "u"),
                                                             (out, (6, u.shape[1], 6, self.p, self.p), "out")])
        fn = self._faces.get(u.dtype.name)
        if fn is None:
            name = f"lobatto::galerkin_face_values_kernel<{self.p}, {ctype(u.dtype)}>"
            fn = self._faces[u.dtype.name] = get_module(SOURCE, (name,)).get_function(name)
        n = out.size
        if n:  # a rank without elements launches nothing
            fn((min(-(-n // 256), 65536),), (256,), (u, out, np.int64(u.shape[1])))
        return out

    def stage(self, u, residual, sums, factors, epsilon, mu, alpha, a, b, dt):
        """One low-storage Runge-Kutta stage: du = rhs(u) into a buffer kept here, then
        residual = a residual + dt du, u += b residual in one pass (galerkin_stage_update_kernel)."""
        du = self._stage_buffer.get((u.shape, u.dtype.str))
        if du is None:
            du = self._stage_buffer[(u.shape, u.dtype.str)] = self.backend.xp.empty(u.shape, dtype=u.dtype)
        self(u, sums, factors, du, epsilon, mu, alpha)
        check_kernel_arrays("galerkin_stage", u.dtype, [(residual, u.shape, "residual")])
        update = self._update.get(u.dtype.name)
        if update is None:
            name = f"lobatto::galerkin_stage_update_kernel<{ctype(u.dtype)}>"
            update = self._update[u.dtype.name] = get_module(SOURCE, (name,)).get_function(name)
        real, n = u.dtype.type, u.size
        if n:  # a rank without elements launches nothing
            update((min(-(-n // 256), 65536),), (256,), (u, residual, du, real(a), real(b), real(dt), np.int64(n)))
        return u


def kernel_for(backend, operator) -> GalerkinCuda | None:
    """The CUDA kernel of ``operator`` (with its per-point medium, if any) on a CUDA backend
    whose shared memory holds its blocks; None elsewhere (the array code runs), and for an
    operator whose volume term is not the skew form (volume = "strong", kept for comparisons:
    the kernel computes the skew form only)."""
    if getattr(backend, "name", None) != "cuda" or getattr(operator, "volume", "skew") != "skew":
        return None
    kernel = GalerkinCuda(backend, operator)
    if kernel.square and not kernel.fits(backend.dtype):  # N + 1 beyond the square block: the general passes
        kernel = GalerkinCuda(backend, operator, square=False)
    return kernel if kernel.fits(backend.dtype) else None
