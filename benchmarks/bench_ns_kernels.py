"""The Navier–Stokes step's fused kernels against their reference (CuPy array code) and the
copy bandwidth: ms per call, bytes per the byte model, GB/s, fraction of a device-to-device
copy of the same bytes measured in the same run, old (reference) and new (tuned) side by side.

    PYTHONPATH=src python3 benchmarks/bench_ns_kernels.py --elements 24 36 --order 7 --json out.json
    PYTHONPATH=src python3 benchmarks/bench_ns_kernels.py --dim 2 --elements 332 --order 7

Byte models: operators/advection_cuda.py and operators/differential_cuda.py (docstrings). The
inputs are random (never zeros); E = elements^3 elements of order N (``--dim 2``: E = elements^2
quads, the arrays in the 2-D reference's layout: 2 velocity components, w_z, compact 2 x 2
metrics and fine factors; the old column is empty where the reference takes no ``dim``). ``--sweep`` also times
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


def setup(backend, order, elements, dtype, dim=3):
    """{row: (old fn or None, new fn, bytes)} on random data of E elements."""
    import cupy

    from lobatto.backends.base import REFERENCE_KERNELS
    from lobatto.operators import advection_cuda, differential_cuda
    from lobatto.operators.advection import default_fine_points

    n, m = order + 1, default_fine_points(order)
    E = elements
    rng = cupy.random.default_rng(30)

    def r(*shape):
        return rng.standard_normal(shape, dtype=np.float64).astype(dtype)

    c = dim  # velocity components and metric rows
    field, fine_field = ((E, n, n, n), (E, m, m, m)) if dim == 3 else ((E, 1, n, n), (E, 1, m, m))
    u, f = r(c, *field), r(c, *field)
    w = r(3, *field) if dim == 3 else r(1, *field)  # the vorticity (2-D: w_z)
    p, metrics, d = r(*field), r(c, c, *field), r(n, n)
    mass = (0.5 + rng.random(field)).astype(dtype)
    factors, interp, interp_d = r(c, c, *fine_field), r(m, n), r(m, n)
    interp_t = cupy.ascontiguousarray(interp.T)
    fine, outc, out1, outf = r(c, *fine_field), cupy.empty((c, *field), dtype), cupy.empty(field, dtype), \
        cupy.empty((c, *fine_field), dtype)
    outw = cupy.empty(w.shape, dtype)  # the curl's: the 3-vector, or w_z
    size = np.dtype(dtype).itemsize
    points = E * n ** dim
    values = differential_cuda.VALUES_PER_POINT if dim == 3 else differential_cuda.VALUES_PER_POINT_2D

    def pair(name, args, spec, nbytes):
        spec = dict(spec, **({} if dim == 3 or name == "linear_combination" else {"dim": dim}))
        try:
            old = REFERENCE_KERNELS[name](backend, **spec)
        except TypeError:  # a reference without dim: no old column
            old = None
        new = backend.kernel(name, **spec)
        return (None if old is None else (lambda: old(*args))), (lambda: new(*args)), nbytes

    a = {"order": order, "fine": m}
    rows = {
        "advection_contravariant": pair("advection_contravariant", (u, factors, interp, outf), a,
                                        advection_cuda.bytes_moved("contravariant", order, m, E, size, dim=dim)),
        "advection_apply": pair("advection_apply", (fine, u, interp, interp_d, interp_t, outc), a,
                                advection_cuda.bytes_moved("apply", order, m, E, size, c, dim=dim)),
        "curl": pair("curl", (u, metrics, None, d, outw), {"order": order}, values["curl"] * points * size),
        "weighted_curl": pair("curl", (u, metrics, mass, d, outw), {"order": order},
                              values["weighted_curl"] * points * size),
        "weak_divergence_minus_curl": pair("weak_divergence_minus_curl", (f, w, metrics, mass, d, 0.01, out1),
                                           {"order": order}, values["weak_divergence_minus_curl"] * points * size),
        "mass_minus_gradient": pair("mass_minus_gradient", (f, p, metrics, mass, d, outc), {"order": order},
                                    values["mass_minus_gradient"] * points * size),
    }
    # BDF/EXT sum of 3 velocity-sized arrays: reads 3, writes 1
    arrays3 = [u, f, r(c, *field)]
    rows["linear_combination_3"] = pair("linear_combination", (outc, [1.5, -0.7, 0.2], arrays3), {},
                                        4 * c * points * size)
    if dim == 3 and elements <= 24 ** 3:  # (the assembly's numbering is built on the host: slow beyond)
        rows.update(projections(backend, elements, order, dtype))
    oc, nc, bc = rows["advection_contravariant"]
    oa, na, ba = rows["advection_apply"]
    # the whole convective term (u . grad) u: contravariant velocity, then apply to the velocity
    rows["convective"] = (None if oc is None or oa is None else (lambda: (oc(), oa())), (lambda: (nc(), na())),
                          bc + ba - c * n ** dim * E * size)  # (U is written, then read: counted in both)
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


def measure(order, elements, precision, calls, sweep, kernels=KERNELS, dim=3):
    backend = get_backend("cuda", precision=precision)
    E = elements ** dim
    rows = setup(backend, order, E, backend.dtype, dim)
    out = []
    for name in kernels:
        if name not in rows:
            continue
        old, new, nbytes = rows[name]
        copy, copy_ms = copy_gbs(nbytes, calls)
        old_ms = float("nan") if old is None else event_ms(old, max(calls // 4, 2))
        new_ms = event_ms(new, calls)
        entry = {"kernel": name, "order": order, "elements": E, "dim": dim, "precision": precision, "bytes": nbytes,
                 "points": E * (order + 1) ** dim, "old_ms": old_ms, "new_ms": new_ms, "new_gbs": nbytes / new_ms / 1e6,
                 "copy_gbs": copy, "copy_ms": copy_ms, "fraction_of_copy": copy_ms / new_ms,
                 "speedup": old_ms / new_ms, "ns_per_point": new_ms * 1e6 / (E * (order + 1) ** dim)}
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
    parser.add_argument("--elements", type=int, nargs="+", default=[24], help="elements per direction (E = e^dim)")
    parser.add_argument("--dim", type=int, default=3, choices=[2, 3], help="mesh dimension (2: quads)")
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
                results.extend(measure(order, elements, precision, args.calls, args.sweep, args.kernels, args.dim))
    header = ["kernel", "D", "N", "E", "prec", "MB", "old ms", "new ms", "speedup", "GB/s", "copy GB/s", "of copy",
              "ns/pt"]
    table = [[r["kernel"], str(r["dim"]), str(r["order"]), str(r["elements"]), r["precision"][-2:],
              f"{r['bytes'] / 1e6:.0f}", f"{r['old_ms']:.3f}", f"{r['new_ms']:.3f}", f"{r['speedup']:.1f}x",
              f"{r['new_gbs']:.0f}", f"{r['copy_gbs']:.0f}", f"{100 * r['fraction_of_copy']:.0f}%",
              f"{r['ns_per_point']:.3f}"] for r in results]
    print("\n".join(rows_table(header, table)))
    for r in results:
        if "sweep" in r:
            print(f"sweep {r['kernel']} N={r['order']} E={r['elements']} {r['precision']}: "
                  + ", ".join(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}" for k, v in r["sweep"].items()))
    write_json(args.json, {"meta": run_meta(), "results": results})


if __name__ == "__main__":
    sys.exit(main())
