"""The ports' two-port validation: S-parameters of the inductive iris (examples/waveguide_iris.toml)
from lobatto's time-domain ports against mode matching (benchmarks/waveguide_mode_matching.py).

Runs the example (both ports driven: two runs) at the chosen order, reads the Touchstone file
back with scikit-rf (the HDF5 file with h5py where scikit-rf is missing), and compares S11, S21,
S12, S22 over the band 0.6 - 0.95 with mode matching (160 odd TE_m0 modes: converged to 1e-5)
moved to the port planes, 1.25 before and behind the diaphragm. Also printed: passivity
|S11|^2 + |S21|^2 - 1 and reciprocity |S21 - S12| of lobatto's S.

    python benchmarks/waveguide_iris.py --reference-only          # the reference at the planes (no run)
    python benchmarks/waveguide_iris.py --orders 4 5 6            # CPU: 8 and 16 minutes at N = 4, 5
    python benchmarks/waveguide_iris.py --orders 4 --refine 2     # elements halved in x and z
    python benchmarks/waveguide_iris.py --backend cuda --orders 4 5 6 7 --json benchmarks/waveguide_iris_cuda.json
    python benchmarks/waveguide_iris.py --mesh-file iris.re2 ...   # the mesh as a Nek file (no gmsh SDK needed)
    python benchmarks/waveguide_iris.py --surface --orders 3      # examples/waveguide_iris_surface.toml
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

from waveguide_mode_matching import iris_sparameters  # noqa: E402

from lobatto.bench.report import write_json  # noqa: E402

CASE = ROOT / "examples" / "waveguide_iris.toml"
#: the same two-port on the device-only mesh with ports on its end surfaces (the same planes)
SURFACE_CASE = ROOT / "examples" / "waveguide_iris_surface.toml"
#: the port planes' distances from the diaphragm's faces (z = 1.5 and 4.125; iris 2.75 - 2.875)
BEFORE, AFTER = 1.25, 1.25
MODES = 160


def case(order: int, t_end: float, until: float | None, mesh: Path | None = None, surface: bool = False) -> dict:
    """The example (or its surface-port twin) as a dict, with its mesh path made absolute (or
    `mesh`) and the run's order and length."""
    data = tomllib.loads((SURFACE_CASE if surface else CASE).read_text())
    data["mesh"]["file"] = str(mesh or (CASE.parent / data["mesh"]["file"]).resolve())
    if mesh is not None and Path(mesh).suffix in (".re2", ".rea"):
        # the same hexahedra as a Nek file (all boundary faces "PEC"): machines without the gmsh SDK
        data["mesh"].update(generator="nek", boundaries={"PEC": "pec"})
        data["mesh"].pop("boundary", None)
    data["discretization"]["order"] = order
    data["time"]["t_end"] = t_end
    if until:
        data["time"].update(until_decayed=until, decay_interval=2.0, decay_watch="energy")
    return data


def reference(frequencies) -> np.ndarray:
    """(F, 2, 2) mode matching's S at the example's port planes."""
    return iris_sparameters(frequencies, modes=MODES, before=BEFORE, after=AFTER)


def read_s(directory: Path, name: str):
    """(frequencies, S (F, 2, 2)) from the run's Touchstone file (scikit-rf), else its HDF5."""
    try:
        import skrf
    except ImportError:
        import h5py

        with h5py.File(directory / f"{name}_sparams.h5", "r") as f:
            return f["frequencies"][()], f["S"][()]
    network = skrf.Network(str(directory / f"{name}.s2p"))
    return network.f, network.s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--orders", type=int, nargs="+", default=[5])
    parser.add_argument("--t-end", type=float, default=60.0)
    parser.add_argument("--until-decayed", type=float, default=None, help="stop on the energy's decay (e.g. 1e-8)")
    parser.add_argument("--refine", type=int, default=1,
                        help="element sizes divided by this (a mesh made by examples/meshes/waveguide_iris.py)")
    parser.add_argument("--mesh-file", default=None,
                        help="a mesh of the example's geometry to use instead (.msh, or .re2 with PEC boundary codes)")
    parser.add_argument("--reference-only", action="store_true", help="print mode matching at the planes; no run")
    parser.add_argument("--surface", action="store_true",
                        help="run examples/waveguide_iris_surface.toml (ports on the device-only mesh's surfaces)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    data = tomllib.loads(CASE.read_text())["ports"]
    band = np.linspace(data["fmin"], data["fmax"], data["count"])
    ref = reference(band)
    print(f"mode matching ({MODES} odd modes) at the port planes z = 1.5, 4.125:")
    print(f"{'f':>6}{'S11':>24}{'S21':>24}")
    for f, s in zip(band, ref):
        print(f"{f:6.3f}{s[0, 0].real:12.6f}{s[0, 0].imag:+12.6f}{s[1, 0].real:12.6f}{s[1, 0].imag:+12.6f}")
    if args.reference_only:
        return 0
    import lobatto
    from bench_maxwell_physics import commit, device_name

    rows = []
    print(f"\n{'N':>3}{'f':>7}{'|S11|':>9}{'|dS11|':>10}{'|dS21|':>10}{'|dS12|':>10}{'|dS22|':>10}"
          f"{'passivity':>11}{'recipr.':>10}{'seconds':>9}")
    mesh_dir = tempfile.TemporaryDirectory()
    mesh = Path(args.mesh_file).resolve() if args.mesh_file else None
    if args.refine > 1 and mesh is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("waveguide_iris_mesh", ROOT / "examples" / "meshes" / "waveguide_iris.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        mesh = Path(mesh_dir.name) / "iris.msh"
        count = module.build(mesh, 0.125 / args.refine, 0.125 / args.refine, 1, 0.25 / args.refine,
                             device_only=args.surface)
        print(f"mesh refined {args.refine}x: {count} hexahedra")
    for order in args.orders:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            lobatto.run(case(order, args.t_end, args.until_decayed, mesh, args.surface), backend=args.backend,
                        output_dir=tmp)
            seconds = time.perf_counter() - start
            f, s = read_s(Path(tmp), "iris")
        exact = reference(f)
        for k in range(len(f)):
            d = np.abs(s[k] - exact[k])
            row = {"order": order, "refine": args.refine, "frequency": float(f[k]),
                   "S11": [float(s[k, 0, 0].real), float(s[k, 0, 0].imag)],
                   "S21": [float(s[k, 1, 0].real), float(s[k, 1, 0].imag)],
                   "error_s11": float(d[0, 0]), "error_s21": float(d[1, 0]),
                   "error_s12": float(d[0, 1]), "error_s22": float(d[1, 1]),
                   "passivity": float(abs(s[k, 0, 0]) ** 2 + abs(s[k, 1, 0]) ** 2 - 1),
                   "reciprocity": float(abs(s[k, 1, 0] - s[k, 0, 1])), "seconds": seconds}
            rows.append(row)
            print(f"{order:>3}{f[k]:>7.3f}{abs(s[k, 0, 0]):>9.5f}{d[0, 0]:>10.2e}{d[1, 0]:>10.2e}{d[0, 1]:>10.2e}"
                  f"{d[1, 1]:>10.2e}{row['passivity']:>11.2e}{row['reciprocity']:>10.2e}{seconds:>9.1f}")
    write_json(args.json, {"benchmark": "waveguide_iris_surface" if args.surface else "waveguide_iris", "device": device_name(args.backend),
                           "backend": args.backend, "commit": commit(),
                           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                           "arguments": vars(args), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
