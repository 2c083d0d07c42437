"""The Galerkin form's step with a per-point medium against without one, beside the split form's.

Issue 32: the default volume form on curved meshes ("auto" -> galerkin) now takes materials
(systems/maxwell/galerkin_media.py; the CUDA kernels' MEDIUM and LOSS instantiations, the C
kernel's per-point path). What does a medium cost it, and how does that compare with the split
form's medium path? The curved box of `lobatto bench maxwell --curved` (the same deformation,
PEC walls), upwind, lsrk45, whole steps timed by bench.maxwell.time_steps (graph replay on CUDA),
one process, for each case ORDER:ELEMENTS_PER_SIDE:

    uniform       [physics] eps = 2 (no per-point medium: the scalar kernels)
    dielectric    a ball of eps = 4 (sampled per point) in eps = 1, mu varying smoothly
    lossy         the same and a conducting slab (sigma = 0.5 for x < 0.2)

each with volume_form = "galerkin" and "split".

    PYTHONPATH=src python3 benchmarks/galerkin_media_speed.py --backend cuda --cases 7:16 11:8 --json out.json
    PYTHONPATH=src OMP_NUM_THREADS=1 python3 benchmarks/galerkin_media_speed.py --backend cpu --cases 5:4
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.maxwell import CURVED_AMPLITUDE, time_steps  # noqa: E402

DEFORM = f"{CURVED_AMPLITUDE}*sin(pi*x)*sin(pi*y)*sin(pi*z)"
MEDIA = {
    "uniform": ({"epsilon": 2.0}, None),
    "dielectric": ({}, {"ball": {"where": "0.09 - (x-0.5)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": 4.0},
                        "all": {"where": "1", "mu": "1 + 0.2*sin(pi*y)"}}),
    "lossy": ({}, {"all": {"where": "1", "mu": "1 + 0.2*sin(pi*y)"},
                   "ball": {"where": "0.09 - (x-0.5)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": 4.0},
                   "film": {"where": "0.2 - x", "sigma": 0.5}}),
}


def case(order: int, elements: int, form: str, medium: str, precision: str) -> dict:
    physics, materials = MEDIA[medium]
    data = {"mesh": {"elements": [elements] * 3, "boundary": "pec",
                     "deform": {"x": DEFORM, "y": DEFORM, "z": f"0.5*{DEFORM}"}},
            "discretization": {"order": order, "flux": "upwind", "volume_form": form},
            "physics": {"equations": "maxwell", **physics}, "backend": {"precision": precision},
            "initial": {"Ez": "sin(pi*x)*sin(pi*y)", "Hx": "0.3*sin(pi*y)*sin(pi*z)"},
            "time": {"t_end": 1.0, "cfl": 0.3, "cfl_check": False}, "output": {"formats": []}}
    if materials is not None:
        data["material"] = materials
    return data


def measure(backend: str, order: int, elements: int, form: str, medium: str, precision: str, workdir: str) -> dict:
    sim = Simulation(case_from_dict(case(order, elements, form, medium, precision), name="media"), backend=backend,
                     output_dir=workdir, comm=None)
    system = sim.system
    stepper = sim.stepper
    timing = time_steps(sim.backend, stepper, sim.u, sim.dt, None, 5, True)
    timing.pop("energy", None)
    operator = getattr(system, "galerkin", None)
    kernel = stepper.path  # the collocated forms: "whole-step" (fused) or "stages"
    if operator is not None:
        kernel = ("CUDA kernel" if operator.cuda is not None else
                  "C kernel" if getattr(system.rhs_kernel, "__module__", "").endswith("galerkin_cpu") else "array code")
    out = {"order": order, "elements": elements, "form": form, "medium": medium, "precision": precision,
           "ms_per_step": 1e3 * timing["seconds_per_step"], "dt": sim.dt, "path": kernel,
           "has_medium": system.medium is not None}
    sim.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--cases", nargs="+", default=["7:16", "11:8"], help="ORDER:ELEMENTS_PER_SIDE")
    ap.add_argument("--precision", default="float64")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for spec in args.cases:
            order, elements = (int(v) for v in spec.split(":"))
            for medium in MEDIA:
                for form in ("galerkin", "split"):
                    rows.append(measure(args.backend, order, elements, form, medium, args.precision, workdir))
                    r = rows[-1]
                    print(f"N={order:2d} {elements}^3 {medium:10s} {form:8s} {r['ms_per_step']:9.3f} ms/step  "
                          f"({r['path']})", flush=True)
    print("\n| N | elements | medium | galerkin ms/step | split ms/step | galerkin / its uniform | split / its uniform |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for spec in args.cases:
        order, elements = (int(v) for v in spec.split(":"))
        pick = {(r["medium"], r["form"]): r["ms_per_step"] for r in rows if r["order"] == order}
        for medium in MEDIA:
            g, s = pick[medium, "galerkin"], pick[medium, "split"]
            print(f"| {order} | {elements}³ | {medium} | {g:.3f} | {s:.3f} | {g / pick['uniform', 'galerkin']:.2f} | "
                  f"{s / pick['uniform', 'split']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({
            "what": "Galerkin and split steps with and without a per-point medium (benchmarks/galerkin_media_speed.py)",
            "backend": args.backend, "host": platform.node(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
