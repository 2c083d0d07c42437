"""The byte models of a Maxwell stage (fewest bytes: each input read once, each output written
once; docs/cuda.md) and the time of each kernel of a stage alone (``lobatto bench maxwell``,
``lobatto bench roofline``)."""

from __future__ import annotations

import numpy as np

from lobatto.integrators.tables import LowStorageScheme


def fused_byte_model(system, stepper) -> dict:
    """Bytes per stage of the fused-exchange step (lobatto.systems.maxwell.fused), averaged."""
    from lobatto.systems.maxwell import cuda as cm

    order, e, dim = system.order, system.num_elements, system.mesh.dim
    face_points = np.prod(cm.element_sizes(order, dim)[1:])  # 6 n^2 (3-D), 4 n (2-D)
    item = np.dtype(system.backend.dtype).itemsize
    frac = float(np.mean(system.geometry.affine))
    a_values = list(stepper.scheme.A)
    stages = len(a_values)
    total = e * cm.traces_bytes(order, item, dim)  # traces of u at the start of the step
    for i, a in enumerate(a_values):
        per = (frac * cm.stage_bytes(order, item, True, a != 0, dim)
               + (1 - frac) * cm.stage_bytes(order, item, False, a != 0, dim))
        # sums (6 values per face point) replaced by the partner's traces (6) and the partner
        # index (one int32); all but the last stage write the traces of the updated u (6)
        per += face_points * 4 + (6 * face_points * item if i < stages - 1 else 0)
        total += e * per
    return {"total_per_stage": total / stages, "per_point_per_stage": total / stages / system.points}


def byte_model(system, stepper) -> dict:
    """Bytes per stage of each kernel (fewest: each input read once, each output written once)."""
    from lobatto.systems.maxwell import cuda as cm

    order, e, dim = system.order, system.num_elements, system.mesh.dim
    item = np.dtype(system.backend.dtype).itemsize
    frac = float(np.mean(system.geometry.affine))  # affine elements read (E, dim^2) metrics
    a_values = list(stepper.scheme.A) if isinstance(stepper.scheme, LowStorageScheme) else [1.0]
    reads = sum(1 for a in a_values if a != 0) / len(a_values)  # stages that read the residual

    def per_element(affine):
        return (reads * cm.stage_bytes(order, item, affine, True, dim)
                + (1 - reads) * cm.stage_bytes(order, item, affine, False, dim))

    stage = e * (frac * per_element(True) + (1 - frac) * per_element(False))
    traces = e * cm.traces_bytes(order, item, dim)
    plan = system.exchange.plan
    vn = 6
    isz = 4 if plan.n < 2**31 else 8
    t, g, d = len(plan.perm), plan.ncompact, len(plan.dest_local)
    take = vn * t * item * 2 + t * isz
    gather = vn * t * item + vn * g * item + g * isz if g != t else 0
    scatter = vn * g * item + vn * d * item + 2 * d * isz
    combine = 2 * vn * t * item + t * isz + g * isz  # one pass: each participating value read + written
    if system.exchange.comm is None:  # serial: GatherScatter runs the one-pass compiled combine
        take, gather, scatter = combine, 0, 0
    total = stage + traces + take + gather + scatter
    return {
        "gs_combine": combine,
        "stage": stage,
        "traces": traces,
        "gs_take": take,
        "gs_gather": gather,
        "gs_scatter": scatter,
        "exchange": take + gather + scatter,
        "total_per_stage": total,
        "per_point_per_stage": total / system.points,
    }


#: index arrays of the gather-scatter's local phases (fields of its LocalPlan)
LOCAL_INDEX_NAMES = ("perm", "starts", "dest_local", "src_local")


def local_index_arrays(exchange, k) -> dict:
    """The gather-scatter ``exchange``'s local index arrays as kernel module ``k`` takes them
    (``k.asindex`` of each field of ``exchange.plan``, built once here), to time the take /
    gather / scatter / combine kernels of ``k`` (lobatto.comm.local_cuda) alone."""
    return {name: k.asindex(getattr(exchange.plan, name)) for name in LOCAL_INDEX_NAMES}


def kernel_times(system, stepper, u, dt, timer, calls=20) -> dict:
    """Seconds per call of each kernel of a stage, each timed alone."""
    g = system.device_geometry
    buf = system.trace_buffer
    times = {}
    times["traces"] = timer(lambda: system.traces_kernel(u, g["normals"], buf), calls)
    times["exchange"] = timer(lambda: system.exchange.apply(buf.reshape(6, -1), "sum"), calls)
    if system.backend.name == "cuda":
        from lobatto.comm import local_cuda as k

        u2 = buf.reshape(6, -1)
        idx = local_index_arrays(system.exchange, k)
        taken = k.take(u2, idx["perm"])
        compact = k.gather(taken, idx["starts"], "sum")
        times["gs_take"] = timer(lambda: k.take(u2, idx["perm"]), calls)
        times["gs_gather"] = timer(lambda: k.gather(taken, idx["starts"], "sum"), calls)
        times["gs_scatter"] = timer(lambda: k.scatter(compact, u2, idx["dest_local"], idx["src_local"]), calls)
        comb = k.compiled_combine(u2.dtype) if system.exchange.comm is None else None
        if comb is not None:
            # the one-pass serial exchange that GatherScatter uses on one rank
            times["gs_combine"] = timer(lambda: comb(u2, idx["perm"], idx["starts"], "sum"), calls)
        system.traces_kernel(u, g["normals"], buf)
        system.exchange.apply(buf.reshape(6, -1), "sum")
    scheme = stepper.scheme
    low_storage = isinstance(scheme, LowStorageScheme)  # a 2N-storage scheme: the Stepper keeps a residual
    a = scheme.A[1] if low_storage else 0.0
    b = scheme.B[1] if low_storage else 0.0
    res = stepper.residual if low_storage else system.backend.xp.zeros_like(u)
    if system.stage_kernel is not None:
        args = (system.epsilon, system.mu, system.alpha)
        times["stage"] = timer(lambda: system.stage_kernel(u, res, buf, g, *args, a, b, dt), calls)
        times["stage_a0"] = timer(lambda: system.stage_kernel(u, res, buf, g, *args, 0.0, b, dt), calls)
    else:
        out = system.backend.xp.empty_like(u)
        times["rhs"] = timer(lambda: system.rhs_kernel(u, buf, g, out, system.epsilon, system.mu, system.alpha), calls)
    return times
