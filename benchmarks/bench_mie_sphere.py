"""A dielectric sphere lit by a plane-wave pulse, against the Mie series (miepython).

The sphere (radius a, permittivity eps) is the curved cubed-sphere ball of
examples/meshes/gmsh_meshes.py:sphere_scatterer, inside the cube [-w, w]^3, surrounded by
Cartesian layers of hexahedra. The plane wave (along +z, E along x, a modulated Gaussian
covering the band) enters through the cube's faces (TF/SF); the near-to-far box is the plane
one layer further out, in the scattered field; the outer layers are a PML. One run gives, per
frequency, the scattering cross section (far-field power over the incident intensity), the
absorption (the Poynting flux into the ball, absorption_region = "sphere"; zero for a lossless
sphere, so it measures the error), sigma_ext by the optical theorem, and the bistatic RCS in
the E-plane (phi = 0) and H-plane (phi = 90). Mie: Q_sca
from miepython.efficiencies_mx, and RCS = 4 pi |S|^2 / k^2 with S2 (E-plane) and S1 (H-plane)
from miepython.S1_S2 with norm="wiscombe" (Bohren and Huffman's S: |S1| = x^3 |m^2-1|/|m^2+2|
for a small sphere, checked in tests/unit/test_maxwell_mie.py). Units: c = 1, f in cycles
per unit time, k = 2 pi f.

    python benchmarks/bench_mie_sphere.py --small                       # CPU, 1 to 2 minutes
    python benchmarks/bench_mie_sphere.py --write-mesh /tmp/scat.msh    # the mesh alone (needs gmsh)
    python benchmarks/bench_mie_sphere.py --farfield sphere_out/sphere_farfield.h5 --plot rcs.png  # a run's file

On the GPU (no gmsh there: the default mesh is committed as examples/meshes/sphere_scatterer_n2.msh,
the same as --write-mesh with the defaults; miepython on PYTHONPATH):

    PYTHONPATH=src python3 benchmarks/bench_mie_sphere.py --mesh examples/meshes/sphere_scatterer_n2.msh \
        --backend cuda --order 5 --report-every 2 --plot mie_N5.png      # then --order 6, --order 7

--report-every prints sigma_sca against Mie and the field energy every 2 time units, i.e. the
result of a run cut there (how long the ringing near the sphere's resonances takes to settle).
--geometry-order 4 with --write-mesh makes the mesh of the convergence study in
docs/benchmarks.md. A mesh given with --mesh
must match --divisions, --half-width, --layers and --layer-thickness (the TF/SF, near-to-far and
PML planes are placed from them).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # also when run through runpy from elsewhere

from bench_maxwell_physics import commit, device_name  # noqa: E402

from lobatto.bench.report import write_json  # noqa: E402


def gmsh_meshes():
    spec = importlib.util.spec_from_file_location("gmsh_meshes", ROOT / "examples" / "meshes" / "gmsh_meshes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_mesh(path, args) -> Path:
    import gmsh

    gm = gmsh_meshes()
    gmsh.initialize(readConfigFiles=False, interruptible=False)
    try:
        return gm.sphere_scatterer(path, radius=args.radius, half_width=args.half_width, divisions=args.divisions,
                                   layers=(args.layer_thickness,) * args.layers, order=args.geometry_order,
                                   core=args.core, binary=True)
    finally:
        gmsh.finalize()


def case_data(args, mesh: Path) -> dict:
    """The case: the mesh's groups "sphere" and "air", TF/SF on the cube, near-to-far one layer
    out, PML on the outer `pml` layers."""
    f1, f2 = min(args.frequencies), max(args.frequencies)
    centre, half_band = 0.5 * (f1 + f2), 0.5 * (f2 - f1)
    # spectrum exp(-(2 pi (f - fc) width)^2 / 2): e^-2 (0.14) at the band's edges
    width = args.width or 2.0 / (2 * math.pi * max(half_band, 0.1))
    t0 = args.half_width + 5.0 * width  # the pulse is 5 widths away from the cube at t = 0
    w, huygens = args.half_width, args.half_width + args.layer_thickness
    return {
        "mesh": {"generator": "gmsh", "file": str(mesh), "boundary": "absorbing"},
        "discretization": {"order": args.order},
        "physics": {"equations": "maxwell"},
        "material": {"sphere": {"epsilon": args.epsilon}},
        "pml": {"sides": "all", "elements": args.pml},
        "source": {"incident": {"type": "plane_wave", "direction": [0, 0, 1], "polarization": [1, 0, 0],
                                "waveform": "modulated_gaussian", "frequency": centre, "width": width, "t0": t0,
                                "lower": [-w] * 3, "upper": [w] * 3}},
        "time": {"t_end": t0 + 2 * w + args.ring, "cfl": args.cfl},
        "output": {"formats": [], "every": 0, "name": "sphere",
                   "far_field": {"frequencies": list(args.frequencies), "lower": [-huygens] * 3,
                                 "upper": [huygens] * 3, "theta": list(np.arange(0, 181, 5.0)), "phi": [0, 90],
                                 "absorption_region": "sphere"}}}


def mie(epsilon: float, radius: float, frequencies, theta_degrees):
    """sigma_sca, sigma_ext (F,) and RCS (F, theta) in the E- and H-planes from miepython."""
    import miepython

    m = math.sqrt(epsilon)  # lossless: the index is real in either sign convention
    k = 2 * np.pi * np.asarray(frequencies, float)
    x = k * radius
    qext, qsca, _, _ = miepython.efficiencies_mx(m, x)
    mu = np.cos(np.radians(theta_degrees))
    e_plane, h_plane = [], []
    for xi, ki in zip(x, k):
        s1, s2 = miepython.S1_S2(m, xi, mu, norm="wiscombe")
        e_plane.append(4 * np.pi * np.abs(s2) ** 2 / ki**2)
        h_plane.append(4 * np.pi * np.abs(s1) ** 2 / ki**2)
    area = np.pi * radius**2
    return {"ka": x, "scattering": np.asarray(qsca) * area, "extinction": np.asarray(qext) * area,
            "rcs_e": np.array(e_plane), "rcs_h": np.array(h_plane)}


def read_farfield(path) -> dict:
    import h5py

    with h5py.File(path, "r") as f:
        out = {key: f[key][()] for key in ("frequencies", "theta", "phi", "rcs", "E_theta", "incident_spectrum")}
        for key in ("scattering", "absorption", "extinction"):
            out[key] = f[f"cross_sections/{key}"][()]
        out["samples"], out["t_last"] = int(f.attrs["samples"]), float(f.attrs["t_last"])
    out["forward"] = forward_extinction(out)
    return out


def forward_extinction(got: dict) -> np.ndarray:
    """sigma_ext by the optical theorem, from the forward far field (theta = 0, along the
    incident E): -(4 pi / k) Im(r e^(ikr) E_theta / E_inc) in lobatto's e^(+i omega t) phasors
    (Bohren and Huffman's +(4 pi / k) Im(...) for e^(-i omega t), conjugated)."""
    i = int(np.argmin(np.abs(got["theta"])))
    j = int(np.argmin(np.abs(got["phi"])))
    if abs(got["theta"][i]) > 1e-12 or abs(got["phi"][j]) > 1e-12:
        return np.full(len(got["frequencies"]), np.nan)
    k = 2 * np.pi * got["frequencies"]
    return -4 * np.pi / k * np.imag(got["E_theta"][:, i, j] / got["incident_spectrum"])


def run(args, mesh: Path, output: Path) -> dict:
    from lobatto.api import case_from_dict
    from lobatto.api import run as lobatto_run

    data = case_data(args, mesh)
    start = time.perf_counter()
    if args.report_every:
        simulation, history = stepped_run(args, data, output)
    else:
        result = lobatto_run(case_from_dict(data, name="sphere"), backend=args.backend, output_dir=output)
        simulation, history = result.simulation, []
    seconds = time.perf_counter() - start
    got = read_farfield(Path(output) / "sphere_farfield.h5")
    got.update(seconds=seconds, elements=int(simulation.system.num_elements), dt=float(simulation.dt),
               case=data, history=history)
    return got


def stepped_run(args, data: dict, output: Path):
    """The run step by step, with sigma_sca against Mie and the field energy every
    `report_every` time units (the far-field transforms so far: a run cut there), then the file."""
    from lobatto.api import Simulation, case_from_dict

    simulation = Simulation(case_from_dict(data, name="sphere"), backend=args.backend, output_dir=output)
    monitor, system = simulation.series.far_field, simulation.system
    monitor.accumulate(simulation.u, simulation.t)
    mie_sca = mie(args.epsilon, args.radius, args.frequencies, [0.0])["scattering"]
    history, t_end = [], data["time"]["t_end"]
    report = args.report_every
    while simulation.t < t_end - 1e-9 * t_end:
        simulation.advance(1)
        monitor.accumulate(simulation.u, simulation.t)
        if simulation.t >= report - 1e-9 or simulation.t >= t_end - 1e-9 * t_end:
            report += args.report_every
            results = monitor.results()
            errors = results["cross_sections"]["scattering"] / mie_sca - 1
            energy = float(system.energy(simulation.u))
            history.append({"t": float(simulation.t), "energy": energy, "sca_error": errors.tolist()})
            print(f"t = {simulation.t:7.2f}  energy {energy:9.2e}  sigma_sca error "
                  + " ".join(f"{e:+.1e}" for e in errors), flush=True)
    monitor.write(output, "sphere", {"config": simulation.case.to_toml()})
    return simulation, history


def compared_file(path) -> dict:
    """An existing run's far-field file, with what the table needs from its case."""
    import h5py

    got = read_farfield(path)
    with h5py.File(path, "r") as f:
        config = f.attrs.get("config", "")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    case = tomllib.loads(config if isinstance(config, str) else config.decode())
    got.update(seconds=float("nan"), elements=-1, dt=float("nan"), case=case,
               order=int(case.get("discretization", {}).get("order", -1)))
    return got


def deviation(values, expected) -> float:
    """The largest |values - expected| relative to the largest expected value."""
    return float(np.max(np.abs(values - expected)) / np.max(expected))


def compare(got: dict, ref: dict) -> list:
    rows = []
    for i, f in enumerate(got["frequencies"]):
        rows.append({"f": float(f), "ka": float(ref["ka"][i]), "sca": float(got["scattering"][i]),
                     "sca_mie": float(ref["scattering"][i]),
                     "sca_error": float(got["scattering"][i] / ref["scattering"][i] - 1),
                     "ext": float(got["extinction"][i]), "ext_mie": float(ref["extinction"][i]),
                     "ext_error": float(got["extinction"][i] / ref["extinction"][i] - 1),
                     "ext_forward": float(got["forward"][i]),
                     "ext_forward_error": float(got["forward"][i] / ref["extinction"][i] - 1),
                     "abs_over_sca": float(got["absorption"][i] / ref["scattering"][i]),
                     "rcs_e_error": deviation(got["rcs"][i, :, 0], ref["rcs_e"][i]),
                     "rcs_h_error": deviation(got["rcs"][i, :, 1], ref["rcs_h"][i])})
    return rows


def plot(path, got, ref, rows, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [int(np.argmin(np.abs(got["frequencies"] - f))) for f in (got["frequencies"][1], got["frequencies"][-2])]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    theta = got["theta"]
    planes = ((axes[0], "E-plane (phi = 0)", 0, "rcs_e"), (axes[1], "H-plane (phi = 90)", 1, "rcs_h"))
    for ax, plane, column, key in planes:
        for n, i in enumerate(chosen):
            colour = f"C{n}"
            ax.semilogy(theta, got["rcs"][i, :, column], "o", color=colour, ms=4,
                        label=f"lobatto, f = {got['frequencies'][i]:g} (ka = {ref['ka'][i]:.2f})")
            fine = np.linspace(0, 180, 361)
            fine_ref = mie_rcs(rows, ref, i, fine, key)
            ax.semilogy(fine, fine_ref, "-", color=colour, lw=1, label="Mie" if n == 0 else None)
        ax.set_xlabel("theta (degrees)")
        ax.set_ylabel("bistatic RCS")
        ax.set_title(plane)
        ax.legend(fontsize=8)
    ax = axes[2]
    fine = np.linspace(min(got["frequencies"]) * 0.9, max(got["frequencies"]) * 1.05, 300)
    ax.plot(fine * 2 * np.pi * ref["radius"], mie_sca(ref, fine), "-", lw=1, label="Mie")
    ax.plot(ref["ka"], got["scattering"], "o", ms=5, label="lobatto (far-field power)")
    ax.set_xlabel("ka")
    ax.set_ylabel("scattering cross section")
    ax.legend(fontsize=8)
    ax.set_title("sigma_sca")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def mie_rcs(rows, ref, i, theta, key):
    return mie(ref["epsilon"], ref["radius"], [rows[i]["f"]], theta)[key][0]


def mie_sca(ref, frequencies):
    return mie(ref["epsilon"], ref["radius"], frequencies, [0.0])["scattering"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--order", type=int, default=5, help="N, the solution's order")
    p.add_argument("--geometry-order", type=int, default=2, help="the mesh's order (gmsh)")
    p.add_argument("--divisions", type=int, default=2, help="elements along each edge of a cube face")
    p.add_argument("--radius", type=float, default=0.5)
    p.add_argument("--epsilon", type=float, default=4.0)
    p.add_argument("--half-width", type=float, default=0.75, help="the cube [-w, w]^3: the TF/SF surface")
    p.add_argument("--layers", type=int, default=3, help="Cartesian layers outside the cube")
    p.add_argument("--layer-thickness", type=float, default=0.375)
    p.add_argument("--pml", type=int, default=2, help="the outer layers that are PML")
    p.add_argument("--core", type=float, default=0.3, help="the inner cube of the ball over its radius")
    p.add_argument("--frequencies", type=float, nargs="+",
                   default=[0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9])
    p.add_argument("--width", type=float, default=None, help="the pulse's Gaussian width (default: from the band)")
    p.add_argument("--ring", type=float, default=30.0, help="time after the pulse has crossed the cube")
    p.add_argument("--cfl", type=float, default=0.4)
    p.add_argument("--report-every", type=float, default=None,
                   help="print sigma_sca against Mie and the energy every this many time units (the run cut there)")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--mesh", default=None, help="a mesh from sphere_scatterer (else made with gmsh)")
    p.add_argument("--write-mesh", default=None, help="write the mesh to this file and stop")
    p.add_argument("--farfield", default=None,
                   help="compare an existing run's NAME_farfield.h5 (examples/sphere_scattering.toml's, say) "
                        "instead of running")
    p.add_argument("--output", default=None, help="the run's directory (default /tmp/bench_mie_sphere)")
    p.add_argument("--small", action="store_true", help="a CPU check: 1 division, N = 3, 2 frequencies")
    p.add_argument("--plot", default=None, help="a PNG of the RCS and sigma_sca against Mie")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if args.small:
        args.divisions, args.order, args.layers, args.layer_thickness, args.pml = 1, 3, 2, 0.5, 1
        args.frequencies, args.ring, args.width = [0.25, 0.35], 6.0, 1.0
    if args.pml >= args.layers:
        p.error("--pml must leave at least one layer (the near-to-far box) outside the cube")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.write_mesh:
        print("wrote", make_mesh(args.write_mesh, args))
        return
    if args.farfield:
        got = compared_file(args.farfield)
        args.order = got["order"]
    else:
        output = Path(args.output or "/tmp/bench_mie_sphere")
        output.mkdir(parents=True, exist_ok=True)
        mesh = Path(args.mesh) if args.mesh else make_mesh(output / f"sphere_scatterer_n{args.divisions}.msh", args)
        got = run(args, mesh, output)
    ref = mie(args.epsilon, args.radius, got["frequencies"], got["theta"])
    ref.update(epsilon=args.epsilon, radius=args.radius)
    rows = compare(got, ref)
    device = device_name(args.backend)
    print(f"{device}: sphere a = {args.radius}, eps = {args.epsilon}, N = {args.order}, geometry order "
          f"{args.geometry_order}, {got['elements']} elements, {got['samples']} steps (dt = {got['dt']:.4g}) "
          f"to t = {got['t_last']:.3g}, {got['seconds']:.1f} s")
    print(f"{'f':>6} {'ka':>6} {'sigma_sca':>10} {'Mie':>10} {'error':>9} {'sigma_ext':>10} {'error':>9} "
          f"{'ext(fwd)':>10} {'error':>9} {'abs/sca':>9} {'RCS E':>8} {'RCS H':>8}")
    for r in rows:
        print(f"{r['f']:6.3f} {r['ka']:6.3f} {r['sca']:10.5f} {r['sca_mie']:10.5f} {r['sca_error']:+9.2e} "
              f"{r['ext']:10.5f} {r['ext_error']:+9.2e} {r['ext_forward']:10.5f} {r['ext_forward_error']:+9.2e} "
              f"{r['abs_over_sca']:+9.1e} {r['rcs_e_error']:8.1e} {r['rcs_h_error']:8.1e}")
    print("sigma_ext = sigma_sca + sigma_abs (flux into the sphere); ext(fwd): the optical theorem; Mie's "
          "sigma_ext = sigma_sca (lossless).\nRCS E, H: the largest |RCS - Mie| over theta, relative to the "
          "largest Mie RCS of that plane")
    print(f"largest |sigma_sca error| {max(abs(r['sca_error']) for r in rows):.2e}")
    result = {"benchmark": "mie_sphere", "device": device, "backend": args.backend,
              "date": datetime.date.today().isoformat(), "commit": commit(),
              "command": "python " + " ".join([sys.argv[0]] + sys.argv[1:]), "order": args.order,
              # a compared file's mesh is not known here: not the options' defaults, and no NaN (not JSON)
              "geometry_order": None if args.farfield else args.geometry_order,
              "divisions": None if args.farfield else args.divisions,
              "elements": None if args.farfield else got["elements"], "steps": got["samples"],
              "dt": None if args.farfield else got["dt"], "t_end": got["t_last"],
              "seconds": None if args.farfield else got["seconds"],
              "case": got["case"], "rows": rows, "history": got.get("history", []),
              "theta": got["theta"].tolist(), "rcs": got["rcs"].tolist(),
              "mie_rcs_e": ref["rcs_e"].tolist(), "mie_rcs_h": ref["rcs_h"].tolist()}
    if args.json:
        out = Path(args.json)
    elif args.farfield:  # next to the compared file, not in the source tree
        out = Path(args.farfield).with_name(Path(args.farfield).stem + "_mie.json")
    else:
        out = HERE / "results" / f"mie_sphere_{args.backend}_N{args.order}_n{args.divisions}_{result['date']}.json"
    write_json(out, result, indent=1, default=None, say="wrote")
    if args.plot:
        plot(args.plot, got, ref, rows, f"dielectric sphere eps = {args.epsilon:g}, a = {args.radius:g}: "
             f"N = {args.order}" + (f", {got['elements']} curved hexahedra" if got["elements"] > 0 else "")
             + f" ({device})")
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
