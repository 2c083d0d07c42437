"""Cost of [output.dft] beside a Maxwell step (docs/electromagnetics.md): seconds per step of the
step and of one accumulation, for a whole-volume transform and for the six sides.

    python benchmarks/dft_cost.py [--backend cpu|cuda] [--elements 6] [--order 7]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import lobatto
from lobatto.config.dft import DftSection
from lobatto.monitors.dft import DftMonitor

SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--elements", type=int, default=6)
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = {"mesh": {"elements": [args.elements] * 3, "boundary": "pec"}, "discretization": {"order": args.order},
            "initial": {"Ez": "sin(pi*x)*sin(pi*y)"}, "time": {"t_end": 1e-3}, "output": {"every": 0, "formats": []}}
    run = lobatto.run(lobatto.case_from_dict(data, name="cost"), output_dir=tempfile.mkdtemp(), backend=args.backend)
    sim = run.simulation
    system, backend, u = sim.system, sim.backend, sim.u

    def timed(work) -> float:
        work()
        backend.synchronize()
        start = time.perf_counter()
        for _ in range(args.repeat):
            work()
        backend.synchronize()
        return (time.perf_counter() - start) / args.repeat

    step = timed(lambda: sim.stepper.step(u, 0.0, sim.dt))
    points = system.points if hasattr(system, "points") else None
    print(f"{args.backend}: {args.elements}^3 elements, N = {args.order}, {points} points: step {step * 1e3:.3f} ms")
    names = tuple(system.field_names)
    for label, section in [("volume, 1 frequency, Ez", DftSection((0.7,), ("Ez",), (), ("all",), ())),
                           ("volume, 3 frequencies, 6 fields", DftSection((0.7, 1.0, 1.3), names, (), ("all",), ())),
                           ("6 sides, 3 frequencies", DftSection((0.7, 1.0, 1.3), names, SIDES, (), ("poynting_flux",)))]:
        monitor = DftMonitor(section, system)
        clock = iter(range(10**6))
        seconds = timed(lambda: monitor.accumulate(u, 0.01 * next(clock)))
        print(f"  {label:34s} {seconds * 1e3:9.3f} ms a step ({seconds / step:6.1%} of the step)")


if __name__ == "__main__":
    main()
