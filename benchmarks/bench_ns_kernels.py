"""The Navier–Stokes step's fused kernels against their reference (CuPy array code) and the
copy bandwidth: ms per call, bytes per the byte model, GB/s, fraction of a device-to-device
copy of the same bytes measured in the same run, old (reference) and new (tuned) side by side.

    PYTHONPATH=src python3 benchmarks/bench_ns_kernels.py --elements 24 36 --order 7 --json out.json

Byte models: operators/advection_cuda.py and operators/differential_cuda.py (docstrings). The
inputs are random (never zeros); E = elements^3 elements of order N. ``--sweep`` also times
each tuned kernel at other elements-per-block choices (backend.launch_overrides).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from lobatto.backends import get_backend
from lobatto.bench.report import Timer, rows_table, run_meta, write_json

KERNELS = ("advection_contravariant", "advection_apply", "convective", "curl", "weighted_curl",
           "weak_divergence_minus_curl", "mass_minus_gradient", "linear_combination_3", "project_2", "project_8")


def event_ms(fn, calls, repeats=5):
    """ms per call after one warm-up call: report.Timer on the CUDA backend (CUDA events, the
    median of ``repeats`` means of ``calls`` calls)."""
    backend = get_backend("cuda")
    fn()
    backend.synchronize()
    return Timer(backend)(fn, calls, repeats) * 1e3


def copy_gbs(nbytes, calls):
    """GB/s (read + write) of a device-to-device copy moving ``nbytes`` in all."""
    import cupy

    half = max(nbytes // 2 // 8, 1)
    src, dst = cupy.random.standard_normal(half), cupy.empty(half)
    ms = event_ms(lambda: dst.__setitem__(Ellipsis, src), calls)
    return 2 * half * 8 / ms / 1e6, ms


def setup(backend, order, elements, dtype):
    """{row: (old fn, new fn, bytes)} on random data of E elements."""
    import cupy

    from lobatto.backends.base import REFERENCE_KERNELS
    from lobatto.operators import advection_cuda, differential_cuda
    from lobatto.operators.advection import default_fine_points

    n, m = order + 1, default_fine_points(order)
    E = elements
    rng = cupy.random.default_rng(30)

    def r(*shape):
        return rng.standard_normal(shape, dtype=np.float64).astype(dtype)

    field = (E, n, n, n)
    u, f, w = r(3, *field), r(3, *field), r(3, *field)
    p, metrics, d = r(*field), r(3, 3, *field), r(n, n)
    mass = (0.5 + rng.random(field)).astype(dtype)
    factors, interp, interp_d = r(3, 3, E, m, m, m), r(m, n), r(m, n)
    interp_t = cupy.ascontiguousarray(interp.T)
    fine, out3, out1, outf = r(3, E, m, m, m), cupy.empty((3, *field), dtype), cupy.empty(field, dtype), \
        cupy.empty((3, E, m, m, m), dtype)
    size = np.dtype(dtype).itemsize
    points = E * n ** 3

    def pair(name, args, spec, nbytes):
        old = REFERENCE_KERNELS[name](backend, **spec)
        new = backend.kernel(name, **spec)
        return (lambda: old(*args)), (lambda: new(*args)), nbytes

    a = {"order": order, "fine": m}
    rows = {
        "advection_contravariant": pair("advection_contravariant", (u, factors, interp, outf), a,
                                        advection_cuda.bytes_moved("contravariant", order, m, E, size)),
        "advection_apply": pair("advection_apply", (fine, u, interp, interp_d, interp_t, out3), a,
                                advection_cuda.bytes_moved("apply", order, m, E, size, 3)),
        "curl": pair("curl", (u, metrics, None, d, out3), {"order": order},
                     differential_cuda.VALUES_PER_POINT["curl"] * points * size),
        "weighted_curl": pair("curl", (u, metrics, mass, d, out3), {"order": order},
                              differential_cuda.VALUES_PER_POINT["weighted_curl"] * points * size),
        "weak_divergence_minus_curl": pair("weak_divergence_minus_curl", (f, w, metrics, mass, d, 0.01, out1),
                                           {"order": order},
                                           differential_cuda.VALUES_PER_POINT["weak_divergence_minus_curl"]
                                           * points * size),
        "mass_minus_gradient": pair("mass_minus_gradient", (f, p, metrics, mass, d, out3), {"order": order},
                                    differential_cuda.VALUES_PER_POINT["mass_minus_gradient"] * points * size),
    }
    # BDF/EXT sum of 3 velocity-sized arrays: reads 3, writes 1
    arrays3 = [u, f, w]
    rows["linear_combination_3"] = pair("linear_combination", (out3, [1.5, -0.7, 0.2], arrays3), {},
                                        4 * 3 * points * size)
    if elements <= 24 ** 3:  # (the assembly's numbering is built on the host: slow beyond)
        rows.update(projections(backend, elements, order, dtype))
    oc, nc, bc = rows["advection_contravariant"]
    oa, na, ba = rows["advection_apply"]
    # the whole convective term (u . grad) u: contravariant velocity, then apply to 3 fields
    rows["convective"] = ((lambda: (oc(), oa())), (lambda: (nc(), na())),
                          bc + ba - 3 * n ** 3 * E * size)  # (U is written, then read: counted in both)
    return rows


def projections(backend, elements, order, dtype):
    """project() of a pressure-sized b onto 2 and 8 stored solutions: old (a dot and two axpys
    per vector) and new (Assembly.dots and two linear combinations). Byte model of the new one:
    the k dot products read x_i, b and the weights (3k values per point), x_bar reads k and
    writes 1, the residual reads k + 1 and writes 1: 5k + 3 values per point."""
    from lobatto.mesh import box_mesh
    from lobatto.operators import Assembly
    from lobatto.solvers import SolutionProjection

    side = round(elements ** (1 / 3))
    assembly = Assembly(box_mesh((side, side, side), periodic=(True, True, True)), order, backend)
    points = elements * (order + 1) ** 3
    rng = np.random.default_rng(3)
    rows = {}
    for k in (2, 8):
        basis = [backend.asarray(rng.standard_normal(assembly.shape)) for _ in range(k + 1)]
        old = SolutionProjection(lambda x: x, assembly.dot, k)
        new = SolutionProjection(lambda x: x, assembly.dot, k, dots=assembly.dots,
                                 combine=backend.kernel("linear_combination"))
        for p in (old, new):  # a stored basis without orthogonalisation: the cost is the same
            p.basis, p.images = basis[:k], basis[:k]
        b = basis[k]
        rows[f"project_{k}"] = ((lambda o=old: o.project(b)), (lambda n=new: n.project(b)),
                                (5 * k + 3) * points * np.dtype(dtype).itemsize)
    return rows


def measure(order, elements, precision, calls, sweep, kernels=KERNELS):
    backend = get_backend("cuda", precision=precision)
    E = elements ** 3
    rows = setup(backend, order, E, backend.dtype)
    out = []
    for name in kernels:
        if name not in rows:
            continue
        old, new, nbytes = rows[name]
        copy, copy_ms = copy_gbs(nbytes, calls)
        old_ms, new_ms = event_ms(old, max(calls // 4, 2)), event_ms(new, calls)
        entry = {"kernel": name, "order": order, "elements": E, "precision": precision, "bytes": nbytes,
                 "old_ms": old_ms, "new_ms": new_ms, "new_gbs": nbytes / new_ms / 1e6,
                 "copy_gbs": copy, "copy_ms": copy_ms, "fraction_of_copy": copy_ms / new_ms,
                 "speedup": old_ms / new_ms}
        if sweep and name in ("advection_contravariant", "advection_apply", "curl", "weak_divergence_minus_curl",
                              "mass_minus_gradient"):
            entry["sweep"] = {}
            key = (name, order, np.dtype(backend.dtype).name)
            for epb in (1, 2, 3, 4, 6, 8):
                backend.launch_overrides = {key: epb}
                try:
                    entry["sweep"][epb] = event_ms(new, calls)
                except Exception as error:  # noqa: BLE001  (a launch the registers or shared memory refuse)
                    entry["sweep"][epb] = f"{type(error).__name__}: {error}"[:120]
            backend.launch_overrides = {}
        out.append(entry)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="+", default=[24], help="elements per direction (E = e^3)")
    parser.add_argument("--order", type=int, nargs="+", default=[7])
    parser.add_argument("--precision", nargs="+", default=["float64"], choices=["float64", "float32"])
    parser.add_argument("--calls", type=int, default=20, help="calls per timing sample (5 samples, median)")
    parser.add_argument("--sweep", action="store_true", help="also time other elements-per-block choices")
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS, help="rows to measure")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    results = []
    for precision in args.precision:
        for order in args.order:
            for elements in args.elements:
                results.extend(measure(order, elements, precision, args.calls, args.sweep, args.kernels))
    header = ["kernel", "N", "E", "prec", "MB", "old ms", "new ms", "speedup", "GB/s", "copy GB/s", "of copy"]
    table = [[r["kernel"], str(r["order"]), str(r["elements"]), r["precision"][-2:], f"{r['bytes'] / 1e6:.0f}",
              f"{r['old_ms']:.3f}", f"{r['new_ms']:.3f}", f"{r['speedup']:.1f}x", f"{r['new_gbs']:.0f}",
              f"{r['copy_gbs']:.0f}", f"{100 * r['fraction_of_copy']:.0f}%"] for r in results]
    print("\n".join(rows_table(header, table)))
    for r in results:
        if "sweep" in r:
            print(f"sweep {r['kernel']} N={r['order']} E={r['elements']} {r['precision']}: "
                  + ", ".join(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}" for k, v in r["sweep"].items()))
    write_json(args.json, {"meta": run_meta(), "results": results})


if __name__ == "__main__":
    sys.exit(main())
