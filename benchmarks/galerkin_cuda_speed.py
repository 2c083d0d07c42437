"""Speed of the Galerkin volume form's CUDA kernel against its array code and the collocated forms.

The curved box of `lobatto bench maxwell --curved` (bench.maxwell.curved_deformation), upwind,
whole lsrk45 steps on one GPU (graph replay, synchronised CUDA-event timings after warm-up
steps), for each case ORDER:ELEMENTS_PER_SIDE and precision:

    split               volume_form = "split" (the default; fused stage)
    chain               volume_form = "chain"
    galerkin (array)    volume_form = "galerkin", WeightAdjustedOperator through CuPy
    galerkin (kernel)   the same system through galerkin_cuda.GalerkinCuda (what attach() picks:
                        its rhs kernel and the one-pass stage update): at Q = N + 1
                        galerkin_square_kernel (the whole rhs at the Gauss points)
    galerkin (kernel, general passes)   the general-Q kernel (galerkin_rhs_kernel) at the same
                        Q = N + 1 (GalerkinCuda(..., square=False)), default launch
    galerkin (kernel, threads T, blocks per SM B[, planes K])   other launches of the default
                        kernel (--launches; planes only for the general passes)
    galerkin (kernel, strong form's rule Q = max(ceil(3N/2), N + 1))
                        the same skew operator with the Gauss rule the strong form needed before
                        the skew form (galerkin.attach(system, points=galerkin.strong_points(N)))
                        through the same kernel, default launch: what Q = N + 1 saves per step
                        (--no-earlier skips it)

plus, per Galerkin kernel row, the rhs kernel alone (one call, ms), its GFLOP/s by the work model
below, its GB/s by `bytes_per_element`, and the largest difference of one rhs between the kernel and the array code on random
data (relative to the largest value: a check that the device agrees with the CPU-emulated test).
Work model of one rhs per element (FMAs counted 2 flops; both field groups): galerkin_cuda's
passes, see `work_per_element` (general passes) and `square_work_per_element` (the square kernel). The operator as built has the skew volume term and Q = N + 1
Gauss points (N = 7: 8, N = 11: 12); the strong form's rule Q = max(ceil(3N/2), N + 1) (11, 17):
both in one call. The kernel before the skew form (the strong term at Q = 11, 17) is this script
at the commit before it.

    PYTHONPATH=src python3 benchmarks/galerkin_cuda_speed.py        # 7:16 and 11:8, float64 and float32
    PYTHONPATH=src python3 benchmarks/galerkin_cuda_speed.py --cases 7:16 --precisions float64 --launches ""

Expected run time on an H100 (before the skew form): about 4 minutes, most of it building the
operators on the host and compiling (--precisions float64 about half; --no-array skips the array
rows).
"""

from __future__ import annotations

import argparse
import datetime
import platform

import numpy as np

from lobatto.backends import get_backend
from lobatto.bench.maxwell import INITIAL, curved_deformation, time_steps
from lobatto.bench.report import Timer, write_json
from lobatto.integrators import Stepper, get_scheme
from lobatto.mesh import box_mesh
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell import galerkin
from lobatto.systems.maxwell.galerkin_cuda import GalerkinCuda, default_threads
from lobatto.systems.maxwell.system import MaxwellSystem


EARLIER = "galerkin (kernel, strong form's rule Q = max(ceil(3N/2), N + 1))"


def work_per_element(p: int, q: int) -> float:
    """Flops of one rhs of one element (kernels/galerkin.cu's passes, 2 per FMA, both groups). The
    volume's skew form: per Gauss point 9 derivatives and f_G (12 P), the strong products and the
    three G_b (45); back to the nodes 12 Q along r, 9 Q along s, 6 along t per output value."""
    volume = q * (6 * p**3 + 9 * q * p * p + q * q * (12 * p + 45) + 12 * q * q * p + 9 * p * p * q + 6 * p**3)
    faces = 6 * (6 * q * p * p + q * q * (6 * p + 20) + 3 * q * q * p + 3 * p * p * q)
    mass = q * (3 * p**3 + 3 * q * p * p + 3 * q * q * p + 3 * q * q * p + 3 * p * p * q + 3 * p**3)
    return 2.0 * 2 * (volume + faces + mass)


def square_work_per_element(p: int) -> float:
    """Flops of one rhs of one element by galerkin_square_kernel (Q = P; 2 per FMA, both groups):
    f_G (V along 3 axes, 3 components: 9 P^4 FMAs), per axis and point D_G f and D_G^T G_b (6 Q
    FMAs) and the cross products, scale and sums (36), the faces (V along b and a, 12 Q^3 FMAs
    and 20 Q^2 for the fluxes), the faces along the normals and the weights (27 Q^3), A^T along
    3 axes (9 P^4 FMAs): 72 Q^4 + 279 Q^3 + 240 Q^2 per group (general passes: work_per_element)."""
    q = p
    return 2.0 * (72 * q**4 + 279 * q**3 + 240 * q**2)


def bytes_per_element(p: int, q: int, itemsize: int) -> float:
    """Device bytes one rhs must move per element, each array once: w J a^b and w/J (10 Q^3),
    face normals and w sJ (24 Q^2), u and out (12 P^3), the face sums (36 P^2). Near the copy
    bandwidth the kernel is memory-bound (recomputing J a^b from the geometry nodes would then
    pay); far below it, the passes' shared-memory loads bound it."""
    return itemsize * (10 * q**3 + 24 * q**2 + 12 * p**3 + 36 * p**2 + 12)


def build(backend, order, side, form):
    mesh = box_mesh((side,) * 3, deform=curved_deformation)
    system = MaxwellSystem(mesh, order, backend, flux="upwind", volume_form=form)
    stepper = Stepper(system, get_scheme("lsrk45"))
    u = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
    dt = system.stable_time_step(0.5, system.geometry.min_spacing)
    return system, stepper, u, dt


def launches_of(order: int, spec: str) -> list:
    """(threads, blocks per SM, planes per pass) launches beside the default: --launches
    "T:B:K,..." (B, K 0: the default for that launch)."""
    if spec == "auto":  # one plane per pass (general passes only); 2 blocks per SM (more registers a
        # thread); twice the threads
        t = default_threads(galerkin.quadrature_points(order))
        return [(t, 0, 1), (t, 2, 0), (2 * t, 0, 0)]
    return [tuple(int(x) for x in (item + ":0:0").split(":")[:3]) for item in spec.split(",") if item]


def rhs_check(backend, system, kernel, operator=None):
    """max |kernel - array code| / max |array code| of one rhs on random data, and the kernel's
    seconds per rhs (``operator``: another rule's operator of the same mesh)."""
    xp, op = backend.xp, operator or system.galerkin
    rng = np.random.default_rng(1)
    e, n = system.num_elements, system.order + 1
    u = backend.asarray(rng.standard_normal((6, e, n, n, n)))
    sums = backend.asarray(rng.standard_normal((6, e, 6, n, n)))
    f = system.device_geometry["face_factors"]
    args = (system.epsilon, system.mu, system.alpha)
    ref = op.rhs(xp, u, (face_values(xp, u, system.order), sums), f, xp.empty_like(u), *args)
    out = kernel(u, sums, f, xp.empty_like(u), *args)
    err = float(xp.abs(out - ref).max() / xp.abs(ref).max())
    timer = Timer(backend)
    kernel(u, sums, f, out, *args)
    seconds = timer(lambda: kernel(u, sums, f, out, *args), 5, 3)
    return err, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["7:16", "11:8"], help="ORDER:ELEMENTS_PER_SIDE")
    parser.add_argument("--precisions", nargs="+", default=["float64", "float32"])
    parser.add_argument("--launches", default="auto",
                        help='other kernel launches "THREADS:BLOCKS_PER_SM:PLANES,..." (0: default); "" none')
    parser.add_argument("--no-array", action="store_true", help="skip the galerkin (array) rows")
    parser.add_argument("--no-earlier", action="store_true",
                        help="skip the row of the strong form's rule (Q = max(ceil(3N/2), N + 1))")
    parser.add_argument("--json", default="galerkin_cuda_speed.json")
    args = parser.parse_args()
    rows = []
    for precision in args.precisions:
        backend = get_backend("cuda", precision=precision)
        for case in args.cases:
            order, side = (int(x) for x in case.split(":"))
            for form in ("split", "chain", "galerkin"):
                system, stepper, u, dt = build(backend, order, side, form)
                variants = [(form, None)]
                stage = system.stage_kernel  # galerkin: the kernel's stage (rhs and update), None for the array code
                if form == "galerkin":
                    default = system.galerkin.cuda
                    assert default is not None, "the kernel does not fit this device"
                    variants = [("galerkin (array)", None)] if not args.no_array else []
                    variants.append(("galerkin (kernel)", default))
                    if default.square:  # the general passes at the same rule, for comparison
                        general = GalerkinCuda(backend, system.galerkin, square=False)
                        if general.fits(u.dtype):
                            variants.append(("galerkin (kernel, general passes)", general))
                    seen = {(default.threads, *default.launch(u.dtype))}
                    for threads, blocks, planes in launches_of(order, args.launches):
                        other = GalerkinCuda(backend, system.galerkin, threads, blocks or None, planes or None,
                                             square=default.square)
                        key = (threads, *other.launch(u.dtype))
                        if key in seen or not other.fits(u.dtype):
                            continue  # the default launch, one already listed, or too large
                        seen.add(key)
                        planes_label = "" if other.square else f", planes {key[2]}"
                        variants.append((f"galerkin (kernel, threads {key[0]}, blocks per SM {key[1]}"
                                         f"{planes_label})", other))
                    if not args.no_earlier:
                        variants.append((EARLIER, "earlier"))
                for label, kernel in variants:
                    if isinstance(kernel, str):  # "earlier": the same mesh and stepper, the strong form's rule
                        galerkin.attach(system, points=galerkin.strong_points(order))
                        stage, kernel = system.stage_kernel, system.galerkin.cuda
                        assert kernel is not None, "the kernel at the strong form's rule does not fit this device"
                    if form == "galerkin":
                        system.galerkin.cuda = kernel
                        system.stage_kernel = stage if kernel is not None else None
                    u[...] = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
                    try:
                        timing = time_steps(backend, stepper, u, dt, repeats=3 if kernel is None else 5)
                    except Exception as exc:  # noqa: BLE001  (a launch the registers refuse: say so, go on)
                        print(f"N = {order:2d} {precision} {label}: {type(exc).__name__}: {exc}", flush=True)
                        continue
                    t = timing["seconds_per_step"]
                    row = {"order": order, "elements": side**3, "points": system.points, "precision": precision,
                           "variant": label, "ms_per_step": 1e3 * t,
                           "point_stage_updates_per_s": system.points * stepper.stages / t,
                           "graph": timing.get("graph"), "finite": bool(backend.xp.all(backend.xp.isfinite(u)))}
                    if kernel is not None:
                        p, q = order + 1, system.galerkin.points
                        err, seconds = rhs_check(backend, system, kernel)
                        blocks, planes = kernel.launch(u.dtype)
                        row.update(gauss_points=q, cofactors=system.galerkin.cofactors, threads=kernel.threads,
                                   blocks_per_sm=blocks, planes=planes,
                                   shared_bytes=kernel.shared_bytes(u.dtype), rhs_ms=1e3 * seconds,
                                   square=kernel.square,
                                   rhs_gflops=(square_work_per_element(p) if kernel.square else work_per_element(p, q))
                                   * system.num_elements / seconds / 1e9,
                                   rhs_gbytes_per_s=bytes_per_element(p, q, u.dtype.itemsize) * system.num_elements
                                   / seconds / 1e9,
                                   rhs_relative_difference=err)
                    rows.append(row)
                    extra = (f"  rhs {row['rhs_ms']:.3f} ms, {row['rhs_gflops']:.0f} GFLOP/s, "
                             f"{row['rhs_gbytes_per_s']:.0f} GB/s, vs array "
                             f"{row['rhs_relative_difference']:.1e}" if kernel is not None else "")
                    print(f"N = {order:2d} {side}^3 {precision}  {label:<48s} {1e3 * t:9.3f} ms/step  "
                          f"{row['point_stage_updates_per_s']:.3e} point-stage/s{extra}", flush=True)
                del system, stepper, u
                if backend.name == "cuda":
                    backend.xp.get_default_memory_pool().free_all_blocks()
    out = {"benchmark": "galerkin_cuda_speed", "date": datetime.date.today().isoformat(), "host": platform.node(),
           "backend": backend.describe(), "rows": rows}
    write_json(args.json, out, indent=1, default=None, say=None)
    print("\n| N | elements | precision | variant | ms/step | point-stage/s | vs split | rhs ms |")
    print("|---:|---:|---|---|---:|---:|---:|---:|")
    for r in rows:
        split = next((c for c in rows if c["order"] == r["order"] and c["precision"] == r["precision"]
                      and c["variant"] == "split"), None)
        ratio = f"{split['ms_per_step'] / r['ms_per_step']:.3f}" if split else ""
        print(f"| {r['order']} | {r['elements']} | {r['precision']} | {r['variant']} | {r['ms_per_step']:.3f} | "
              f"{r['point_stage_updates_per_s']:.3e} | {ratio} | {r.get('rhs_ms', float('nan')):.3f} |")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
