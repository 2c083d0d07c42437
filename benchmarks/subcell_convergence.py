"""Sub-cell averaging (systems/maxwell/subcell.py) against point sampling: the reflected energy
of a pulse from a dielectric slab whose faces cut through elements, against the exact value,
as the elements shrink (error vs h at fixed N) and as the order grows (error vs N at fixed h).

A Gaussian pulse Ey = Hz = exp(-((x - x0)/w)^2) cos(k0 (x - x0)) (k0 = 0 here) at normal incidence
on a slab of eps = 2.25 (n = 1.5) on a < x < b, absorbing ends, periodic in y and z; at t_end
the slab has emptied (4 round trips: r^8 = 2.6e-6 of the amplitude) and the energy on x < a
over the initial energy is R, against the exact R = int |r(k)|^2 |G(k)|^2 dk / int |G(k)|^2 dk
with the slab's Airy |r(k)|^2 = 1 - 1/(1 + ((n - 1/n)/2)^2 sin^2(n k d)) and the pulse's
spectrum G (quadrature on a fine grid, here).

    PYTHONPATH=src python3 benchmarks/subcell_convergence.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time

import numpy as np

from lobatto.api import Simulation, case_from_dict

N_SLAB, A, B = 1.5, 1.63, 1.9  # the slab's faces, off every element face of the meshes below
X0, W, K0 = 0.6, 0.3, 0.0  # K0 > 0: a carrier (more sensitive to d, and to the discretisation)
LOWER, UPPER, T_END = -2.5, 6.0, 3.6


def exact_reflection() -> float:
    k = np.linspace(-K0 - 40 / W, K0 + 40 / W, 400_001)
    g = np.exp(-((k - K0) * W) ** 2 / 4) + np.exp(-((k + K0) * W) ** 2 / 4)  # cos carrier: two lobes
    d = B - A
    r2 = 1 - 1 / (1 + ((N_SLAB - 1 / N_SLAB) / 2) ** 2 * np.sin(N_SLAB * k * d) ** 2)
    return float(np.sum(r2 * g**2) / np.sum(g**2))


def exact_ey(x: np.ndarray, t: float) -> np.ndarray:
    """Ey at time t: the reflected field on x < A and the transmitted one on x > B (0 inside the
    slab, emptied by then), each an integral over k of the pulse's spectrum G(k) = W sqrt(pi)
    exp(-k^2 W^2 / 4 - i k X0) times the slab's coefficients (e^(i(k x - k t)) waves):
    r_slab e^(ik(2A - x - t)) and t_slab e^(ik(x - d - t)) (Born and Wolf's Airy sums)."""
    assert K0 == 0.0
    k = np.linspace(-15 / W, 15 / W, 4_001)  # G < 1e-24 beyond; dk = 0.025 resolves |x - t| < 100
    n, d = N_SLAB, B - A
    g = W * math.sqrt(math.pi) * np.exp(-(k * W) ** 2 / 4 - 1j * k * X0)
    r12, r21, t12, t21 = (1 - n) / (1 + n), (n - 1) / (1 + n), 2 / (1 + n), 2 * n / (1 + n)
    phase = np.exp(2j * n * k * d)
    r_slab = r12 + t12 * t21 * r21 * phase / (1 - r21**2 * phase)
    t_slab = t12 * t21 * np.exp(1j * n * k * d) / (1 - r21**2 * phase)
    out = np.zeros_like(x)
    dk = k[1] - k[0]
    flat = x.reshape(-1)
    result = np.zeros(flat.size)
    for start in range(0, flat.size, 2000):
        xs = flat[start:start + 2000, None]
        left = np.sum(g * r_slab * np.exp(1j * k * (2 * A - xs - t)), axis=1).real
        right = np.sum(g * t_slab * np.exp(1j * k * (xs - d - t)), axis=1).real
        result[start:start + 2000] = np.where(xs[:, 0] < A, left, np.where(xs[:, 0] > B, right, 0.0)) * dk / (2 * math.pi)
    out[...] = result.reshape(x.shape)
    return out


def pulse() -> str:
    return f"exp(-((x-{X0})/{W})**2)*cos({K0!r}*(x-{X0}))"


def measured_reflection(h: float, order: int, sampling: str, cfl: float = 0.5) -> tuple:
    elements = int(round((UPPER - LOWER) / h))
    case = case_from_dict({
        "mesh": {"elements": [elements, 1, 1], "lower": [LOWER, 0.0, 0.0], "upper": [UPPER, h, h],
                 "periodic": [False, True, True], "boundary": "absorbing"},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"},
        "material": {"slab": {"where": f"(x - {A})*({B} - x)", "epsilon": N_SLAB**2, "sampling": sampling}},
        "initial": {"Ey": pulse(), "Hz": pulse()}, "time": {"t_end": T_END, "cfl": cfl},
        "output": {"formats": []}})
    with tempfile.TemporaryDirectory() as out:
        sim = Simulation(case, backend="cpu", output_dir=out, comm=None)
        system = sim.system
        start_energy = system.energy(sim.u)
        clock = time.perf_counter()
        sim.run()
        seconds = time.perf_counter() - clock
        u = sim.backend.to_host(sim.u)
        x = system.geometry.coords[0]
        eps = system.medium.epsilon
        eps = eps if eps.ndim == 5 else eps[None]
        density = 0.5 * system.geometry.mass * (np.sum(eps * u[0:3] ** 2, axis=0) + np.sum(u[3:6] ** 2, axis=0))
        m = system.geometry.mass
        exact = exact_ey(x, sim.t) if K0 == 0.0 else None
        field = None if exact is None else float(np.sqrt(np.sum(m * (u[1] - exact) ** 2) / np.sum(m * exact**2)))
        return float(density[x < A].sum() / start_energy), seconds, sim.step_count, field


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two sizes and two orders only")
    parser.add_argument("--sizes", type=float, nargs="*", help="the h study's element sizes (N = 4)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    exact = exact_reflection()
    print(f"exact R = {exact:.9f} (slab n = {N_SLAB}, d = {B - A}, faces at x = {A}, {B})")
    rows = []
    sizes = args.sizes if args.sizes is not None else ((0.5, 0.25) if args.quick else (0.5, 0.25, 0.125))
    studies = [("h", 4, h) for h in sizes]
    studies += [("N", n, 0.25) for n in ((3, 5) if args.quick else (3, 5, 6))]
    print(f"{'study':>5} {'N':>2} {'h':>7} {'R point':>12} {'err point':>10} {'R average':>12} {'err average':>11}"
          f" {'ratio':>6} {'field point':>11} {'field avg':>10}")
    for study, order, h in studies:
        row = {"study": study, "order": order, "h": h}
        for sampling in ("point", "average"):
            r, seconds, steps, field = measured_reflection(h, order, sampling)
            row[sampling] = {"R": r, "error": abs(r - exact), "seconds": seconds, "steps": steps,
                             "field_error": field}
        rows.append(row)
        print(f"{study:>5} {order:>2} {h:>7.4f} {row['point']['R']:>12.9f} {row['point']['error']:>10.2e} "
              f"{row['average']['R']:>12.9f} {row['average']['error']:>11.2e} "
              f"{row['point']['error'] / row['average']['error']:>6.1f} {row['point']['field_error']:>11.2e} "
              f"{row['average']['field_error']:>10.2e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"exact": exact, "slab": [A, B], "n": N_SLAB, "rows": rows}, f, indent=1)
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
