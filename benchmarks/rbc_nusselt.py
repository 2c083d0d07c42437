"""The Nusselt number of steady Rayleigh–Bénard rolls against Clever & Busse (1974), on the CPU.

Two-dimensional rolls between rigid plates at Ra = 5000, Pr = 0.71, in a periodic box of one
critical wavelength 2 pi / 3.117 (x; a thin periodic slab in y), in thermal-diffusion units
(viscosity = Pr, diffusivity = 1, force_z = Ra Pr T; T = 1 on the lower plate, 0 on the upper
one; docs/navier-stokes.md, "Buoyancy"). From the conduction profile with a perturbation of
the critical mode the rolls grow and settle by t ~ 0.4; the run ends at t = 0.6 with an HDF5
snapshot, which this script reads back with h5py and integrates with the GLL rule:

    Nu_volume = 1 + <u_z T> (the volume mean),   Nu_lower, Nu_upper = -<dT/dz> on each plate

(equal at a steady state). Reference: Clever, R. M. & Busse, F. H. 1974, "Transition to
time-dependent convection", J. Fluid Mech. 65, 625-645: Nu = 2.116 at Ra = 5000, Pr = 0.71,
alpha = 3.117 (3 digits; as tabulated by Toppaladoddi, Succi & Wettlaufer 2015 and the
codes that compare with them).

BDF2 with the advection extrapolated at target_cfl 0.5 has the spatial steady state exactly
(BDF and EXT sums of a steady field are exact); the sub-stepped (OIFS) steady state carries a
time error of the characteristics (a row with target_cfl 2, substeps 2 shows it).

    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/rbc_nusselt.py [--orders 6 8] \
        [--substepped] [--json benchmarks/results/rbc_nusselt.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

K = 3.117
RA, PR = 5000.0, 0.71
REFERENCE = 2.116  # Clever & Busse (1974), Ra = 5000, Pr = 0.71, alpha = 3.117
ELEMENTS = (3, 1, 3)
T_END = 0.6


def case(order: int, target_cfl: float, substeps: int):
    from lobatto.api import case_from_dict

    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": PR, "scalars": ["temperature"],
                    "force_z": f"{RA * PR!r}*temperature"},
        "scalar": {"temperature": {"diffusivity": 1.0, "tolerance": 1e-10}},
        "mesh": {"elements": list(ELEMENTS), "upper": [2 * math.pi / K, 0.25, 1.0],
                 "periodic": [True, True, False], "boundary": "wall"},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "target_cfl": target_cfl, "substeps": substeps, "initial_dt": 1e-3,
                 "t_end": T_END},
        "solver": {"pressure": {"tolerance": 1e-8}, "velocity": {"tolerance": 1e-10}},
        "boundary": {"zmin": {"temperature": 1}, "zmax": {"temperature": 0}},
        "initial": {"temperature": f"1 - z + 0.1*sin(pi*z)*cos({K}*x)"},
        "output": {"formats": ["hdf5"], "every": 100000, "name": "rbc", "log_every": 0},
    }, name="rbc_nusselt")


def nusselt(path: Path, order: int) -> dict:
    """Nu from a snapshot (h5py), on an affine box mesh: the volume mean of 1 + u_z T and the
    mean of -dT/dz on each plate, with the GLL rule of the snapshot's order."""
    import h5py

    from lobatto.discretization import derivative_matrix, gll_weights

    with h5py.File(path, "r") as f:
        x, y, z = (f["mesh"][c][...] for c in "xyz")
        uz, temperature = f["fields/uz"][...], f["fields/temperature"][...]
    w, d = gll_weights(order), derivative_matrix(order)
    # each element is a box: its axes a (x), b (y), c (z) are those along which x, y, z vary
    axis = {name: int(np.argmax([np.ptp(c[0], axis=a).max() for a in range(3)])) for name, c in
            (("x", x), ("y", y), ("z", z))}
    size = {name: np.ptp(c.reshape(len(c), -1), axis=1) for name, c in (("x", x), ("y", y), ("z", z))}
    weights = np.einsum("i,j,k->ijk", w, w, w)
    volume_weights = weights[None] * (size["x"] * size["y"] * size["z"] / 8)[:, None, None, None]
    volume = volume_weights.sum()
    nu_volume = 1 + float((volume_weights * uz * temperature).sum() / volume)
    # dT/dz = (2 / h_z) sum_j D[i, j] T_j along the element's z axis
    gradient = np.moveaxis(np.tensordot(d, np.moveaxis(temperature, axis["z"] + 1, 0), axes=1), 0, axis["z"] + 1)
    gradient *= (2 / size["z"])[:, None, None, None]
    plates = {}
    for name, level, index in (("lower", 0.0, 0), ("upper", 1.0, -1)):
        rows = np.flatnonzero(np.isclose(z.reshape(len(z), -1).min(axis=1) if index == 0 else
                                         z.reshape(len(z), -1).max(axis=1), level))
        face = np.take(gradient[rows], index, axis=axis["z"] + 1)  # (rows, n, n): the other two axes
        face_weights = np.outer(w, w)[None] * (size["x"][rows] * size["y"][rows] / 4)[:, None, None]
        plates[name] = -float((face_weights * face).sum() / face_weights.sum())
    return {"volume": nu_volume, **plates}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, nargs="+", default=[6, 8])
    parser.add_argument("--substepped", action="store_true",
                        help="also the lowest order at target_cfl 2 with 2 sub-steps (the OIFS time error)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    from lobatto.api import Simulation

    runs = [(order, 0.5, 0) for order in args.orders]
    if args.substepped:
        runs.append((min(args.orders), 2.0, 2))
    rows = []
    print(f"Rayleigh-Benard rolls, Ra = {RA:g}, Pr = {PR}, alpha = {K}, {ELEMENTS[0]} x {ELEMENTS[2]} elements, "
          f"t = {T_END}: Nu against Clever & Busse (1974) {REFERENCE}")
    print(f"{'N':>3} {'cfl':>5} {'sub':>4} {'steps':>6} {'Nu volume':>10} {'Nu lower':>10} {'Nu upper':>10} "
          f"{'vs ref':>8} {'s':>6}")
    for order, cfl, substeps in runs:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            sim = Simulation(case(order, cfl, substeps), backend="cpu", output_dir=Path(out), comm=None)
            sim.run()
            seconds = time.perf_counter() - start
            snapshot = sorted(Path(out).glob("rbc_*.h5"))[-1]
            nu = nusselt(snapshot, order)
        row = {"order": order, "target_cfl": cfl, "substeps": substeps, "steps": sim.system.steps_taken,
               "t": sim.t, "nu": nu, "relative_to_reference": nu["volume"] / REFERENCE - 1, "seconds": seconds}
        rows.append(row)
        print(f"{order:>3} {cfl:>5g} {substeps:>4} {row['steps']:>6} {nu['volume']:>10.5f} {nu['lower']:>10.5f} "
              f"{nu['upper']:>10.5f} {100 * row['relative_to_reference']:>7.2f}% {seconds:>6.1f}", flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"ra": RA, "pr": PR, "alpha": K, "elements": ELEMENTS, "t_end": T_END,
                                         "reference": {"nu": REFERENCE, "source": "Clever & Busse 1974"},
                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
