"""Poles inside the PML (the drive Lambda E that the layer hands to them, dispersive.py's
stretch_with) on 1, 2 and 3 ranks: the same fields and auxiliary fields, from one
``mpiexec -n 3`` launch (the 1- and 2-rank runs on split communicators). A 6 x 2 x 1 box cut
by rcb across x: a Drude table by element (x > 0.75) and a point-sampled Lorentz ball reach
into the layer at xmax (x > 1); on 3 ranks rank 0 owns no pole and no layer element and rank 1
poles but no layer element, on 2 ranks rank 0 owns neither.

This file is also the script that ``mpiexec`` runs: ``python test_maxwell_drude_pml_ranks.py OUT``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
SIZES = (1, 2, 3)


def build_case(size: int):
    from lobatto.api import parse_case

    pulse = "exp(-((x-0.45)/0.12)**2)*(1 + 0.3*y)"
    data = {
        "mesh": {"elements": [6, 2, 1], "upper": [1.5, 0.5, 0.25], "periodic": [False, False, True],
                 "boundary": "pec"},
        "discretization": {"order": 3},
        "physics": {"equations": "maxwell"},
        "initial": {"Ey": pulse, "Hz": pulse, "Ez": "0.5*" + pulse},
        "time": {"t_end": 1.2},
        "pml": {"sides": ["xmax"], "elements": 2},
        "material": {"metal": {"where": "x - 0.75", "sampling": "element", "model": "drude",
                               "poles": [{"plasma_frequency": 1.2, "collision_frequency": 0.1}]},
                     "film": {"where": "0.04 - (x-1.2)**2 - (y-0.25)**2", "epsilon": 2.0,
                              "poles": [{"model": "lorentz", "resonance_frequency": 0.8, "delta_epsilon": 1.5,
                                         "damping_frequency": 0.1}]}},
        "output": {"formats": ["hdf5"], "name": f"ranks{size}"},
        "parallel": {"partitioner": "rcb"},
    }
    return parse_case(data, source=f"<ranks{size}>", name=f"ranks{size}")


def main(out: Path) -> None:
    from mpi4py import MPI
    from quiet import quiet_barrier

    from lobatto.runner.simulation import Simulation

    world = MPI.COMM_WORLD
    for size in SIZES:
        comm = world.Split(0 if world.Get_rank() < size else MPI.UNDEFINED, world.Get_rank())
        if comm != MPI.COMM_NULL:
            sim = Simulation(build_case(size), "cpu", out / f"run{size}", comm=comm)
            sim.run()
            terms = {t.name: t for t in sim.system.terms}
            # what this rank holds, and the poles' auxiliary fields by global element id
            held = {"pml": terms["pml"].count, "metal": terms["dispersion.metal"].count,
                    "film": terms["dispersion.film"].count,
                    "stretched": sum(t.stretch is not None for t in terms.values() if hasattr(t, "stretch"))}
            ids = sim.system.mesh.element_ids
            aux = {name: terms[name].history()[f"{name}/aux"]
                   for name in ("dispersion.metal", "dispersion.film", "pml")}
            parts = comm.gather((held, ids, aux), root=0)
            if comm.rank == 0:
                order = np.argsort(np.concatenate([p[1] for p in parts]))
                np.savez(out / f"aux{size}.npz", **{name: np.concatenate([p[2][name] for p in parts], axis=1)[:, order]
                                                    for name in aux})
                (out / f"held{size}.json").write_text(json.dumps([p[0] for p in parts]))
            comm.Free()
        quiet_barrier(world)  # ranks outside this size's run wait asleep


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    main(Path(sys.argv[1]))
    sys.exit(0)

from mpirun import SKIP_REASON, describe, read_final, run  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_poles_in_the_layer_are_the_same_on_1_2_and_3_ranks(tmp_path):
    result = run(3, [os.path.abspath(__file__), str(tmp_path)], timeout=300)
    assert result.returncode == 0, describe(result)
    held = {size: json.loads((tmp_path / f"held{size}.json").read_text()) for size in SIZES}
    assert held[1][0]["pml"] == 4 and held[1][0]["stretched"] == 2  # both tables reach into the layer
    assert held[3][0] == {"pml": 0, "metal": 0, "film": 0, "stretched": 0}  # a rank with no pole, no layer
    assert held[3][1]["pml"] == 0 and held[3][1]["metal"] > 0  # poles outside the layer only
    assert held[2][0] == {"pml": 0, "metal": 0, "film": 0, "stretched": 0}
    s1, ids1, u1 = read_final(tmp_path / "run1")
    aux1 = np.load(tmp_path / "aux1.npz")
    scale = np.abs(u1).max()
    assert np.isfinite(u1).all() and np.abs(aux1["dispersion.metal"][:, 4:]).max() > 1e-3 * scale  # driven in the layer
    for size in SIZES[1:]:
        sp, idsp, up = read_final(tmp_path / f"run{size}")
        assert sp["ranks"] == size and sp["steps"] == s1["steps"] and np.array_equal(ids1, idsp)
        assert sp["dispersion.metal"]["elements_in_layer"] == s1["dispersion.metal"]["elements_in_layer"] == 4
        assert np.max(np.abs(up - u1)) <= 1e-13 * scale, size
        auxp = np.load(tmp_path / f"aux{size}.npz")
        for name in aux1.files:
            assert np.max(np.abs(auxp[name] - aux1[name])) <= 1e-13 * max(1.0, np.abs(aux1[name]).max()), (size, name)
