"""Run by test_acoustics_2d_ranks.py under mpiexec -n P: the 2-D acoustics case on every rank
of COMM_WORLD; rank 0 saves the final fields in global element order (fields.npy) and the
run's integrals are in OUTPUT_DIR/ranks2d_probes.csv (the snapshot writers are not 2-D yet).

    python acoustics_2d_run.py OUTPUT_DIR FLUX
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

from gathered import save_fields_by_id
from lobatto.api import Simulation, case_from_dict

# 6 x 2 curved quads, walls and one absorbing side (xmax): with rcb on 2 or 3 ranks the cuts
# are along x, so some ranks hold no face of xmax (its flux integral is then 0 there)
CASE = {
    "mesh": {"elements": [6, 2], "upper": [3.0, 1.0], "boundary": "wall", "boundaries": {"xmax": "absorbing"},
             "deform": {"x": "0.05*sin(pi*x)*sin(pi*y)", "y": "0.04*sin(pi*x/3)*sin(pi*y)"}},
    "discretization": {"order": 4},
    "physics": {"equations": "acoustics", "density": 1.3, "sound_speed": 0.7},
    "initial": {"p": "exp(-6*((x-2.2)**2 + (y-0.5)**2))", "ux": "0.3*sin(pi*y)*cos(x)"},
    "time": {"t_end": 0.5, "dt": 0.01},
    "output": {"formats": [], "integrals": {"every": 5, "volume": ["energy"], "surfaces": ["xmax"],
                                            "surface": ["intensity_flux"]}},
}


def main() -> int:
    output, flux = Path(sys.argv[1]), sys.argv[2]
    data = {**CASE, "discretization": {"order": 4, "flux": flux}}
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(data, name="ranks2d"), backend="cpu", output_dir=output)
        sim.run()
    save_fields_by_id(sim, output / "fields.npy")
    sim.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
