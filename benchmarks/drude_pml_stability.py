"""Dispersive media (Drude, Lorentz, Debye poles) inside the PML: stability over 1,000 crossing
times and the reflection of a pulse from a dispersive half-space terminated by the layer.

Inside the layer the poles are driven by the stretched field Lambda E (dispersive.py's
stretch_with), so the layer's medium is i omega eps(omega) Lambda E = curl H. ``--unstretched``
also runs the former formulation (the poles driven by E), which grows.

Stability: the medium fills a box lined with the layer; random E, H at every point (seeded),
the driver's step (fitted to the layer), the energy (fields and the poles' W_p) sampled about
200 times. Reported: the largest energy over the start, the last, the growth over the second
half (largest energy in it over the energy at its start) and the fitted rate d ln(energy)/dt
over the second half. Layouts ("crossing" = the box's width / c):

* ``1d``: 6 x 1 x 1 elements of 0.25, y and z periodic, two layer elements at xmin and xmax;
* ``2d``: 6 x 6 x 1 elements of 0.25, z periodic, one layer element on the four other sides
  (corners where two sigma overlap).

Reflection: a plane pulse (y, z periodic) from x = 0.4 in vacuum meets the medium at x = 0.75;
the interior is [0, 1.5], the layer (2 elements) at [1.5, 2], Silver-Mueller at xmin and behind
the layer. The reference runs the same with the medium continued to x = 5 (no layer, its echo
cannot reach the interior before t_end) and the same dt. Reflection = the difference of the two
runs on the interior's elements: 10 log10 of its largest energy (1/2 sum M |u|^2, eps and mu
weights 1) over the pulse's energy, and 20 log10 of its largest |value| over the pulse's; also
with Silver-Mueller at x = 1.5 in the medium instead of the layer, and the same in vacuum (where
Silver-Mueller absorbs a normal plane wave exactly).

Eigenvalues (``--eigenvalues``): the semi-discrete operator of the ``1d`` layout (E, H, the
layer's and the poles' auxiliary fields), built as a matrix by applying the rates to unit
vectors (the array code): its largest real part, with and without the stretch, at N = 1 (and 2 for two media).

    PYTHONPATH=src OMP_NUM_THREADS=1 python3 benchmarks/drude_pml_stability.py --small
    PYTHONPATH=src OMP_NUM_THREADS=1 python3 benchmarks/drude_pml_stability.py --small --eigenvalues --unstretched
    PYTHONPATH=src python3 benchmarks/drude_pml_stability.py          # 1,000 crossings, 1d and 2d
    PYTHONPATH=src OMP_NUM_THREADS=1 python3 benchmarks/drude_pml_stability.py --extra   # what --small leaves out
    PYTHONPATH=src python3 benchmarks/drude_pml_stability.py --backend cuda --small --unstretched   # on a GPU
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from lobatto.api import Simulation, case_from_dict
from lobatto.bench.report import write_json

MEDIA = {  # eps_inf, poles
    "drude": (1.0, [{"model": "drude", "plasma_frequency": 1.0, "collision_frequency": 0.05}]),
    "drude_lossy": (1.0, [{"model": "drude", "plasma_frequency": 1.0, "collision_frequency": 1.0}]),
    "lorentz": (2.0, [{"model": "lorentz", "resonance_frequency": 1.0, "delta_epsilon": 1.5,
                       "damping_frequency": 0.1}]),
    "debye": (1.5, [{"model": "debye", "delta_epsilon": 2.0, "relaxation_time": 0.3}]),
    "drude_lorentz": (1.0, [{"model": "drude", "plasma_frequency": 0.8, "collision_frequency": 0.05},
                            {"model": "lorentz", "resonance_frequency": 1.2, "delta_epsilon": 1.0,
                             "damping_frequency": 0.1}]),
}
H = 0.25


def medium_table(medium: str, where: str = "1") -> dict:
    eps, poles = MEDIA[medium]
    return {"medium": {"where": where, "sampling": "element", "epsilon": eps, "poles": poles}}


def unstretch(sim) -> None:
    """The former formulation: the poles driven by E inside the layer too."""
    for term in sim.system.terms:
        for other in getattr(term, "stretched", []):
            other.stretch = None
            if other.one_pass is not None:  # CUDA: the kernel without the stretch
                other.one_pass = type(other.one_pass)(*other.one_pass._given)
        if hasattr(term, "stretched"):
            term.stretched.clear()


def stability(medium: str, layout: str, order: int, crossings: float, stretched: bool = True, seed: int = 3,
              backend: str = "cpu") -> dict:
    if layout == "1d":
        mesh = {"elements": [6, 1, 1], "upper": [1.5, H, H], "periodic": [False, True, True], "boundary": "pec"}
        pml = {"sides": ["xmin", "xmax"], "elements": 2}
    else:
        mesh = {"elements": [6, 6, 1], "upper": [1.5, 1.5, H], "periodic": [False, False, True], "boundary": "pec"}
        pml = {"sides": ["xmin", "xmax", "ymin", "ymax"], "elements": 1}
    t_end = crossings * 1.5
    data = {"mesh": mesh, "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "time": {"t_end": t_end, "growth_check": False}, "pml": pml, "output": {"formats": []}}
    # (growth_check off: the former formulation's growth is what this study measures; the
    # run's guard, runner/growth_guard.py, would stop it)
    if medium != "vacuum":
        data["material"] = medium_table(medium)
    case = case_from_dict(data, name="stability")
    with tempfile.TemporaryDirectory() as out:
        sim = Simulation(case, backend=backend, output_dir=out, comm=None)
        if not stretched:
            unstretch(sim)
        sim.u[...] = sim.backend.asarray(np.random.default_rng(seed).standard_normal(sim.u.shape))
        start = sim.system.energy(sim.u)
        steps = round(t_end / sim.dt)
        every = max(1, min(steps // 200, 20))
        times, energies = [0.0], [1.0]
        began = time.perf_counter()
        while sim.step_count < steps:
            sim.advance(min(every, steps - sim.step_count))
            e = sim.system.energy(sim.u) / start
            times.append(sim.t)
            energies.append(e)
            if not math.isfinite(e) or e > 1e12:
                break
        seconds = time.perf_counter() - began
        rate = max(t.largest_rate for t in sim.system.terms if hasattr(t, "largest_rate"))
        dt = sim.dt
    times, energies = np.array(times), np.array(energies)
    half = times >= times[-1] / 2
    late = energies[half]
    fit = half & np.isfinite(energies) & (energies > 0)
    thin = max(1, len(times) // 200)  # the history kept in the JSON
    slope = float(np.polyfit(times[fit], np.log(energies[fit]), 1)[0]) if fit.sum() > 2 else math.nan
    return {"medium": medium, "layout": layout, "order": order, "stretched": stretched, "crossings": crossings,
            "t_reached": float(times[-1]), "steps": int(sim.step_count), "dt": dt, "dt_times_rate": dt * rate,
            "max_energy_over_start": float(energies.max()), "final_energy_over_start": float(energies[-1]),
            "late_growth": float(late.max() / late[0]), "late_rate": slope, "seconds": seconds,
            "history": [[float(t), float(e)] for t, e in zip(times[::thin], energies[::thin])]}


def operator_matrix(sim) -> np.ndarray:
    """du/dt and dq/dt of every unit vector of (u, the terms' auxiliary fields), as columns."""
    system, terms = sim.system, sim.system.terms
    sizes = [sim.u.size] + [0 if t.aux is None else t.aux.size for t in terms]
    offsets = np.cumsum([0] + sizes)
    matrix = np.zeros((offsets[-1], offsets[-1]))
    for j in range(offsets[-1]):
        x = np.zeros(offsets[-1])
        x[j] = 1.0
        u = x[:offsets[1]].reshape(sim.u.shape).copy()
        for i, t in enumerate(terms):
            if t.aux is not None:
                t.aux[...] = x[offsets[i + 1]:offsets[i + 2]].reshape(t.aux.shape)
        out = system.core_rhs(u, 0.0, np.zeros_like(u))
        for t in terms:  # the layer hands Lambda E - E to the poles first (as in its prepare)
            if hasattr(t, "hand_over_stretch"):
                t.hand_over_stretch()
        columns = []
        for t in terms:
            s, r = np.zeros_like(t.rate), None if t.aux is None else np.zeros_like(t.aux)
            t.rates(u, 0.0, s, r)
            out[:, t.index] += s
            columns.append(np.zeros(0) if r is None else r.ravel())
        matrix[:, j] = np.concatenate([out.ravel()] + columns)
    return matrix


def eigenvalues(medium: str, order: int, stretched: bool = True, alpha=None, layout: str = "1d") -> dict:
    """The largest real part of the semi-discrete operator A's eigenvalues, and the dimensions
    of the null spaces of A and A^2 (equal: no Jordan block at 0, so no secular growth). The
    ``1d`` layout, or ``2d``: 4 x 4 x 1 elements of 0.25, one layer element on four sides."""
    if layout == "1d":
        mesh = {"elements": [6, 1, 1], "upper": [1.5, H, H], "periodic": [False, True, True], "boundary": "pec"}
        pml = {"sides": ["xmin", "xmax"], "elements": 2}
    else:
        mesh = {"elements": [4, 4, 1], "upper": [1.0, 1.0, H], "periodic": [False, False, True], "boundary": "pec"}
        pml = {"sides": ["xmin", "xmax", "ymin", "ymax"], "elements": 1}
    data = {"mesh": mesh, "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "time": {"t_end": 1.0}, "pml": pml, "output": {"formats": []}}
    if alpha is not None:
        data["pml"]["alpha"] = alpha
    if medium != "vacuum":
        data["material"] = medium_table(medium)
    os.environ["LOBATTO_ARRAY_TERMS"] = "1"  # the array code: its rates are the reference
    try:
        with tempfile.TemporaryDirectory() as out:
            sim = Simulation(case_from_dict(data, name="eig"), backend="cpu", output_dir=out, comm=None)
            if not stretched:
                unstretch(sim)
            matrix = operator_matrix(sim)
    finally:
        del os.environ["LOBATTO_ARRAY_TERMS"]
    values = np.linalg.eigvals(matrix)
    top = values[np.argmax(values.real)]
    # (thresholds between round-off, 1e-12 of the largest singular value of A^2, and the slowest
    # decaying modes, |lambda|^2 ~ 1e-7 of it on these meshes)
    s1, s2 = np.linalg.svd(matrix, compute_uv=False), np.linalg.svd(matrix @ matrix, compute_uv=False)
    return {"medium": medium, "order": order, "layout": layout, "stretched": stretched, "alpha": alpha,
            "size": int(values.size), "largest_real_part": float(top.real), "its_imaginary_part": float(abs(top.imag)),
            "largest_modulus": float(np.abs(values).max()), "nullity": int(np.sum(s1 < 1e-11 * s1[0])),
            "nullity_of_square": int(np.sum(s2 < 1e-13 * s2[0]))}


def reflection(medium: str, order: int, t_end: float = 4.0, stretched: bool = True, backend: str = "cpu") -> dict:
    pulse = "exp(-((x-0.4)/0.1)**2)"
    base = {"discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": pulse, "Hz": pulse}, "output": {"formats": []}}
    if medium != "vacuum":
        base["material"] = medium_table(medium, "x - 0.75")

    def mesh(length):
        return {"elements": [round(length / H), 1, 1], "upper": [length, H, H], "periodic": [False, True, True],
                "boundary": "absorbing"}

    interior = 6  # elements of [0, 1.5]
    runs = {"pml": dict(base, mesh=mesh(2.0), pml={"sides": ["xmax"], "elements": 2}, time={"t_end": t_end}),
            "silver_mueller": dict(base, mesh=mesh(1.5)), "reference": dict(base, mesh=mesh(5.0))}
    sims = {}
    with tempfile.TemporaryDirectory() as out:
        for name in ("pml", "silver_mueller", "reference"):
            data = dict(runs[name])
            if name != "pml":  # the layer's dt, so the interior steps alike
                data["time"] = {"t_end": t_end, "dt": sims["pml"].dt}
            sims[name] = Simulation(case_from_dict(data, name=name), backend=backend, output_dir=Path(out) / name,
                                    comm=None)
        if not stretched:
            unstretch(sims["pml"])
        mass = np.asarray(sims["reference"].system.geometry.mass[:interior])
        energy = lambda v: 0.5 * float(np.sum(mass * np.sum(v ** 2, axis=0)))  # noqa: E731 (weights eps = mu = 1)
        host = lambda s: s.backend.to_host(s.u)[:, :interior]  # noqa: E731
        u0 = host(sims["reference"])
        pulse_energy, pulse_max = energy(u0), float(np.abs(u0).max())
        worst = {"pml": [0.0, 0.0], "silver_mueller": [0.0, 0.0]}
        steps = round(t_end / sims["pml"].dt)
        for _ in range(steps):
            for s in sims.values():
                s.advance(1)
            ref = host(sims["reference"])
            for name in worst:
                d = host(sims[name]) - ref
                worst[name][0] = max(worst[name][0], energy(d))
                worst[name][1] = max(worst[name][1], float(np.abs(d).max()))
    db = lambda x, p: p * math.log10(max(x, 1e-300))  # noqa: E731
    return {"medium": medium, "order": order, "stretched": stretched, "t_end": t_end, "steps": steps,
            **{name: {"energy_db": db(w[0] / pulse_energy, 10), "amplitude_db": db(w[1] / pulse_max, 20)}
               for name, w in worst.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="1d layout only, N = 2 (minutes on a CPU)")
    parser.add_argument("--extra", action="store_true", help="only what --small leaves out (2d, N = 4, 5)")
    parser.add_argument("--crossings", type=float, default=1000.0)
    parser.add_argument("--unstretched", action="store_true", help="also the former formulation (it grows)")
    parser.add_argument("--eigenvalues", action="store_true", help="only the operator's eigenvalues (N = 1, 2)")
    parser.add_argument("--backend", default="cpu", help="cpu or cuda (the stability and reflection runs)")
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    if args.eigenvalues:
        rows = []
        print(f"{'medium':14} {'layout':6} {'N':>2} {'form':11} {'size':>5} | {'max Re':>10} {'its |Im|':>9} "
              f"{'null A, A^2':>11}")
        runs = ([(m, 1, "1d") for m in ("vacuum", "drude", "drude_lossy", "lorentz", "debye")]
                + [("drude", 2, "1d"), ("lorentz", 2, "1d")]
                + [(m, 1, "2d") for m in ("vacuum", "drude", "lorentz")])
        for medium, order, layout in runs:
            for stretched in ((True, False) if args.unstretched and medium != "vacuum" else (True,)):
                e = eigenvalues(medium, order, stretched, layout=layout)
                rows.append(e)
                print(f"{medium:14} {layout:6} {order:>2} {'stretched' if stretched else 'unstretched':11} "
                      f"{e['size']:5d} | {e['largest_real_part']:10.3g} {e['its_imaginary_part']:9.3g} "
                      f"{e['nullity']:5d}, {e['nullity_of_square']:d}", flush=True)
        out = Path(args.output) if args.output else Path(__file__).parent / "results" / (
            f"drude_pml_eigenvalues_{datetime.date.today()}.json")
        write_json(out, {"eigenvalues": rows}, indent=1, default=None, say="wrote")
        return
    small_runs, more = [(m, "1d", 2) for m in MEDIA], [("drude", "2d", 2), ("lorentz", "2d", 2), ("drude", "1d", 4)]
    stable_runs = small_runs if args.small else more if args.extra else small_runs + more
    rows = []
    print(f"{'medium':14} {'layout':6} {'N':>2} {'form':11} {'crossings':>9} {'steps':>7} {'dt*rate':>7} | "
          f"{'max E/E0':>9} {'final':>9} {'late growth':>11} {'late rate':>10} {'s':>6}")
    forms = (True, False) if args.unstretched else (True,)
    for medium, layout, order in stable_runs:
        for stretched in forms:  # (the former formulation grows within a few crossings)
            s = stability(medium, layout, order, args.crossings if stretched else min(args.crossings, 10.0), stretched,
                          backend=args.backend)
            rows.append(s)
            print(f"{medium:14} {layout:6} {order:>2} {'stretched' if stretched else 'unstretched':11} "
                  f"{s['t_reached'] / 1.5:9.1f} {s['steps']:7d} {s['dt_times_rate']:7.2f} | "
                  f"{s['max_energy_over_start']:9.3g} {s['final_energy_over_start']:9.3g} {s['late_growth']:11.4g} "
                  f"{s['late_rate']:10.3g} {s['seconds']:6.1f}", flush=True)
    refl = []
    print(f"\n{'medium':14} {'N':>2} {'form':11} | {'PML dB (E / amp)':>18} | {'Silver-Mueller dB (E / amp)':>27}")
    for medium in ("vacuum", "drude", "lorentz", "drude_lorentz"):
        for order in ((3,) if args.small else (5,) if args.extra else (3, 5)):
            r = reflection(medium, order, backend=args.backend)
            refl.append(r)
            print(f"{medium:14} {order:>2} {'stretched':11} | {r['pml']['energy_db']:8.1f} / "
                  f"{r['pml']['amplitude_db']:7.1f} | {r['silver_mueller']['energy_db']:15.1f} / "
                  f"{r['silver_mueller']['amplitude_db']:9.1f}", flush=True)
    out = Path(args.output) if args.output else Path(__file__).parent / "results" / (
        f"drude_pml_stability_{args.backend}{'_small' if args.small else '_extra' if args.extra else ''}_"
        f"{datetime.date.today()}.json")
    write_json(out, {"backend": args.backend, "small": args.small, "crossings": args.crossings, "stability": rows,
                     "reflection": refl},
               indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
