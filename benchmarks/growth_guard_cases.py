"""The growth guard (runner/growth_guard.py) on unstable and stable Maxwell runs (CPU, or CUDA).

For each case: whether the guard stopped it, at which step and time, the energy there over
the run's scale (the initial energy, or the largest before the growth), and ``closest``, the
largest W_n / (P_a G(a, n)) the guard saw (a stable run's distance from RISE = 1e4). The
unstable cases: issue 33's Drude medium reaching into a PML (as it was before the medium was
made stable in the layer), a layer, a stiff pole and a dipole stepped too long
(cfl_check = false). The stable ones: a continuous dipole on a cavity resonance (W ~ t^2),
delayed pulses, TF/SF plane waves with layers, a current, the examples with layers, sources or
poles (short runs). Prints a table and writes JSON (docs/electromagnetics.md, "When a run goes
unstable", quotes it).

    PYTHONPATH=src python3 benchmarks/growth_guard_cases.py                  # about 30 s on one core
    PYTHONPATH=src python3 benchmarks/growth_guard_cases.py --backend cuda   # the same on a GPU
    PYTHONPATH=src python3 benchmarks/growth_guard_cases.py --long           # and two runs to t = 100
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import math
import tempfile
import time
from pathlib import Path

from lobatto.api import Simulation, case_from_dict, load_case, with_changes
from lobatto.bench.report import write_json
from lobatto.errors import SolverError

ROOT = Path(__file__).resolve().parent.parent
LINE = {"mesh": {"elements": [6, 1, 1], "upper": [1.5, 0.25, 0.25], "periodic": [False, True, True],
                 "boundary": "pec"},
        "discretization": {"order": 3}, "physics": {"equations": "maxwell"}, "output": {"formats": []},
        "initial": {"Ey": "exp(-((x-0.75)/0.1)**2)", "Hz": "exp(-((x-0.75)/0.1)**2)"}}
LAYERS = {"sides": ["xmin", "xmax"], "elements": 1, "reflection": 1e-4}
CAVITY = {"mesh": {"elements": [2, 2, 2], "boundary": "pec"}, "discretization": {"order": 3},
          "physics": {"equations": "maxwell"}, "time": {"t_end": 60.0}, "output": {"formats": []}}
RESONANCE = 1 / math.sqrt(2)
ISSUE = {"mesh": {"elements": [8, 1, 1], "upper": [2.0, 0.25, 0.25], "periodic": [False, True, True],
                  "boundary": "pec"},
         "discretization": {"order": 3}, "physics": {"equations": "maxwell"}, "output": {"formats": []},
         "initial": {"Ey": "exp(-((x-0.6)/0.1)**2)", "Hz": "exp(-((x-0.6)/0.1)**2)"}, "time": {"t_end": 60.0},
         "pml": {"sides": ["xmin", "xmax"], "elements": 2, "reflection": 1e-6}}


def drude(where, plasma, collision):
    return {"slab": {"where": where, "sampling": "element", "epsilon": 1.0, "model": "drude",
                     "poles": [{"plasma_frequency": plasma, "collision_frequency": collision}]}}


def dipole(**waveform):
    return {"a": {"type": "electric_dipole", "position": [0.43, 0.52, 0.47], "direction": [0, 1, 0], **waveform}}


SCRATCH = tempfile.TemporaryDirectory()


BACKEND = ["cpu"]
LONG = [False]


def step_of(data) -> float:
    with contextlib.redirect_stdout(io.StringIO()):
        return Simulation(case_from_dict(data), backend=BACKEND[0], output_dir=tempfile.mkdtemp(dir=SCRATCH.name),
                          comm=None).dt


def cases():
    layer_dt = step_of(dict(LINE, pml=LAYERS, time={"t_end": 1.0}))
    cavity_dt = step_of(dict(CAVITY, source=dipole(waveform="continuous", frequency=RESONANCE, ramp=0.0)))
    yield "issue 33: Drude into a PML (8 el., N = 3)", dict(ISSUE, material=drude("x - 1.25", 1.0, 1.0)), None
    yield "  the same, collision frequency 20", dict(ISSUE, material=drude("x - 1.25", 1.0, 20.0)), None
    for factor in (1.8, 1.9):
        yield (f"layer, dt {factor} x fitted", dict(LINE, pml=LAYERS, time={"t_end": 20.0, "dt": factor * layer_dt,
                                                                             "cfl_check": False}), None)
    for collision in (22.0, 25.0):
        yield (f"Drude pole, collision {collision:g}, cfl_check off",
               dict(LINE, material=drude("x - 0.5", 1.0, collision), mesh=dict(LINE["mesh"], boundary="absorbing"),
                    time={"t_end": 10.0, "cfl_check": False}), None)
    for factor in (1.4, 1.45):
        yield (f"CW dipole, dt {factor} x cfl's", dict(CAVITY, time={"t_end": 40.0, "dt": factor * cavity_dt,
                                                                     "cfl_check": False},
                                                      source=dipole(waveform="continuous", frequency=RESONANCE,
                                                                    ramp=0.0)), None)
    for ramp in (0.0, 2.0):
        yield (f"CW dipole on resonance, ramp {ramp:g}",
               dict(CAVITY, source=dipole(waveform="continuous", frequency=RESONANCE, ramp=ramp)), 600)
    for name, waveform in (("Gaussian, t0 = 5 widths", {"waveform": "gaussian", "width": 1.2, "t0": 6.0}),
                           ("Gaussian, t0 = 10 widths", {"waveform": "gaussian", "width": 1.2, "t0": 12.0}),
                           ("modulated Gaussian", {"waveform": "modulated_gaussian", "width": 1.2, "t0": 6.0,
                                                   "frequency": RESONANCE}),
                           ("Ricker", {"waveform": "ricker", "frequency": 0.15, "t0": 10.0})):
        yield f"delayed dipole pulse: {name}", dict(CAVITY, source=dipole(amplitude=3.0, **waveform)), 300
    wave = {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0], "waveform": "continuous",
            "frequency": 1.0, "ramp": 1.0, "lower": [0.5, 0.0, 0.0], "upper": [1.0, 0.25, 0.25]}
    yield ("TF/SF CW, periodic box, PML", dict(LINE, initial={}, pml=LAYERS, source={"inc": wave},
                                               time={"t_end": 20.0}), None)
    current = {"type": "current", "Jy": "sin(2*pi*0.7071*t)*sin(pi*x)*sin(pi*z)"}
    yield "current on resonance", dict(CAVITY, source={"j": current}), 600
    if LONG[0]:  # 100 time units (about 40 crossings of the line), thinning the history
        yield ("long: TF/SF CW with PML, t = 100", dict(LINE, initial={}, pml=LAYERS, source={"inc": wave},
                                                          time={"t_end": 100.0}), None)
        yield ("long: Drude inside, PML, t = 100", dict(LINE, pml=LAYERS, time={"t_end": 100.0},
                                                         material=drude("(x-0.4)*(1.1-x)", 2.0, 0.5)), None)


def run_one(data, steps):
    if isinstance(data, str):
        case = with_changes(load_case(ROOT / "examples" / f"{data}.toml"), {"time": {"t_end": 1.0}})
    else:
        case = case_from_dict(data)
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case, backend=BACKEND[0], output_dir=tempfile.mkdtemp(dir=SCRATCH.name), comm=None)
    start, stopped = time.perf_counter(), None
    try:
        while not sim.finished and (steps is None or sim.step_count < steps):
            sim.advance(min(20, sim.steps - sim.step_count))
    except SolverError as error:
        stopped = str(error)
    energy = sim.system.energy(sim.u)
    return {"stopped": stopped is not None, "step": sim.step_count, "t": sim.t, "energy": energy,
            "over_initial": energy / sim.energy_initial if sim.energy_initial > 0 else None,
            "closest": sim.guard.closest if sim.guard is not None else None,
            "seconds": time.perf_counter() - start, "message": stopped}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--long", action="store_true", help="also two runs to t = 100 (a few minutes)")
    parser.add_argument("--json", default=None, help="default: benchmarks/growth_guard_cases[_cuda].json")
    args = parser.parse_args()
    BACKEND[0], LONG[0] = args.backend, args.long
    suffix = ("" if args.backend == "cpu" else f"_{args.backend}") + ("_long" if args.long else "")
    args.json = args.json or str(ROOT / "benchmarks" / f"growth_guard_cases{suffix}.json")
    results = {}
    print(f"{'case':48s} {'stopped':>7s} {'step':>6s} {'t':>7s} {'W/W0':>9s} {'closest':>9s} {'s':>6s}")
    all_cases = list(cases()) + [(f"example {name} (t_end 1)", name, None)
                                 for name in ("dipole_pml", "drude_slab", "sphere_scattering")]
    for name, data, steps in all_cases:
        if data == "sphere_scattering" and importlib.util.find_spec("gmsh") is None:
            print(f"{name:48s} skipped: its gmsh mesh needs the gmsh SDK", flush=True)  # (the GPU machine)
            continue
        row = run_one(data, steps)
        results[name] = row
        ratio = "-" if row["over_initial"] is None else f"{row['over_initial']:.3g}"
        closest = "-" if row["closest"] is None else f"{row['closest']:.3g}"
        print(f"{name:48s} {'yes' if row['stopped'] else 'no':>7s} {row['step']:6d} {row['t']:7.3f} {ratio:>9s} "
              f"{closest:>9s} {row['seconds']:6.1f}", flush=True)
    write_json(args.json, results, say="wrote")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
