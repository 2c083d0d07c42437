"""CUDA Maxwell kernels (kernels/maxwell.cu): launch configuration, argument marshalling,
byte and flop models.

The factories registered as the CUDA backend's tuned kernels return callables with the
reference kernels' signatures (reference.py):

    traces(u, normals, out)
    rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None)
    stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None)

Each factory takes the mesh's dimension ``dim`` (3 by default; 2: the thin (6, E, 1, n, n)
layout of reference.py, compiled as kernels/maxwell.cu's DIM = 2).

Arrays must be C-contiguous CuPy arrays of the backend's dtype (the system allocates them
so). Nothing here allocates once the first call for a geometry is done, and nothing
synchronises with the host, so a whole time step can be recorded as a CUDA graph.

Tuning runs may set ``backend.launch_overrides[(order, dtype name)] = (elements per block,
threads[, maxrregcount[, face phase]])`` before the first launch of that order (the key
``(order, dtype name, 2)`` for a 2-D mesh). The default
launch and the byte and flop models are cuda_launch.py's (importable from here too).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from pathlib import Path

from lobatto.backends.base import element_bounds, tuned_kernel
from lobatto.jit.nvrtc import ctype, get_module
from lobatto.systems.maxwell.cuda_launch import (  # the launch arithmetic and models, importable here as before
    FACE_PHASE_SHARE,
    MULTI_ELEMENT_SHARED,
    TARGET_BLOCK_POINTS,
    LaunchConfig,
    default_launch,
    element_sizes,
    padded_dims,
    rhs_bytes,
    shared_bytes,
    split_mode,
    stage_bytes,
    stage_flops,
    traces_bytes,
)

SOURCE = Path(__file__).resolve().parent / "kernels" / "maxwell.cu"


class _LRU(OrderedDict):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def put(self, key, value):
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class MaxwellKernels:
    """Compiled kernels of one order, per dtype, and the geometry-derived arrays they need."""

    def __init__(self, backend, order: int, dim: int = 3):
        self.backend = backend
        self.order = int(order)
        self.n = self.order + 1
        self.dim = int(dim)
        self.points, self.faces, self.face_points = element_sizes(self.order, self.dim)
        #: u's (k, j, i) axes: (1, n, n) on a 2-D mesh
        self.element_shape = (self.n if self.dim == 3 else 1, self.n, self.n)
        #: backend.launch_overrides key (3-D keeps the (order, dtype name) of before)
        self._override_key = (lambda name: (self.order, name)) if self.dim == 3 else (
            lambda name: (self.order, name, self.dim))
        self._compiled: dict = {}
        self._threads: dict = {}  # threads per block of each kernel, per compiled set
        self._traces: dict = {}
        self._compact = _LRU(4)
        self._curved = _LRU(4)
        #: None: SPLIT from the mesh (split_mode); 0, 1 or 2 forces it (benchmarks compare the forms)
        self.split_override: int | None = None
        self._dummy: dict = {}

    # Compilation ----------------------------------------------------------------------------
    def config(self, dtype, curved: bool = False) -> LaunchConfig:
        dtype = np.dtype(dtype)
        split = split_mode(self.order, dtype.itemsize, self.backend.max_shared_per_block, curved, self.dim)
        if self.split_override is not None:
            split = self.split_override
        override = self.backend.launch_overrides.get(self._override_key(dtype.name))
        if override is not None:
            epb, threads = override[0], override[1]
            maxreg = (override[2] or None) if len(override) > 2 else None
            fp = bool(override[3]) if len(override) > 3 else True
            smem = shared_bytes(self.order, dtype.itemsize, epb, fp, split, self.dim)
            if fp and smem > self.backend.max_shared_per_block:
                fp, smem = False, shared_bytes(self.order, dtype.itemsize, epb, False, split, self.dim)
            return LaunchConfig(epb, threads, smem, maxreg, fp, split)
        return default_launch(self.order, dtype, self.backend.max_shared_per_block, split, self.dim)

    def traces_function(self, dtype):
        """The traces kernel alone (it takes no launch configuration, so no element kernels)."""
        dtype = np.dtype(dtype)
        fn = self._traces.get(dtype.name)
        if fn is None:
            name = f"lobatto::maxwell_traces_kernel<{self.order}, {self.dim}, {ctype(dtype)}>"
            fn = self._traces[dtype.name] = get_module(SOURCE, (name,), ()).get_function(name)
        return fn

    def kernels(self, dtype, curved: bool = False):
        dtype = np.dtype(dtype)
        cfg = self.config(dtype, curved)
        key = (dtype.name, cfg)
        entry = self._compiled.get(key)
        if entry is None:
            t = ctype(dtype)
            fp = "true" if cfg.face_phase else "false"
            sp = int(cfg.split)
            o = f"{self.order}, {self.dim}"  # N, DIM: only this pair is instantiated
            names = {
                "rhs": f"lobatto::maxwell_rhs_kernel<{o}, {t}, {fp}, {sp}>",
                "rhs_medium": f"lobatto::maxwell_rhs_medium_kernel<{o}, {t}, {fp}, {sp}>",
                "stage": f"lobatto::maxwell_stage_kernel<{o}, {t}, {fp}, {sp}>",
                "stage_pairs": f"lobatto::maxwell_stage_pairs_kernel<{o}, {t}, {fp}, false, {sp}>",
                "stage_ghosts": f"lobatto::maxwell_stage_pairs_kernel<{o}, {t}, {fp}, true, {sp}>",
                "stage_pairs_medium": f"lobatto::maxwell_stage_pairs_medium_kernel<{o}, {t}, {fp}, false, {sp}>",
                "stage_ghosts_medium": f"lobatto::maxwell_stage_pairs_medium_kernel<{o}, {t}, {fp}, true, {sp}>",
            }
            options = () if cfg.maxrregcount is None else (f"--maxrregcount={cfg.maxrregcount}",)
            module = get_module(SOURCE, tuple(names.values()), options)
            funcs = {k: module.get_function(v) for k, v in names.items()}
            explicit = self._override_key(dtype.name) in self.backend.launch_overrides
            threads = {}
            for k in names:
                if cfg.shared_bytes > 48 * 1024:
                    funcs[k].max_dynamic_shared_size_bytes = cfg.shared_bytes
                allowed = funcs[k].max_threads_per_block
                if allowed < cfg.threads and explicit:
                    raise ValueError(
                        f"launch of {names[k]}: {cfg.threads} threads per block, but its registers allow "
                        f"{allowed}; use fewer threads or a maxrregcount"
                    )
                # a default launch gives a kernel with more registers fewer threads (each walks
                # more points): the medium and split variants at high orders need it
                threads[k] = min(cfg.threads, 32 * (allowed // 32))
            self._threads[key] = threads
            entry = self._compiled[key] = (funcs, cfg)
        return entry

    def threads(self, dtype, kind: str, curved: bool = False) -> int:
        """Threads per block that kernel ``kind`` launches with (compiles the set if needed)."""
        _, cfg = self.kernels(dtype, curved)
        return self._threads[(np.dtype(dtype).name, cfg)][kind]

    # Arguments ------------------------------------------------------------------------------
    def dummy_array(self, dtype):
        """A small device array passed for a pointer argument the launch does not read."""
        import cupy

        d = self._dummy.get(dtype)
        if d is None:
            d = self._dummy[dtype] = cupy.zeros(9, dtype=dtype)
        return d

    def compact_metrics(self, metrics):
        """(E, 9) metrics at each element's first point, [b * 3 + a]; cached per array."""
        key = (metrics.data.ptr, metrics.shape, metrics.dtype.str)
        hit = self._compact.get(key)
        if hit is not None:
            return hit[1]
        import cupy

        e = metrics.shape[2]
        compact = cupy.ascontiguousarray(metrics[:, :, :, 0, 0, 0].reshape(9, e).T)
        self._compact.put(key, (metrics, compact))  # holding `metrics` keeps its address unique
        return compact

    def is_curved(self, geometry) -> bool:
        """Whether the split curl runs: some element is not affine and the system asks for the
        split form (geometry["split_form"]); cached per array, so the host reads the flags once."""
        if not geometry.get("split_form", True):
            return False  # the chain rule alone ([discretization] volume_form = "chain")
        affine = geometry.get("affine")
        if affine is None:
            return True
        key = (affine.data.ptr, affine.shape)
        hit = self._curved.get(key)
        if hit is None:
            hit = (affine, bool((affine == 0).any()))
            self._curved.put(key, hit)
        return hit[1]

    def geometry_args(self, geometry, dtype):
        metrics = geometry["metrics"]
        affine = geometry.get("affine")
        if affine is not None and affine.size:
            compact = self.compact_metrics(metrics)
            use_affine = np.int32(1)
        else:
            compact = self.dummy_array(dtype)
            affine = self.dummy_array(np.int8) if affine is None else affine
            use_affine = np.int32(0)
        return (
            metrics,
            geometry["jacobian"],
            compact,
            affine,
            use_affine,
            geometry["normals"],
            geometry["lift"],
            geometry["face_factors"],
            geometry["derivative"],
        )

    def check(self, u, *arrays):
        dtype = u.dtype
        if u.ndim != 5 or u.shape[0] != 6 or u.shape[2:] != self.element_shape:
            shape = ", ".join(str(x) for x in self.element_shape)
            raise ValueError(f"u must have shape (6, E, {shape}) for a {self.dim}-D mesh, got {u.shape}")
        for a in (u,) + arrays:
            if not a.flags.c_contiguous:
                raise ValueError("CUDA Maxwell kernels need C-contiguous arrays")
            if a.dtype != dtype and a.dtype != np.int8:
                raise TypeError(f"CUDA Maxwell kernels: mixed dtypes {dtype} and {a.dtype}")

    @staticmethod
    def material(dtype, epsilon, mu, alpha):
        t = np.dtype(dtype).type
        impedance = math.sqrt(mu / epsilon)
        return t(1.0 / epsilon), t(1.0 / mu), t(alpha / impedance), t(alpha * impedance)

    def launch(self, kind, u, leading, geometry, material, elements=None, trailing=(), check=(), extra=()):
        """Launch kernel ``kind`` ("rhs", "stage", "stage_pairs", "stage_ghosts") over
        ``elements`` (first, stop) of u. Every element kernel takes the same arguments:
        ``leading`` arrays, the geometry, (E, first, stop, elements per block), the material
        constants of ``material`` = (epsilon, mu, alpha), then ``trailing`` scalars, then
        ``extra`` arguments as they are (arrays, typed scalars). ``check`` lists arrays to
        check against u (shape, contiguity, dtype) first."""
        g = self.geometry_args(geometry, u.dtype)
        if check:
            self.check(u, *check, g[0], g[1], g[5], g[6], g[7], g[8])
        funcs, cfg = self.kernels(u.dtype, self.is_curved(geometry))
        threads = self._threads[(u.dtype.name, cfg)][kind]
        e = u.shape[1]
        first, stop = element_bounds(elements, e)
        if stop == first:
            return
        t = u.dtype.type
        args = (tuple(leading) + g
                + (np.int64(e), np.int64(first), np.int64(stop), np.int32(cfg.elements_per_block))
                + self.material(u.dtype, *material) + tuple(t(x) for x in trailing) + tuple(extra))
        grid = math.ceil((stop - first) / cfg.elements_per_block)
        funcs[kind]((grid,), (threads,), args, shared_mem=cfg.shared_bytes)


@tuned_kernel("cuda", "maxwell_traces")
def make_traces(backend, order, dim=3):
    mk = MaxwellKernels(backend, order, dim)
    per_element = mk.faces * mk.face_points

    def traces(u, normals, out):
        mk.check(u, normals, out)
        function = mk.traces_function(u.dtype)
        e = u.shape[1]
        total = e * per_element
        if total == 0:
            return out
        threads = 256
        grid = min(math.ceil(total / threads), backend.sm_count * 16)
        function((grid,), (threads,), (u, normals, out, np.int64(e)))
        return out

    traces.kernels = mk
    return traces


@tuned_kernel("cuda", "maxwell_rhs")
def make_rhs(backend, order, dim=3):
    mk = MaxwellKernels(backend, order, dim)

    def rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None):
        mk.launch("rhs", u, (u, out, sums), geometry, (epsilon, mu, alpha), elements, check=(sums, out))
        return out

    rhs.kernels = mk
    return rhs


def medium_arguments(mk, dtype, material) -> tuple:
    """The extra kernel arguments of a medium given per point (HeterogeneousMedium.arrays)."""
    sigma = material["sigma_over_epsilon"]
    has_sigma = sigma is not None
    # a diagonal eps, mu (anisotropy.py): (3, E, n, n, n) arrays read with component stride E n^3
    # ((3, E, 1, n, n) and E n^2 in 2-D)
    stride = int(material["inv_epsilon"][0].size) if material["inv_epsilon"].ndim == 5 else 0
    return (material["inv_epsilon"], material["inv_mu"], sigma if has_sigma else mk.dummy_array(dtype),
            material["flux_coefficients"], np.int32(has_sigma), np.int64(stride))


@tuned_kernel("cuda", "maxwell_rhs_materials")
def make_rhs_materials(backend, order, dim=3):
    """The reference's rhs(u, sums, geometry, out, material, alpha, elements) in one kernel:
    material = HeterogeneousMedium.arrays (with its "flux_coefficients", (4, E, 6, n, n);
    (4, E, 4, 1, n) in 2-D)."""
    mk = MaxwellKernels(backend, order, dim)

    def rhs(u, sums, geometry, out, material, alpha, elements=None):
        mk.launch("rhs_medium", u, (u, out, sums), geometry, (1.0, 1.0, alpha), elements, check=(sums, out),
                  extra=medium_arguments(mk, u.dtype, material))
        return out

    rhs.kernels = mk
    return rhs


@tuned_kernel("cuda", "maxwell_stage")
def make_stage(backend, order, dim=3):
    mk = MaxwellKernels(backend, order, dim)

    def stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None):
        mk.launch("stage", u, (u, residual, sums), geometry, (epsilon, mu, alpha), elements, (a, b, dt),
                  check=(residual, sums))

    stage.kernels = mk
    return stage
