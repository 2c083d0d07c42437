"""Run the multistep test system (tests/unit/multistep_system.py) on every rank of
COMM_WORLD with variable dt, with a restart in the middle when asked; rank 0 saves the final
field in global element order and prints the step lines (its stdout is the test's).

    python multistep_run.py OUTPUT_DIR [CHECKPOINT_STEP]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
import multistep_system as ms  # noqa: E402

from lobatto.api import parse_case  # noqa: E402
from lobatto.runner.simulation import Simulation  # noqa: E402

ms.registered()
output = Path(sys.argv[1])
data = ms.case_dict(integrator="bdf3", target_cfl=0.4)
data["mesh"]["elements"] = [3, 2, 1]
data["time"]["t_end"] = 1.0
case = parse_case(data)
sim = Simulation(case, "cpu", output)
if len(sys.argv) > 2:  # a run cut at the step given, continued by a fresh Simulation
    sim.advance(int(sys.argv[2]))
    path = sim.checkpoint()
    sim.close()  # one live run per directory: the fresh one writes there
    sim = Simulation(case, "cpu", output).restart(path)
sim.run()
ids = sim.system.mesh.element_ids
parts = sim.comm.gather((ids, sim.fields()["u"]), root=0) if sim.comm is not None else [(ids, sim.fields()["u"])]
if sim.rank == 0:
    ids = np.concatenate([p[0] for p in parts])
    values = np.concatenate([p[1] for p in parts])
    np.save(output / "u.npy", values[np.argsort(ids)])
    print(f"final t {sim.t!r} steps {sim.step_count}")
