"""The Taylor–Green vortex against the 512^3 spectral reference, and the printed tables of
``lobatto bench navier-stokes`` (bench/navier_stokes.py measures).

The reference is the HiOCFD workshop's pseudo-spectral history at Re = 1600 (columns t, E_k,
-dE_k/dt, enstrophy; its README is beside it in the project's shared reference data,
``shared/reference/tgv``). When that file is not found (an installed package), the peak
figures of its README stand in: -dE/dt peaks at 0.0128575 at t = 8.97.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.bench.report import number, rows_table
from lobatto.errors import InputError

REFERENCE_FILE = Path("shared") / "reference" / "tgv" / "spectral_Re1600_512.gdiag"
#: (t, -dE/dt) of the reference's peak, from its README (the largest sample of column 3)
REFERENCE_PEAK = (8.97, 0.0128575)


def find_reference(given: str | None) -> Path | None:
    """The reference file: ``given`` (InputError if it is not a file), else the shared copy
    beside the repository (or its parent: a worktree's), else None."""
    if given not in (None, "auto"):
        path = Path(given)
        if not path.is_file():
            raise InputError(f"--reference {given}: no such file (the 512^3 TGV history, {REFERENCE_FILE.name})")
        return path
    here = Path(__file__).resolve()
    for root in here.parents[3:6]:  # src/lobatto/bench/ -> the repository, then the directories above it
        if (root / REFERENCE_FILE).is_file():
            return root / REFERENCE_FILE
    return None


def peak(t, values) -> tuple[float, float, bool]:
    """(time, value, reached) of the largest sample, refined by the parabola through it and its
    neighbours; reached is False when the largest is the first or last sample."""
    t, values = np.asarray(t, dtype=float), np.asarray(values, dtype=float)
    i = int(np.argmax(values))
    if not 0 < i < len(values) - 1:
        return float(t[i]), float(values[i]), False
    a, b, c = np.polyfit(t[i - 1:i + 2] - t[i], values[i - 1:i + 2], 2)
    if a >= 0:  # not a maximum (flat samples): the sample itself
        return float(t[i]), float(values[i]), True
    shift = -b / (2 * a)
    return float(t[i] + shift), float(c - b * b / (4 * a)), True


def compare_with_reference(history: dict, reference: Path | None) -> dict:
    """The run's -dE/dt (centred differences of its kinetic energy) and 2 nu enstrophy peaks
    beside the reference's; with the reference file, the kinetic energy against it too."""
    t = np.asarray(history.get("t", []), dtype=float)
    out = {"source": str(reference) if reference is not None else "README figures of shared/reference/tgv",
           "reference_peak": REFERENCE_PEAK[1], "reference_peak_time": REFERENCE_PEAK[0], "samples": int(len(t))}
    if reference is not None:
        ref = np.loadtxt(reference, comments="#")
        i = int(np.argmax(ref[:, 2]))
        out.update(reference_peak=float(ref[i, 2]), reference_peak_time=float(ref[i, 0]))
    out["peak_reached"] = False
    if len(t) < 3:
        return out
    energy = np.asarray(history["kinetic_energy"], dtype=float)
    # the initial state is not discretely divergence-free: the first step's projection takes
    # energy out at once, which is no dissipation, so -dE/dt starts from the first sample after it
    late = t > 0
    rate = np.full(len(t), np.nan)
    if late.sum() >= 2:
        rate[late] = -np.gradient(energy[late], t[late])
        t_peak, value, reached = peak(t[late], rate[late])
        out.update(peak_minus_dEdt=value, peak_time=t_peak, peak_reached=reached,
                   relative_difference=value / out["reference_peak"] - 1.0 if reached else None,
                   time_difference=t_peak - out["reference_peak_time"] if reached else None)
    t_diss, diss, reached = peak(t, history["dissipation"])
    out.update(peak_dissipation=diss, peak_dissipation_time=t_diss, peak_dissipation_reached=reached)
    if reference is not None:
        inside = t <= ref[-1, 0]
        ref_energy = np.interp(t[inside], ref[:, 0], ref[:, 1])
        out["energy_max_relative_difference"] = float(np.max(np.abs(energy[inside] / ref_energy - 1.0)))
        out["final"] = {"t": float(t[-1]), "kinetic_energy": float(energy[-1]),
                        "minus_dEdt": None if np.isnan(rate[-1]) else float(rate[-1]),
                        "reference_kinetic_energy": float(np.interp(t[-1], ref[:, 0], ref[:, 1])),
                        "reference_minus_dEdt": float(np.interp(t[-1], ref[:, 0], ref[:, 2]))}
    return out


# Tables ---------------------------------------------------------------------------------------
def heading(r: dict) -> list[str]:
    c, b = r["case"], r["backend"]
    step = (f"target_cfl {c['target_cfl']}" if c["target_cfl"] is not None else f"dt {c['dt']:.4g}"
            + (f" (cfl {c['cfl']})" if c["cfl"] is not None else ""))
    what = "throughput" if r["mode"] == "throughput" else "time to solution"
    return [f"Navier–Stokes {what}: {c['name']}  backend={b['name']} ({r['meta']['device']})  N={c['order']}  "
            f"elements={c['elements']}  points={c['points']}",
            f"  {c['integrator']}  substeps={c['substeps']}  {step}  pressure: coarse={c['pressure_coarse']} "
            f"precision={c['pressure_precision']}  smoother={c.get('pressure_smoother')}"
            f"  commit {r['meta']['commit']}"]


def parts_lines(parts: dict) -> list[str]:
    rows = [[k, f"{v['seconds'] * 1e3:.2f}", f"{100 * (v['share'] or 0):.1f}"] for k, v in parts.items()
            if v["seconds"] or k in ("advection", "pressure", "velocity")]
    return ["    " + line for line in rows_table(["part", "ms/step", "%"], rows)]


def reference_lines(ref: dict, t_end: float) -> list[str]:
    lines = [f"  against the 512^3 spectral reference ({ref['source']}):"]
    shown = f"reference {ref['reference_peak']:.7f} at t = {ref['reference_peak_time']:.2f}"
    if not ref["samples"]:
        lines.append("    no diagnostics to compare (--diagnostics-every 0)")
    elif "peak_minus_dEdt" not in ref:
        lines.append("    too few diagnostics samples for -dE/dt (raise --t-end or lower --diagnostics-every)")
    elif ref["peak_reached"]:
        lines.append(f"    peak of -dE/dt         {ref['peak_minus_dEdt']:.7f} at t = {ref['peak_time']:.3f}   {shown}   "
                     f"({100 * ref['relative_difference']:+.2f} %, {ref['time_difference']:+.3f})")
    else:
        lines.append(f"    peak of -dE/dt         not reached by t = {t_end:.4g} (largest {ref['peak_minus_dEdt']:.7f} "
                     f"at t = {ref['peak_time']:.3f}, an end of the run)   {shown}")
    if "peak_dissipation" in ref:
        lines.append(f"    peak of 2 nu enstrophy {ref['peak_dissipation']:.7f} at t = {ref['peak_dissipation_time']:.3f}"
                     + ("" if ref["peak_dissipation_reached"] else " (an end of the run)"))
    if "final" in ref:
        f = ref["final"]
        lines.append(f"    at t = {f['t']:.4g}: E {f['kinetic_energy']:.7f} (reference {f['reference_kinetic_energy']:.7f}),"
                     f" -dE/dt {number(f['minus_dEdt'], '.6f')} (reference {f['reference_minus_dEdt']:.6f}); "
                     f"largest |E/E_ref - 1| {ref['energy_max_relative_difference']:.2e}")
    return lines


def format_result(r: dict) -> str:
    lines = heading(r) + [""]
    its = (f"P {number(r.get('pressure_iterations_per_step'), '.2f')} it/step   "
           f"U {number(r.get('velocity_iterations_per_step'), '.2f')} it/step   max CFL {number(r['cfl'], '.3f')}")
    if r["mode"] == "throughput":
        lines += [f"  set-up {r['setup_seconds']:.2f} s   warm-up {r['warmup']} steps   timed {r['steps']} steps",
                  f"  {r['seconds_per_step'] * 1e3:.2f} ms/step   {r['point_steps_per_second']:.3e} point-steps/s   {its}",
                  "", *parts_lines(r["parts"])]
        if "pressure_parts" in r:
            p = r["pressure_profile"]
            lines += ["", f"  the pressure solve's parts, its timers on over {p['steps']} more steps "
                      f"({p['seconds_per_step'] * 1e3:.2f} ms/step):"]
            per_step = {k: {**v, "seconds": v["seconds"] / p["steps"]} for k, v in r["pressure_parts"].items()}
            lines += parts_lines(per_step)
    else:
        dt = f"mean dt {r['mean_dt']:.4g}" + (f" ({r['dt_range'][0]:.3g} to {r['dt_range'][1]:.3g})"
                                              if "dt_range" in r else "")
        lines += [f"  t = 0 -> {r['t_end']:.6g}: {r['steps']} steps, {dt}",
                  f"  wall: steps {r['run_seconds']:.2f} s   set-up {r['setup_seconds']:.2f} s   "
                  f"total {r['total_seconds']:.2f} s",
                  f"  {r['seconds_per_step'] * 1e3:.2f} ms/step   {r['point_steps_per_second']:.3e} point-steps/s   {its}"]
        if "first_steps" in r:
            f = r["first_steps"]
            lines.append(f"  the first {f['steps']} steps {f['seconds']:.2f} s, then "
                         f"{r['seconds_per_step_after_first'] * 1e3:.2f} ms/step")
        lines += ["", *parts_lines(r["parts"])]
        if "reference" in r:
            lines += [""] + reference_lines(r["reference"], r["t_end"])
    return "\n".join(lines)
