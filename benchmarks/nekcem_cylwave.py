"""NekCEM's own cylinder-waveguide regression case, run by lobatto: ``python benchmarks/nekcem_cylwave.py REA``.

REA is NekCEM's ``tests/cylwave/cylwave.rea`` (50 elements, radius 8 with circle ``C`` sides, 10
layers, periodic in z), fetched by the user from github.com/NekCEM/NekCEM (it is not part of this
repository). NekCEM's ``cylwave.usr`` changes the mesh before it runs; this script does the same
to the file's text before lobatto's reader sees it:

- ``usrdat``: corners whose x-y radius squared exceeds R^2 - 1e-4 are moved onto the circle of
  radius R = int(10 r_max + 0.1) / 10 (r_max: the largest corner radius, 5.65685 sqrt 2 -> 8.0);
- ``usrdat2``: z is scaled by 2 pi x_max / (z_max - z_min), x_max the largest x of the GLL points
  of order N (on the curved wall: 7.954 at N = 11), so that one TM01 wavelength fits the length
  2 pi x_max; the solution's kz is 2 pi / length.

Then NekCEM's settings: order N = 11 (its SIZE), upwind flux, lsrk45, dt = 0.25 x the smallest GLL
spacing (its ``cfl`` 0.25), 1000 steps, and its error measure (``cem_error``): per field
L2 = sqrt(sum B err^2 / volume) and the largest |err|, passing below 5e-9 and 5e-8 at every
check, as its ``userchk`` checks: steps 1 to 10 and every 100th (its ``iocomm``). The table
gives the final step's errors and whether every check passed.

    PYTHONPATH=src python benchmarks/nekcem_cylwave.py cylwave.rea --backend cuda --forms split,chain,galerkin
    PYTHONPATH=src python benchmarks/nekcem_cylwave.py cylwave.rea --backend cuda --forms galerkin,galerkin:invariant:S:strong
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
try:
    import lobatto  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parent / "src"))

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import processor, write_json  # noqa: E402
from lobatto.systems.maxwell import galerkin  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests"))
from cylwave import tm01  # noqa: E402

L2_TOLERANCE, MAX_TOLERANCE = 5e-9, 5e-8  # cylwave.usr: l2tol, linftol
FIELDS = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")


def nekcem_mesh(text: str, xmax: float | None = None) -> tuple[str, float, float]:
    """The .rea text with usrdat's corner snap and usrdat2's z scaling by 2 pi xmax / (z_max - z_min)
    (without xmax: no scaling); (text, radius, length)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "MESH DATA" in line) + 1
    nel = int(lines[start].split()[0])
    rows = []  # (line index of the element's first coordinate row)
    i = start + 1
    for _ in range(nel):
        assert "ELEMENT" in lines[i], lines[i]
        rows.append(i + 1)
        i += 7
    corners = np.array([[[float(v) for v in lines[r + k].split()] for k in range(6)] for r in rows])  # (E, 6, 4)
    x = np.concatenate([corners[:, 0], corners[:, 3]], axis=1)
    y = np.concatenate([corners[:, 1], corners[:, 4]], axis=1)
    z = np.concatenate([corners[:, 2], corners[:, 5]], axis=1)
    radius = int(10 * math.sqrt((x * x + y * y).max()) + 0.1) / 10.0
    rr = x * x + y * y
    snap = rr > radius * radius - 1e-4
    scale = np.where(snap, radius / np.sqrt(np.where(snap, rr, 1.0)), 1.0)
    x, y = x * scale, y * scale
    # the corners' z is what the map's z is (the C sides bend only x and y): scale them
    zmin, zmax = z.min(), z.max()
    if xmax is not None:
        z = 2 * math.pi * xmax / (zmax - zmin) * (z - zmin)
    for e, r in enumerate(rows):
        for k, values in enumerate((x[e, :4], y[e, :4], z[e, :4], x[e, 4:], y[e, 4:], z[e, 4:])):
            lines[r + k] = " " + " ".join(f"{v: .15E}" for v in values)
    return "\n".join(lines) + "\n", radius, float(z.max() - z.min())


def case(rea: Path, order: int, form: str = "split", cfl: float = 0.25) -> dict:
    return {"mesh": {"generator": "nek", "file": str(rea), "boundaries": {"PEC": "pec"}},
            "discretization": {"order": order, "flux": "upwind", "volume_form": form},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0, "cfl": cfl},
            "output": {"formats": []}}


def prepared_mesh(source: Path, order: int, workdir: str) -> tuple[Path, float, float]:
    """NekCEM's mesh at order N written to workdir: (path, radius, length)."""
    rea = Path(workdir) / f"cylwave_{order}.rea"
    text, radius, _ = nekcem_mesh(source.read_text())
    rea.write_text(text)
    probe = Simulation(case_from_dict(case(rea, order), name="cylwave"), backend="cpu", output_dir=workdir + "/probe",
                       comm=None)
    xmax = float(np.asarray(probe.system.geometry.coords)[0].max())
    probe.close()
    text, radius, length = nekcem_mesh(source.read_text(), xmax)
    rea.write_text(text)
    return rea, radius, length


def run(rea: Path, form: str, order: int, steps: int, cfl: float, backend: str, workdir: str,
        radius: float, length: float) -> dict:
    """``form``: a volume_form, or "galerkin:COFACTORS[:Q[:VOLUME]]" for a variant of the Galerkin operator
    (galerkin.variant_options: cofactors "invariant", "curl" or "exact", Q a number, "2N" or "S",
    VOLUME "skew" or "strong"; the first operator: galerkin:exact:2N:strong, the strong form of
    notes section 9: galerkin:invariant:S:strong). No case key chooses the variants."""
    volume_form, *variant = form.split(":")
    data = case(rea, order, volume_form, cfl)
    probe = Simulation(case_from_dict(data, name="cylwave"), backend="cpu", output_dir=workdir, comm=None)
    dt = cfl * probe.min_spacing  # NekCEM: dt = cfl x the smallest GLL spacing (c = 1)
    probe.close()
    data["time"] = {"t_end": steps * dt, "dt": dt}
    sim = Simulation(case_from_dict(data, name="cylwave"), backend=backend, output_dir=workdir, comm=None)
    resolved = sim.system.volume_form_choice["form"]  # what "auto" (the default) ran
    if variant:
        galerkin.attach(sim.system, **galerkin.variant_options(":".join(variant), order))
    xp = sim.backend.xp
    g = sim.system.geometry
    coords = np.asarray(g.coords)

    def exact(t):
        return tm01(coords, t, radius=radius, length=length)[0]

    sim.u[...] = xp.asarray(exact(0.0))
    sim.energy_initial = sim.system.energy(sim.u)
    mass = np.asarray(g.mass)
    volume = mass.sum()

    def errors():
        u = np.asarray(sim.u.get() if hasattr(sim.u, "get") else sim.u)
        err = u - exact(sim.t)
        return ([float(math.sqrt((mass * err[f] ** 2).sum() / volume)) for f in range(6)],
                [float(np.abs(err[f]).max()) for f in range(6)])

    checks, seconds, done, timed = [], 0.0, 0, 0
    for step in [*range(1, 11), *range(100, steps + 1, 100)]:  # cylwave.usr's userchk
        start = time.perf_counter()
        sim.advance(step - done)
        sim.backend.synchronize()
        if step - done == 100:  # the 100-step stretches (the first steps compile kernels and check often)
            seconds, timed = seconds + time.perf_counter() - start, timed + 100
        done = step
        l2, mx = errors()
        checks.append({"step": step, "l2": max(l2), "max": max(mx)})
    sim.close()
    passes = all(c["l2"] < L2_TOLERANCE and c["max"] < MAX_TOLERANCE for c in checks)
    return {"form": form, "resolved": resolved, "order": order, "steps": done, "dt": dt, "t": float(sim.t), "l2": l2, "max": mx,
            "passes": passes, "checks": checks, "seconds_per_step": seconds / max(timed, 1),
            "elements": int(coords.shape[1])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rea", type=Path, help="NekCEM's tests/cylwave/cylwave.rea")
    ap.add_argument("--forms", default="split,chain,galerkin")
    ap.add_argument("--orders", default="11")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--cfl", type=float, default=0.25)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"tolerance L2 < {L2_TOLERANCE:g}, max < {MAX_TOLERANCE:g}")
        print(f"{'form':>18} {'N':>3} {'steps':>5} {'t':>8} {'L2 (worst field)':>22} {'max (worst field)':>22} "
              f"{'every check passes':>5} {'ms/step':>8}")
        for order in (int(v) for v in args.orders.split(",")):
            rea, radius, length = prepared_mesh(args.rea, order, tmp)
            print(f"N = {order}: radius {radius}, length {length:.6f}")
            for form in args.forms.split(","):
                row = run(rea, form, order, args.steps, args.cfl, args.backend, tmp + "/run", radius, length)
                rows.append(row)
                fl, fm = int(np.argmax(row["l2"])), int(np.argmax(row["max"]))
                print(f"{form:>18} {order:>3} {row['steps']:>5} {row['t']:>8.4f} "
                      f"{max(row['l2']):>12.3e} ({FIELDS[fl]}) {'':>4} {max(row['max']):>12.3e} ({FIELDS[fm]}) {'':>4}"
                      f"{'yes' if row['passes'] else 'NO':>5} {1e3 * row['seconds_per_step']:>8.2f}", flush=True)
    if args.json is not None:
        write_json(args.json, {"what": "NekCEM tests/cylwave run by lobatto", "backend": args.backend,
                               "machine": processor(), "date": str(datetime.date.today()),
                               "command": " ".join(["python"] + sys.argv), "rows": rows},
                   indent=1, default=None, end="\n", say="wrote")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
