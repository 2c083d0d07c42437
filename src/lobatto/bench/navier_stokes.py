"""``lobatto bench navier-stokes``: a Navier–Stokes case's per-step throughput, or its time to
a simulated time (docs/benchmarks.md).

The case is the built-in Taylor–Green vortex (Re = 1600, the periodic box [0, 2 pi]^3 with
``--elements`` E^3 elements, BDF2, the HPF-RT filter on the highest mode, pressure to 1e-6 and
velocity to 1e-8 as benchmarks/cases/tgv_24.toml) or any Navier–Stokes case file (``--case``).
The options change its [time] (integrator, cfl or target_cfl, substeps, max_cfl, t_end),
[solver.pressure] (coarse, precision), [discretization] order and [physics] diagnostics_every;
the changed case is checked as ``lobatto run`` checks it.

* throughput (default): set-up, ``warmup`` steps (kernel compilation, the pressure projection
  filling up), then ``steps`` timed steps: seconds per step, point-steps/s (points = E (N+1)^3,
  this rank's, as the issues count them), pressure and velocity iterations per step, the share
  of the step per part (the system's part timers, which synchronise the device) and, from
  ``steps`` more steps with its timers on, the pressure solve's own parts (system.profile);
* time to solution (``t_end``): from t = 0 to t_end, the set-up and the steps timed apart
  (the steps' time includes the first steps' kernel compilation, as a run's does): steps
  taken, mean dt, the seconds per step after the first WARMUP_STEPS (as ``lobatto run``'s
  rate), the parts, and the diagnostics (kinetic energy, dissipation) every
  ``diagnostics_every`` steps, compared for the TGV with the 512^3 reference
  (bench/navier_stokes_report.py).

One rank (no MPI). The output directory the run needs is a temporary one, removed at the end.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
import tomllib
from pathlib import Path

from lobatto.api import Simulation, load_case, parse_case
from lobatto.bench.navier_stokes_report import compare_with_reference, find_reference, format_result
from lobatto.bench.report import cpu_model, run_meta, write_json
from lobatto.errors import InputError
from lobatto.runner.simulation import WARMUP_STEPS
from lobatto.solvers.elliptic import DEFAULT_SETTINGS

#: throughput mode: steps timed and warm-up steps before them (benchmarks/bench_tgv.py's)
DEFAULT_STEPS, DEFAULT_WARMUP = 20, 10
#: diagnostics every this many steps: throughput mode (their cost is a part of the step), and
#: time to solution (enough samples for the dissipation peak: benchmarks/cases/tgv_24.toml's)
DIAGNOSTICS_EVERY = {"throughput": 10, "time": 5}
#: built-in TGV: elements per direction and order when not given
TGV_ELEMENTS, TGV_ORDER, TGV_CFL = 16, 7, 0.5
#: time to solution without diagnostics: steps between the state checks (as the runner's)
CHECK_EVERY = 20


def tgv_data(elements: int, order: int) -> dict:
    """The built-in Taylor–Green vortex (Re = 1600) as a case table; [time] is set by the options."""
    two_pi = 2 * math.pi
    return {
        "physics": {"equations": "navier_stokes", "viscosity": 1 / 1600, "filter_modes": 1, "filter_weight": 10.0},
        "mesh": {"elements": [elements] * 3, "upper": [two_pi] * 3, "periodic": [True] * 3},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "t_end": 20.0},
        "solver": {"pressure": {"tolerance": 1e-6, "coarse_tolerance": 0.1}, "velocity": {"tolerance": 1e-8}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "output": {"formats": []},
    }


def check_options(args) -> None:
    """InputError (exit 2) for options out of range or that do not go together."""
    if args.elements is not None and args.elements < 1:
        raise InputError(f"--elements must be >= 1 (elements per direction of the TGV box), got {args.elements}")
    if args.order is not None and args.order < 1:
        raise InputError(f"--order must be >= 1, got {args.order}")
    if args.case is not None and args.elements is not None:
        raise InputError("--elements sizes the built-in TGV; with --case, set [mesh] elements in the case file")
    for name in ("cfl", "target_cfl", "max_cfl", "t_end"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"--{name.replace('_', '-')} must be a positive number, got {value}")
    if args.substeps is not None and args.substeps < 0:
        raise InputError(f"--substeps must be >= 0 (0: advection extrapolated, no sub-steps), got {args.substeps}")
    if args.diagnostics_every is not None and args.diagnostics_every < 0:
        raise InputError(f"--diagnostics-every must be >= 0 (0: none), got {args.diagnostics_every}")
    if args.t_end is None and args.reference is not None:
        raise InputError("--reference compares a run to --t-end with the TGV history; the throughput mode does not")
    if args.t_end is not None:
        if args.steps is not None or args.warmup is not None:
            raise InputError("--steps and --warmup are the throughput mode's; --t-end runs from t = 0 to T instead")
    else:
        if args.steps is not None and args.steps < 1:
            raise InputError(f"--steps must be >= 1, got {args.steps}")
        if args.warmup is not None and args.warmup < 0:
            raise InputError(f"--warmup must be >= 0, got {args.warmup}")


def case_data(args) -> tuple[dict, str, str]:
    """(case table, source, name) of the case to time, before the options change it."""
    if args.case is None:
        return tgv_data(args.elements or TGV_ELEMENTS, args.order or TGV_ORDER), "<tgv>", "tgv"
    path = Path(args.case)
    case = load_case(path)  # the file's own errors first, as `lobatto run` gives them
    if case.physics.equations != "navier_stokes":
        raise InputError(f"{args.case}: --case needs a Navier–Stokes case ([physics] equations = "
                         f"\"navier_stokes\"), this one is {case.physics.equations!r}")
    return tomllib.loads(path.read_text(encoding="utf-8")), str(args.case), path.stem or "case"


def apply_options(data: dict, args, mode: str) -> dict:
    """The case table with the options' changes (only the keys the options name)."""
    time_ = data.setdefault("time", {})
    if args.cfl is not None or args.target_cfl is not None or args.case is None:
        for key in ("dt", "cfl", "target_cfl", "initial_dt"):  # one rule for the step: the option's
            time_.pop(key, None)
        if args.target_cfl is not None:
            time_["target_cfl"] = args.target_cfl
        else:
            time_["cfl"] = args.cfl if args.cfl is not None else TGV_CFL
    if args.integrator is not None:
        time_["integrator"] = args.integrator
    if args.substeps:  # given and above 0: sub-steps
        time_["substeps"] = args.substeps
    elif args.substeps == 0:  # given as 0: extrapolated, whatever the case file says
        time_.pop("substeps", None)
    if args.max_cfl is not None:
        time_["max_cfl"] = args.max_cfl
    if args.t_end is not None:
        time_["t_end"] = args.t_end
    if args.order is not None:
        data.setdefault("discretization", {})["order"] = args.order
    pressure = data.setdefault("solver", {}).setdefault("pressure", {})
    if args.pressure_coarse is not None:
        pressure["coarse"] = args.pressure_coarse
    if args.precision is not None:
        pressure["precision"] = args.precision
    if getattr(args, "pressure_smoother", None) is not None:
        pressure["smoother"] = args.pressure_smoother
    if getattr(args, "smoother_degree", None) is not None:
        pressure["smoother_degree"] = args.smoother_degree
    physics = data.setdefault("physics", {})
    if args.diagnostics_every is not None:
        physics["diagnostics_every"] = args.diagnostics_every
    elif args.case is None:
        physics["diagnostics_every"] = DIAGNOSTICS_EVERY[mode]
    data.setdefault("output", {})["log_every"] = 0  # no step lines between the table's
    return data


def build(args, mode: str):
    """(Simulation, set-up seconds, case, temporary directory) of the changed case on --backend."""
    data, source, name = case_data(args)
    case = parse_case(apply_options(data, args, mode), source=source, name=name)
    directory = Path(tempfile.mkdtemp(prefix="lobatto_bench_ns_"))
    start = time.perf_counter()
    try:
        sim = Simulation(case, backend=args.backend, output_dir=directory / "run", comm=None)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    sim.backend.synchronize()
    return sim, time.perf_counter() - start, case, directory


def describe(sim, case, setup: float) -> dict:
    """What every record of this benchmark says about the run."""
    system, t = sim.system, case.time
    backend = sim.backend.describe()
    meta = run_meta()
    meta["device"] = backend.get("device") or cpu_model()
    pressure = case.tables["solver.pressure"]
    return {"benchmark": "navier-stokes", "meta": meta, "backend": backend,
            "case": {"name": case.name, "source": case.source, "elements": system.num_elements,
                     "order": system.order, "points": system.points, "integrator": t.integrator,
                     "substeps": int(getattr(t, "substeps", 0) or 0),
                     "cfl": t.cfl if t.dt is None and not sim.variable_dt else None,
                     "dt": None if sim.variable_dt else sim.dt, "target_cfl": t.target_cfl, "max_cfl": t.max_cfl,
                     "t_end": t.t_end, "pressure_coarse": pressure.get("coarse"),
                     "pressure_precision": pressure.get("precision"),
                     "pressure_smoother": pressure.get("smoother", DEFAULT_SETTINGS["smoother"]),
                     "pressure_smoother_degree": pressure.get("smoother_degree"),
                     "diagnostics_every": system.diagnostics_every},
            "setup_seconds": setup}


def parts_of(system, before: dict, seconds: float, steps: int) -> dict:
    """{part: seconds per step and share of ``seconds``} since ``before``, and what no part timed."""
    spent = {k: v - before.get(k, 0.0) for k, v in system.seconds.items()}
    parts = {k: {"seconds": v / steps, "share": v / seconds} for k, v in spent.items()}
    rest = seconds - sum(spent.values())
    parts["untimed"] = {"seconds": rest / steps, "share": rest / seconds}
    return parts


def iterations_since(system, before: dict, steps: int) -> dict:
    return {f"{k}_per_step": (v - before[k]) / steps for k, v in system.totals.items()}


def throughput(sim, steps: int, warmup: int, profile: bool) -> dict:
    """Seconds per step after the warm-up, the parts, and the pressure solve's parts."""
    system = sim.system
    sim.advance(warmup)
    sim.backend.synchronize()
    seconds, totals, first = dict(system.seconds), dict(system.totals), sim.step_count
    sim.largest_cfl = None
    start = time.perf_counter()
    sim.advance(steps)
    sim.backend.synchronize()
    elapsed = time.perf_counter() - start
    taken = sim.step_count - first
    if taken < 1:
        raise InputError(f"{sim.case.source}: the case reached [time] t_end = {sim.case.time.t_end} before the timed "
                         "steps: raise its t_end or lower --warmup")
    per_step = elapsed / taken
    result = {"mode": "throughput", "warmup": warmup, "steps": taken, "t": sim.t,
              "seconds_per_step": per_step, "point_steps_per_second": system.points / per_step,
              **iterations_since(system, totals, taken), "cfl": sim.largest_cfl,
              "parts": parts_of(system, seconds, elapsed, taken)}
    if sim.variable_dt and sim.dt_range is not None:
        result["dt_range"] = list(sim.dt_range)
    if profile and getattr(system, "profile", None) is not None:
        # a second set of steps with the pressure solve's timers on: they synchronise the device
        # after each part, so these steps are slower and not the ones timed above
        before, count = system.seconds["pressure"], sim.step_count
        system.profile.reset()
        system.profile.enabled = True
        sim.advance(steps)
        system.profile.enabled = False
        profiled = max(sim.step_count - count, 1)
        pressure = system.seconds["pressure"] - before
        result["pressure_parts"] = system.profile.report(pressure)
        result["pressure_profile"] = {"steps": profiled, "seconds_per_step": pressure / profiled}
    return result


def sample(sim) -> dict:
    """The system's diagnostics now (collective), with t."""
    return {"t": sim.t, **sim.system.diagnostics(sim.u)}


def to_time(sim) -> dict:
    """From t = 0 to [time] t_end: wall seconds, steps, mean dt, the parts, the diagnostics."""
    system = sim.system
    every = system.diagnostics_every
    history = [sample(sim)] if every else []
    seconds, totals = dict(system.seconds), dict(system.totals)
    first = None  # (steps, seconds) of the first steps, kernel compilation among them
    start = time.perf_counter()
    while not sim.finished:
        chunk = (every or CHECK_EVERY) - sim.step_count % (every or CHECK_EVERY)
        if sim.step_count < WARMUP_STEPS:
            chunk = min(chunk, WARMUP_STEPS - sim.step_count)
        if not sim.variable_dt:
            chunk = min(chunk, sim.steps - sim.step_count)
        sim.advance(chunk)  # its state check stops a run gone unstable (exit 1)
        if first is None and sim.step_count >= WARMUP_STEPS:
            sim.backend.synchronize()
            first = (sim.step_count, time.perf_counter() - start)
        report = system.step_report()
        if "kinetic_energy" in report:
            history.append({"t": sim.t, **{k: report[k] for k in ("kinetic_energy", "enstrophy", "dissipation",
                                                                   "divergence") if k in report}})
    sim.backend.synchronize()
    elapsed = time.perf_counter() - start
    if every and history[-1]["t"] != sim.t:
        history.append(sample(sim))
    steps = max(sim.step_count, 1)
    result = {"mode": "time_to_solution", "t_end": sim.t, "run_seconds": elapsed, "steps": sim.step_count,
              "mean_dt": sim.t / steps, "seconds_per_step": elapsed / steps,
              "point_steps_per_second": system.points * steps / elapsed,
              **iterations_since(system, totals, steps), "cfl": sim.largest_cfl,
              "parts": parts_of(system, seconds, elapsed, steps),
              "history": {k: [h.get(k) for h in history] for k in (history[0] if history else {})}}
    if first is not None and steps > first[0]:
        result["first_steps"] = {"steps": first[0], "seconds": first[1]}
        result["seconds_per_step_after_first"] = (elapsed - first[1]) / (steps - first[0])
    if sim.variable_dt and sim.dt_range is not None:
        result["dt_range"] = list(sim.dt_range)
    return result


def run(args) -> dict:
    """The measurement the options ask for, as the JSON record."""
    mode = "time" if args.t_end is not None else "throughput"
    compare = mode == "time" and (args.case is None or args.reference is not None)  # the TGV, or asked for
    reference = find_reference(args.reference) if compare else None  # a missing --reference FILE: before set-up
    sim, setup, case, directory = build(args, mode)
    try:
        result = describe(sim, case, setup)
        if mode == "time":
            result.update(to_time(sim))
            result["total_seconds"] = setup + result["run_seconds"]
            if compare:
                result["reference"] = compare_with_reference(result["history"], reference)
        else:
            result.update(throughput(sim, args.steps or DEFAULT_STEPS,
                                     DEFAULT_WARMUP if args.warmup is None else args.warmup, not args.no_profile))
    finally:
        sim.close()
        shutil.rmtree(directory, ignore_errors=True)
    return result


def command(args) -> int:
    """``lobatto bench navier-stokes`` (options of bench/cli.py): check, run, print, write the JSON."""
    check_options(args)
    result = run(args)
    print(format_result(result))
    write_json(args.json, result)
    return 0
