"""Convergence of the port mode solver (systems/maxwell/port_mode_solver.py) on a disc and a
rectangle (docs/electromagnetics.md, "Port modes of any cross-section").

Disc: the z = 0 faces of the O-grid cylinder of tests/cylwave.py (radius 1; m = 1: 5 faces,
m = 2: 12 faces, circle-arc walls), read by lobatto's Nek reader at order N; the solver's TE11
(both of the pair) and TM01, TE01, TM11 cutoffs against j'_11, j_01, j'_01, j_11, and the largest
pointwise difference of TE11's and TM01's e_t from circular_mode on the same points.
Rectangle: 1 x 0.5 as 4 x 2 box faces; TE10, TE01, TE20, TE11, TM11 cutoffs and profiles.

    python benchmarks/port_modes_disc.py                 # about 5 seconds; writes the JSON
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.special import jn_zeros, jnp_zeros

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from cylwave import cylinder_rea  # noqa: E402

from lobatto.bench.report import write_json  # noqa: E402
from lobatto.mesh.box import box_mesh  # noqa: E402
from lobatto.mesh.geometry import element_coordinates  # noqa: E402
from lobatto.mesh.readers import mesh_from_file  # noqa: E402
from lobatto.mesh.topology import face_slice  # noqa: E402
from lobatto.systems.maxwell.port_mode_solver import circular_mode, solved_modes  # noqa: E402


def plane_faces(coords, order, axis, value):
    faces = np.concatenate([coords[face_slice(f, order)] for f in range(6)], axis=1)
    return faces[:, np.all(np.abs(faces[axis] - value) < 1e-12, axis=(1, 2))]


def disc_rows(orders):
    exact = {"TE11": jnp_zeros(1, 1)[0], "TE01": jnp_zeros(0, 1)[0], "TM01": jn_zeros(0, 1)[0], "TM11": jn_zeros(1, 1)[0]}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in (1, 2):
            path = Path(tmp) / f"disc{m}.rea"
            cylinder_rea(path, m=m, layers=1, length=0.5)
            for order in orders:
                faces = plane_faces(element_coordinates(mesh_from_file("nek", path, order, {"PEC": "pec"}), order),
                                    order, 2, 0.0)
                te = solved_modes(faces, 2, "TE", 5)  # TE11 pair, TE21 pair, TE01
                tm = solved_modes(faces, 2, "TM", 3)  # TM01, TM11 pair
                k_te01 = min((k for k, _ in te), key=lambda k: abs(k - exact["TE01"]))
                rows.append({
                    "grid": m, "faces": faces.shape[1], "order": order,
                    "TE11": abs(te[0][0] - exact["TE11"]), "TE11_pair": abs(te[1][0] - exact["TE11"]),
                    "TM01": abs(tm[0][0] - exact["TM01"]), "TE01": abs(k_te01 - exact["TE01"]),
                    "TM11": abs(tm[1][0] - exact["TM11"]),
                    "profile_TE11": float(np.abs(te[0][1] - circular_mode("TE11", faces, 2)[1]).max()),
                    "profile_TM01": float(np.abs(tm[0][1] - circular_mode("TM01", faces, 2)[1]).max()),
                })
    return rows


def rectangle_rows(orders):
    rows = []
    for order in orders:
        mesh = box_mesh((4, 2, 1), upper=(1.0, 0.5, 0.5))
        faces = plane_faces(element_coordinates(mesh, order), order, 2, 0.0)
        te, tm = solved_modes(faces, 2, "TE", 4), solved_modes(faces, 2, "TM", 1)
        want = [np.pi, 2 * np.pi, 2 * np.pi, np.pi * np.sqrt(5)]
        rows.append({"order": order, "TE": max(abs(k - w) for (k, _), w in zip(te, want)),
                     "TM11": abs(tm[0][0] - np.pi * np.sqrt(5))})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("port_modes_disc.json"))
    args = parser.parse_args(argv)
    disc = disc_rows(range(3, 9))
    print("disc (radius 1): |k_c - exact| and max |e_t - circular_mode|")
    print(f"{'grid':>5}{'faces':>6}{'N':>3}{'TE11':>10}{'TE11 2nd':>10}{'TM01':>10}{'TE01':>10}{'TM11':>10}"
          f"{'e TE11':>10}{'e TM01':>10}")
    for r in disc:
        print(f"{r['grid']:>5}{r['faces']:>6}{r['order']:>3}" + "".join(
            f"{r[k]:>10.1e}" for k in ("TE11", "TE11_pair", "TM01", "TE01", "TM11", "profile_TE11", "profile_TM01")))
    rect = rectangle_rows(range(2, 8))
    print("\nrectangle 1 x 0.5 (4 x 2 faces): largest |k_c - exact| of TE10, TE01, TE20, TE11 and of TM11")
    for r in rect:
        print(f"N = {r['order']}: TE {r['TE']:.1e}, TM11 {r['TM11']:.1e}")
    write_json(args.json, {"disc": disc, "rectangle": rect})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
