"""Reflection from the perfectly matched layer ([pml], systems/maxwell/pml.py), and its
stability over 100 crossing times.

Reflection: a pulse runs from the interior region into the layer; the same pulse runs on a
domain larger by ``pad`` on every side (same element size, same dt, Silver-Mueller outer
boundary whose echo cannot reach the interior before t_end). The difference of the two runs'
fields on the interior's elements is what the truncation reflects. Reported, as maxima over
the run: 10 log10 of (energy of the difference in the interior) / (the pulse's energy), and
20 log10 of max |difference| / max |pulse| (any field component). Setups (z periodic, one
element thick, so the pulses are 2D-like; interior [0, 1] x [0, Ly]):

* ``plane``: a plane pulse (y periodic too) at normal incidence on xmax (and xmin behind);
* ``normal``: a Gaussian beam-pulse Ez = exp(-r^2/w^2), H = (k x z) Ez, k = +x: mostly normal
  incidence on xmax, with the oblique parts of its angular spectrum;
* ``oblique``: the same travelling along (1, 1)/sqrt(2), hitting xmax at 45 degrees
  (interior [0, 1] x [0, 2], start (0.4, 0.5)).

Each is also run with the plain Silver-Mueller boundary at the interior's edge (no layer).
Stability: a box lined with the default layer on all six sides, random E, H in its interior,
100 crossing times with the step the driver uses (fitted to the layer): the largest energy
over the start, and the energy at the end. ``--stiffness``: the largest stable cfl with the
layer's rates (what RATE_REACH in pml.py rests on).

    PYTHONPATH=src OMP_NUM_THREADS=1 python3 benchmarks/bench_pml_reflection.py --small
    PYTHONPATH=src python3 benchmarks/bench_pml_reflection.py --backend cuda
"""

from __future__ import annotations

import argparse
import datetime
import math
import time
from pathlib import Path

import numpy as np

from lobatto.api import Simulation, case_from_dict
from lobatto.backends import get_backend
from lobatto.bench.report import write_json
from lobatto.integrators import Stepper, get_scheme, stable_time_step
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.pml import (PerfectlyMatchedLayer, PmlSpec, layer_profile, layer_time_step)
from lobatto.systems.maxwell.system import MaxwellSystem

SIDES4 = ("xmin", "xmax", "ymin", "ymax")
SETUPS = {  # interior height, start, direction, t_end, sides with the layer
    "plane": (None, (0.5, 0.5), (1.0, 0.0), 1.5, ("xmin", "xmax")),
    "normal": (1.0, (0.5, 0.5), (1.0, 0.0), 1.5, SIDES4),
    "oblique": (2.0, (0.4, 0.5), (2**-0.5, 2**-0.5), 2.0, SIDES4),
}
WIDTH = 0.1  # the pulse's Gaussian width


def build(backend, setup, order, h, pad, layers, boundary, pml_keys):
    height, _, _, _, sides = SETUPS[setup]
    nx = round((1 + 2 * pad) / h)
    if height is None:  # plane: periodic in y
        mesh = box_mesh((nx, 1, 1), lower=(-pad, 0, 0), upper=(1 + pad, h, h), periodic=(False, True, True),
                        boundary=boundary)
    else:
        ny = round((height + 2 * pad) / h)
        mesh = box_mesh((nx, ny, 1), lower=(-pad, -pad, 0), upper=(1 + pad, height + pad, h),
                        periodic=(False, False, True), boundary=boundary)
    system = MaxwellSystem(mesh, order, get_backend(backend))
    if layers:
        spec = PmlSpec(sides, layers, None, pml_keys.get("grading_order", 3.0), pml_keys.get("reflection", 1e-6),
                       None, pml_keys.get("alpha"))
        elements, sigma, described, alpha = layer_profile(system, spec)
        system.add_term(PerfectlyMatchedLayer(system, elements, sigma, alpha, described))
    return system


def interior(system, setup):
    height = SETUPS[setup][0]
    c = system.geometry.coords.mean(axis=(2, 3, 4))
    inside = (c[0] > 0) & (c[0] < 1)
    if height is not None:
        inside &= (c[1] > 0) & (c[1] < height)
    inside = np.nonzero(inside)[0]
    return inside[np.lexsort((c[1, inside], c[0, inside]))]


def pulse(system, setup):
    _, (x0, y0), (kx, ky), _, _ = SETUPS[setup]
    x, y, _ = system.geometry.coords
    along = kx * (x - x0) + ky * (y - y0)
    across = 0.0 if SETUPS[setup][0] is None else -ky * (x - x0) + kx * (y - y0)
    g = np.exp(-(along**2 + across**2) / WIDTH**2)
    u = np.zeros((6,) + g.shape)
    u[2], u[3], u[4] = g, ky * g, -kx * g  # E = z G, H = (k x z) G
    return u


def run_samples(system, setup, dt, every=4):
    """The fields on the interior's elements every few steps (host arrays)."""
    backend = system.backend
    u = backend.asarray(pulse(system, setup))
    inside = interior(system, setup)
    stepper = Stepper(system, get_scheme("lsrk45"))
    samples = [backend.to_host(u)[:, inside]]
    start = time.perf_counter()
    for step in range(int(SETUPS[setup][3] / dt)):
        stepper.step(u, step * dt, dt)
        if step % every == every - 1:
            samples.append(backend.to_host(u)[:, inside])
    return np.array(samples), system.geometry.mass[inside], time.perf_counter() - start


def reflection(backend, setup, order, h, layers, pml_keys, pad_reference):
    """{boundary: (energy dB, amplitude dB)} for the layer (behind it PEC and absorbing) and
    for the plain Silver-Mueller boundary, against the large-domain reference."""
    layered = build(backend, setup, order, h, layers * h, layers, "pec", pml_keys)
    term = layered.terms[0]
    dt = layer_time_step(stable_time_step(0.5, layered.geometry.min_spacing, 1.0), term.largest_rate, 0.5, 0.63)
    reference, mass, seconds = run_samples(build(backend, setup, order, h, pad_reference, 0, "absorbing", {}), setup,
                                           dt)
    energy0 = 0.5 * np.sum(mass * np.sum(reference[0] ** 2, axis=0))
    peak = np.abs(reference[0]).max()
    out = {"dt": dt, "sigma_max": term.largest_rate - term.alpha, "alpha": term.alpha,
           "reference_seconds": seconds}
    runs = {"pml_pec": layered, "pml_absorbing": build(backend, setup, order, h, layers * h, layers, "absorbing",
                                                      pml_keys),
            "silver_mueller": build(backend, setup, order, h, 0.0, 0, "absorbing", {})}
    for name, system in runs.items():
        samples, _, seconds = run_samples(system, setup, dt)
        diff = samples - reference
        energy = max(0.5 * np.sum(mass * np.sum(d**2, axis=0)) for d in diff) / energy0
        out[name] = {"energy_db": 10 * math.log10(max(energy, 1e-300)),
                     "amplitude_db": 20 * math.log10(max(np.abs(diff).max() / peak, 1e-300)), "seconds": seconds}
    return out


def stability(backend, order, elements, crossings, seed=3):
    """Default [pml] on all sides of the unit box, random E, H inside it; the driver's dt."""
    data = {"mesh": {"elements": [elements] * 3, "boundary": "pec"}, "discretization": {"order": order},
            "time": {"t_end": float(crossings)}, "pml": {}, "output": {"formats": []}}
    sim = Simulation(case_from_dict(data), backend=backend, output_dir="/tmp/bench_pml_stability", comm=None)
    system = sim.system
    term = system.terms[0]
    u = np.random.default_rng(seed).standard_normal(sim.u.shape)
    u[:, term.elements] = 0
    sim.u[...] = system.backend.asarray(u)
    start_energy, energies = system.energy(sim.u), []
    chunk = max(1, sim.steps // 200)
    start = time.perf_counter()
    while sim.step_count < sim.steps:
        sim.advance(min(chunk, sim.steps - sim.step_count))
        energies.append(system.energy(sim.u) / start_energy)
    energies = np.array(energies)
    late = energies[len(energies) // 2:]
    return {"order": order, "elements": elements ** 3, "layer_elements": int(term.count), "steps": sim.steps,
            "dt": sim.dt, "dt_times_rate": sim.dt * term.largest_rate, "crossings": crossings,
            "max_energy_over_start": float(energies.max()), "final_energy_over_start": float(energies[-1]),
            "late_growth": bool(late.max() > late[0] * (1 + 1e-9)), "seconds": time.perf_counter() - start}


def stiffness_edge(order, elements, layers, reflection, crossings=2.0):
    """The largest cfl (bisection) at which random fields in a box lined on all sides stay
    bounded for ``crossings``, and dt (alpha + sigma_max) there."""
    def grows(cfl):
        system = MaxwellSystem(box_mesh((elements,) * 3), order, get_backend("cpu"))
        spec = PmlSpec(tuple(SIDES4) + ("zmin", "zmax"), layers, None, 3.0, reflection, None, None)
        e, sigma, described, alpha = layer_profile(system, spec)
        term = PerfectlyMatchedLayer(system, e, sigma, alpha, described)
        system.add_term(term)
        u = np.random.default_rng(1).standard_normal(system.allocate_state().shape)
        dt = stable_time_step(cfl, system.geometry.min_spacing, 1.0)
        stepper, start = Stepper(system, get_scheme("lsrk45")), system.energy(u)
        with np.errstate(all="ignore"):
            for step in range(int(crossings / dt)):
                stepper.step(u, step * dt, dt)
            energy = system.energy(u)
        return not (energy < 2 * start), dt * term.largest_rate

    low, high = 0.05, 0.7
    for _ in range(7):
        mid = 0.5 * (low + high)
        low, high = (low, mid) if grows(mid)[0] else (mid, high)
    return {"order": order, "elements": elements, "layers": layers, "reflection": reflection, "cfl": low,
            "dt_times_rate": grows(low)[1], "reach": grows(low)[1] / (1 - low / 0.63)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--small", action="store_true", help="CPU size: a few minutes")
    parser.add_argument("--stiffness", action="store_true", help="also bisect for the stable cfl (CPU)")
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    h = 0.25
    if args.small:
        orders, layer_counts, setups, pad = (5,), (3,), ("plane", "normal", "oblique"), 1.0
        stable_runs = [(2, 7, 100)]
    else:
        orders, layer_counts, setups, pad = (5, 7), (2, 3, 4), ("plane", "normal", "oblique"), 1.0
        stable_runs = [(5, 8, 100), (7, 8, 100)]
    rows = []
    print(f"{'setup':8} {'N':>2} {'layers':>6} | {'PML+PEC dB (E / amp)':>22} | {'PML+SM dB (E / amp)':>22} | "
          f"{'Silver-Mueller dB (E / amp)':>27}")
    for setup in setups:
        for order in orders:
            for layers in layer_counts:
                r = reflection(args.backend, setup, order, h, layers, {}, pad)
                r.update(setup=setup, order=order, layers=layers, h=h)
                rows.append(r)
                cells = [f"{r[k]['energy_db']:9.1f} / {r[k]['amplitude_db']:6.1f}"
                         for k in ("pml_pec", "pml_absorbing", "silver_mueller")]
                print(f"{setup:8} {order:>2} {layers:>6} | {cells[0]:>22} | {cells[1]:>22} | {cells[2]:>27}",
                      flush=True)
    stable = []
    for order, elements, crossings in stable_runs:
        s = stability(args.backend, order, elements, crossings)
        stable.append(s)
        print(f"stability N={order} {elements}^3 elements ({s['layer_elements']} in the layer), {s['steps']} steps "
              f"({crossings} crossings), dt*(alpha+sigma_max) = {s['dt_times_rate']:.2f}: max energy / start "
              f"{s['max_energy_over_start']:.3g}, final {s['final_energy_over_start']:.3g}, late growth "
              f"{s['late_growth']} ({s['seconds']:.0f} s)", flush=True)
    edges = []
    if args.stiffness:
        for order, elements, layers, refl in ((3, 3, 1, 1e-6), (4, 4, 1, 1e-6), (5, 3, 1, 1e-6), (6, 3, 1, 1e-6),
                                              (7, 3, 1, 1e-6), (3, 5, 2, 1e-6), (6, 3, 1, 1e-3), (7, 3, 1, 1e-3)):
            e = stiffness_edge(order, elements, layers, refl)
            edges.append(e)
            print(f"stiffness N={order} {elements}^3, {layers} layer(s), R0={refl:g}: stable up to cfl {e['cfl']:.3f}, "
                  f"dt*(alpha+sigma_max) {e['dt_times_rate']:.2f}, reach {e['reach']:.2f}", flush=True)
    out = Path(args.output) if args.output else Path(__file__).parent / "results" / (
        f"pml_reflection_{args.backend}{'_small' if args.small else ''}_{datetime.date.today()}.json")
    write_json(out, {"backend": args.backend, "small": args.small, "reflection": rows, "stability": stable,
                     "stiffness": edges}, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
