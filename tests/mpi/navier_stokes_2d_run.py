"""Run by test_navier_stokes_2d_ranks.py under mpiexec -n P: a 2-D Navier–Stokes case on every
rank of COMM_WORLD; rank 0 saves the final fields in global element order (fields.npy); the
forces on the inflow side are in OUTPUT_DIR/ns2d_forces.csv.

    python navier_stokes_2d_run.py OUTPUT_DIR
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

from gathered import save_fields_by_id
from lobatto.api import Simulation, case_from_dict

# 6 x 2 curved quads: inflow (with a passive scalar) on xmin, outflow on xmax, walls on y. With
# rcb on 2 or 3 ranks the cuts are along x, so the ranks but the first hold no inflow face and
# none of the force surface (xmin), and all but the last no outflow face.
CASE = {
    "physics": {"equations": "navier_stokes", "viscosity": 0.05, "scalars": ["T"], "force_y": "0.2*T"},
    "scalar": {"T": {"diffusivity": 0.05, "tolerance": 1e-13}},
    "mesh": {"elements": [6, 2], "upper": [3.0, 1.0], "boundary": "wall", "boundaries": {"xmax": "outflow"},
             "deform": {"x": "0.05*sin(pi*x)*sin(pi*y)", "y": "0.04*sin(pi*x/3)*sin(pi*y)"}},
    "discretization": {"order": 4},
    "time": {"integrator": "bdf2", "dt": 0.01, "t_end": 0.08},
    "solver": {"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-13}},
    "boundary": {"xmin": {"ux": "4*y*(1 - y)", "T": "1 + y"}},
    "initial": {"ux": "4*y*(1 - y)", "T": "1"},
    "output": {"formats": [], "forces": {"inflow": {"surfaces": ["xmin"], "center": [0.0, 0.5, 0.0]},
                                         "walls": {"surfaces": ["ymin", "ymax"]}}},
}


def main() -> int:
    output = Path(sys.argv[1])
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(CASE, name="ns2d"), backend="cpu", output_dir=output)
        sim.run()
    save_fields_by_id(sim, output / "fields.npy")
    sim.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
