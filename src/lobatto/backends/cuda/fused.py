"""Whole lsrk45 steps with the face exchange folded into the stage kernel (one rank).

The solver's stage (MaxwellSystem.stage) runs three passes over the face data: the traces
kernel, the gather-scatter (take, gather, scatter) and the fused stage kernel that reads the
sums. On one rank with a conforming mesh every face point has at most one partner, so the
exchange is a pairwise sum, and the stage kernel can do it itself:

    sums(fp) = own trace (recomputed from u in shared memory) + trace_in[partner(fp)]

and write the traces of the updated u for the next stage (`trace_out`, ping-pong buffers).
A step is then one traces kernel (for the traces of u at the start of the step, so that the
step depends on u alone and can be recorded as a CUDA graph) and one kernel per stage.

    step = FusedExchangeStepper(system, stepper)
    step(u, t, dt)           # the same update as stepper.step(u, t, dt), to round-off

Same results as the solver's path up to the order of floating-point operations (the test
compares them). CudaBackend.whole_step returns it on one rank, so the solver uses it there;
across ranks MaxwellSystem's stages with the gather-scatter run. Byte counts: docs/cuda.md.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.backends.cuda.maxwell import MaxwellKernels


def partner_map(ids: np.ndarray) -> np.ndarray:
    """For each face point, the flat index of the other point with its id, or -1 if none.

    Raises ValueError if an id occurs more than twice (not a conforming one-rank mesh).
    """
    ids = np.asarray(ids).reshape(-1)
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    same = s[1:] == s[:-1]
    if np.any(same[1:] & same[:-1]):
        raise ValueError("fused exchange: a face-point id occurs more than twice")
    if np.any(s == 0):
        raise ValueError("fused exchange: face-point id 0 (not participating) is not supported")
    first = np.flatnonzero(same)
    partner = np.full(ids.size, -1, dtype=np.int64)
    partner[order[first]] = order[first + 1]
    partner[order[first + 1]] = order[first]
    return partner


class FusedExchangeStepper:
    """lsrk45-type (2N-storage) steps of a MaxwellSystem on the CUDA backend, exchange fused."""

    def __init__(self, system, stepper):
        from lobatto.mesh import face_point_ids

        backend = system.backend
        if backend.name != "cuda":
            raise ValueError("the fused exchange needs the CUDA backend")
        if getattr(system.exchange, "comm", None) is not None:
            raise ValueError("the fused exchange works on one rank only (the gather-scatter has a communicator)")
        scheme = stepper.scheme
        if not hasattr(scheme, "A"):
            raise ValueError(f"the fused exchange needs a 2N-storage scheme, not {scheme.name!r}")
        self.system, self.stepper, self.scheme = system, stepper, scheme
        self.backend = backend
        self.order = system.order
        n = self.order + 1
        e = system.num_elements
        partner = partner_map(face_point_ids(system.mesh, self.order))
        if partner.max(initial=0) >= 2**31:
            raise ValueError("fused exchange: more than 2**31 face points")
        self.partner = backend.asarray(partner, dtype=np.int32)
        self.buffers = [backend.zeros((6, e, 6, n, n)), backend.zeros((6, e, 6, n, n))]
        self.residual = stepper.residual
        self._traces = backend.kernel("maxwell_traces", order=self.order)
        self.kernels = MaxwellKernels(backend, self.order)

    def _function(self, dtype):
        funcs, cfg = self.kernels.kernels(dtype)
        return funcs["stage_pairs"], cfg

    def stage(self, u, stage_index, a, b, dt, write_traces=True):
        """One stage: reads buffers[stage % 2], writes buffers[(stage + 1) % 2]."""
        system = self.system
        g = self.kernels.geometry_args(system.device_geometry, u.dtype)
        fn, cfg = self._function(u.dtype)
        e = u.shape[1]
        t = u.dtype.type
        trace_in = self.buffers[stage_index % 2]
        trace_out = self.buffers[(stage_index + 1) % 2]
        metrics, compact, affine, use_affine, normals, lift, factors, d = g
        args = (
            u,
            self.residual,
            trace_in,
            trace_out,
            self.partner,
            np.int32(1 if write_traces else 0),
            metrics,
            compact,
            affine,
            use_affine,
            normals,
            lift,
            factors,
            d,
            np.int64(e),
            np.int32(cfg.elements_per_block),
            *MaxwellKernels.material(u.dtype, system.epsilon, system.mu, system.alpha),
            t(a),
            t(b),
            t(dt),
        )
        fn((math.ceil(e / cfg.elements_per_block),), (cfg.threads,), args, shared_mem=cfg.shared_bytes)

    def step(self, u, t, dt):
        s = self.scheme
        self._traces(u, self.system.device_geometry["normals"], self.buffers[0])
        last = len(s.A) - 1
        for i, (a, b) in enumerate(zip(s.A, s.B)):
            self.stage(u, i, a, b, dt, write_traces=i < last)

    __call__ = step
