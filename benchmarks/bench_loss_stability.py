"""Edge of stability of a conducting Maxwell box (systems/maxwell/loss.py): for dt at a
fraction q of the cfl bound, the largest dt*sigma/eps (bisection, as a fraction of the scheme's
real-axis reach) that keeps the energy of random fields from growing over N steps, next to what
the step's bound allows (docs/electromagnetics.md, "Conductivity and the time step").

    PYTHONPATH=src python benchmarks/bench_loss_stability.py 300 lsrk45,rk4
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from analytic import build_system
from lobatto.integrators import Stepper, get_scheme
from lobatto.systems.maxwell.system import MaxwellSystem, SPEC
from lobatto.systems.maxwell.loss import REAL_AXIS_REACH, REACH_FRACTION

keys = dict(elements=(2, 2, 2), order=3, periodic=[True, True, True])
probe = build_system(MaxwellSystem, **keys)
shape = probe.geometry.coords.shape[1:]
h = probe.geometry.min_spacing
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("steps", type=int, nargs="?", default=400, help="steps per energy test (default 400)")
parser.add_argument("integrators", nargs="?", default="lsrk45,rk4", help="comma-separated (default lsrk45,rk4)")
ARGS = parser.parse_args()
N = ARGS.steps

def grows(integrator, q, r):
    bound = SPEC.cfl_bounds[("upwind", integrator)]
    dt = q * bound * h  # c = 1
    sigma = r * REAL_AXIS_REACH[integrator] / dt
    fields = {"epsilon": np.ones(shape), "mu": np.ones(shape), "sigma": np.full(shape, sigma)}
    system = build_system(MaxwellSystem, material=fields, **keys)
    u = system.allocate_state()
    u[...] = np.random.default_rng(1).standard_normal(u.shape)
    e0 = system.energy(u)
    st = Stepper(system, get_scheme(integrator))
    for n in range(N):
        st.step(u, n * dt, dt)
        if not np.isfinite(u).all():
            return True
    return system.energy(u) > e0

for integrator in ARGS.integrators.split(","):
    for q in (0.1, 0.5, 0.9):
        lo, hi = 0.0, 1.2
        while hi - lo > 0.01:
            mid = 0.5 * (lo + hi)
            if grows(integrator, q, mid): hi = mid
            else: lo = mid
        allowed = (1 - q) * REACH_FRACTION
        print(f"{integrator} q={q}: edge dt*sigma/eps = {lo:.3f} x reach ({lo*REAL_AXIS_REACH[integrator]:.3f}); "
              f"allowed by the bound {allowed:.3f} x reach = {allowed/lo if lo else float('inf'):.2f} of the edge", flush=True)
