"""The cases of test_collectives_ranks.py: each system with each of its boundary kinds, on
meshes long in x (6 x 1 x 1 elements, or 1 x 6 x 1) that the rcb partitioner cuts across the
long axis, so that on 2 and 3 ranks some rank owns no face of a kind, no face of a named
surface, no probe, no source and no monitor surface (docs/parallel.md, "Collectives").

    python collectives_cases.py OUT MESHDIR NAME...   every case NAME into OUT/NAME (under mpiexec)

Each case is small (order 2 or 3, a few steps) and, besides the outputs of the run, writes
OUT/NAME/ownership.json: per rank, what it holds (boundary faces of each named surface and of
each boundary kind, the probe points and source positions in its elements), read from the
rank's own part of the mesh as the run builds it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the 6 x 1 x 1 box of unit elements (rcb: x in [0, 3] | [3, 6] on 2 ranks, [0, 2] | [2, 4] | [4, 6] on 3)
LONG_X = {"elements": [6, 1, 1], "lower": [0.0, 0.0, 0.0], "upper": [6.0, 1.0, 1.0]}
#: a point in the first element: on rank 0 only
NEAR = [0.5, 0.5, 0.5]


def gmsh_box(directory: Path) -> Path:
    """The same box as LONG_X as a gmsh file, surfaces xmin ... zmax (made once per directory)."""
    path = Path(directory) / "long_box.msh"
    if not path.exists():
        sys.path.insert(0, str(HERE.parents[1] / "examples" / "meshes"))
        from gmsh_meshes import box

        box(path, (6, 1, 1), upper=(6.0, 1.0, 1.0), order=2)
    return path


def _maxwell(boundary: str, sides: dict, extra: dict | None = None, steps: int = 3) -> dict:
    data = {"physics": {"equations": "maxwell"},
            "mesh": {**LONG_X, "boundary": boundary, "boundaries": sides},
            "discretization": {"order": 2},
            "time": {"dt": 0.05, "t_end": 0.05 * steps},
            "initial": {"Ez": "sin(pi*x/6)*y*(1 - y)", "Hy": "0.3*cos(pi*x/3)*z"},
            "output": {"every": 0, "formats": ["hdf5"]}}
    data.update(extra or {})
    return data


def _acoustics(boundary: str, sides: dict, extra: dict | None = None) -> dict:
    data = {"physics": {"equations": "acoustics"},
            "mesh": {**LONG_X, "boundary": boundary, "boundaries": sides},
            "discretization": {"order": 2},
            "time": {"dt": 0.05, "t_end": 0.15},
            "initial": {"p": "exp(-(x - 1)**2)*y*(1 - y) + 0.1", "ux": "0.2*z"},
            "output": {"every": 0, "formats": ["hdf5"]}}
    data.update(extra or {})
    return data


def _poisson(boundary: str, tables: dict, mesh: dict | None = None) -> dict:
    return {"physics": {"equations": "poisson", "f": "1 + x*y", "k": "1 + 0.1*x"},
            "mesh": mesh or {**LONG_X, "boundary": boundary},
            "discretization": {"order": 2},
            "solver": {"tolerance": 1e-12},
            "boundary": tables,
            "output": {"formats": ["hdf5"]}}


def _flow(mesh: dict, tables: dict, physics: dict | None = None, extra: dict | None = None) -> dict:
    data = {"physics": {"equations": "navier_stokes", "viscosity": 0.1, **(physics or {})},
            "mesh": mesh,
            "discretization": {"order": 2},
            "time": {"dt": 0.01, "t_end": 0.03},
            "solver": {"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-12}},
            "boundary": tables,
            "output": {"every": 0, "formats": ["hdf5"]}}
    data.update(extra or {})
    return data


PROBE = {"output": {"every": 0, "formats": ["hdf5"], "probes": {"points": [NEAR]}}}
INFLOW = "16*y*(1 - y)*z*(1 - z)"


def cases(mesh_dir: Path) -> dict:
    """{name: (case data, {what some rank must hold none of: "group:xmin", "kind:pmc", "point:probe"...})}."""
    gmsh = {"generator": "gmsh", "file": str(gmsh_box(mesh_dir))} if mesh_dir is not None else None
    em_monitors = {"output": {"every": 0, "formats": ["hdf5"], "probes": {"points": [NEAR], "fields": ["Ez", "Hy"]},
                              "integrals": {"volume": ["energy"], "surface": ["poynting_flux"], "surfaces": ["xmin"]},
                              "dft": {"frequencies": [0.5, 1.0], "surfaces": ["xmin"], "fields": ["Ez"]}},
                   "source": {"antenna": {"type": "electric_dipole", "position": NEAR, "direction": [0, 0, 1],
                                          "waveform": "ricker", "frequency": 1.0, "t0": 0.1}},
                   "pml": {"sides": ["xmin"], "elements": 1}}
    plane_wave = {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 0, 1],
                  "waveform": "modulated_gaussian", "frequency": 0.5, "width": 1.0, "t0": 0.5,
                  "lower": [0.0, 0.0, 0.0], "upper": [1.0, 1.0, 1.0]}
    found = {
        # pec on the long sides, pmc at xmin (rank 0 only), absorbing at xmax (the last rank only);
        # a dipole, a probe, integrals and a DFT of xmin, and a PML along xmin: all on rank 0
        "maxwell_kinds": (_maxwell("pec", {"xmin": "pmc", "xmax": "absorbing"}, em_monitors),
                          ("kind:pmc", "kind:absorbing", "group:xmin", "point:probe", "point:source")),
        "maxwell_pec_end": (_maxwell("absorbing", {"xmax": "pec"}), ("kind:pec",)),
        # a plane wave whose total-field box is the first element; the far field of the
        # surface x = 2 (inside rank 0's part on 2 and on 3 ranks)
        "maxwell_tfsf": (_maxwell("pec", {"xmin": "absorbing", "xmax": "absorbing"},
                                  {"source": {"incident": plane_wave},
                                   "output": {"every": 0, "formats": ["hdf5"],
                                              "far_field": {"frequencies": [0.5], "lower": [0.0, 0.0, 0.0],
                                                            "upper": [2.0, 1.0, 1.0], "theta": [0, 90],
                                                            "phi": [0]}}}), ("group:xmin",)),
        "maxwell_tfsf_discrete": (_maxwell("pec", {"xmin": "absorbing", "xmax": "absorbing"},
                                           {"source": {"incident": {**plane_wave, "incident_field": "discrete"}}}),
                                  ("group:xmin",)),
        "acoustics_kinds": (_acoustics("wall", {"xmin": "absorbing"},
                                       {"output": {"every": 0, "formats": ["hdf5"], "probes": {"points": [NEAR]},
                                                   "integrals": {"surfaces": ["xmin"]},
                                                   "dft": {"frequencies": [0.5], "surfaces": ["xmin"]}}}),
                            ("kind:absorbing", "group:xmin", "point:probe")),
        "acoustics_wall_end": (_acoustics("absorbing", {"xmax": "wall"}), ("kind:wall",)),
        # Dirichlet at xmin only (Neumann elsewhere), and Neumann at xmax only (Dirichlet elsewhere)
        "poisson_dirichlet_end": (_poisson("neumann", {"xmin": {"value": "y*z"}}), ("group:xmin",)),
        "poisson_neumann_end": (_poisson("dirichlet", {"xmax": {"flux": "1 + y"}, "xmin": {"value": "0.5"}}),
                                ("group:xmax", "group:xmin")),
        # inflow at xmin (rank 0), outflow at xmax (the last rank), a scalar fixed at the inflow
        # and with a flux through ymin; a probe on rank 0
        "navier_stokes_inflow": (_flow({**LONG_X, "boundary": "wall", "boundaries": {"xmax": "outflow"}},
                                       {"xmin": {"ux": INFLOW, "T": "1"}, "ymin": {"T_flux": "0.5*x"}},
                                       {"scalars": ["T"]},
                                       {"scalar": {"T": {"diffusivity": 0.05}},
                                        **{k: v for k, v in PROBE.items()}}),
                                 ("group:xmin", "group:xmax", "kind:outflow", "point:probe")),
        # a moving wall at ymin (rank 0 only: the long axis is y) under a constant flow rate,
        # a scalar fixed on ymax only (the last rank)
        "navier_stokes_flow_rate": (_flow({"elements": [1, 6, 1], "lower": [0.0, 0.0, 0.0], "upper": [1.0, 6.0, 1.0],
                                           "periodic": [True, False, True], "boundary": "wall"},
                                          {"ymin": {"ux": "0.5", "T_flux": "0.2"}, "ymax": {"T": "1"}},
                                          {"flow_rate": 0.5, "scalars": ["T"]},
                                          {"scalar": {"T": {"diffusivity": 0.05}},
                                           "initial": {"ux": "0.5 + 0.1*sin(2*pi*z)"}}),
                                    ("group:ymin", "group:ymax")),
    }
    if gmsh is not None:
        found.update({
            "maxwell_gmsh": (_maxwell("pec", {}, {"mesh": {**gmsh, "boundary": "pec", "boundaries": {"xmin": "pmc"}},
                                                  **PROBE}), ("kind:pmc", "group:xmin", "point:probe")),
            "acoustics_gmsh": (_acoustics("wall", {}, {"mesh": {**gmsh, "boundary": "wall",
                                                                "boundaries": {"xmax": "absorbing"}}}),
                               ("kind:absorbing", "group:xmax")),
            "poisson_gmsh": (_poisson("neumann", {"xmin": {"value": "y"}}, {**gmsh, "boundary": "neumann"}),
                             ("group:xmin",)),
            "navier_stokes_gmsh": (_flow({**gmsh, "boundary": "wall", "boundaries": {"xmax": "outflow"}},
                                         {"xmin": {"ux": INFLOW}}, extra=PROBE),
                                   ("group:xmin", "group:xmax", "point:probe")),
        })
    return found


def holdings(mesh, data: dict) -> dict:
    """What this rank's part of the mesh holds: {"group:<name>": boundary faces, "kind:<name>":
    boundary faces, "point:probe" / "point:source": 1 where an element holds the point}."""
    import numpy as np

    from lobatto.mesh.mesh import INTERIOR

    boundary = mesh.face_neighbour < 0
    out = {}
    for g, name in enumerate(mesh.group_names):
        out[f"group:{name}"] = int(np.count_nonzero(boundary & (mesh.face_group == g)))
    for k, name in enumerate(mesh.boundary_names):
        out[f"kind:{name}"] = out.get(f"kind:{name}", 0) + int(np.count_nonzero(
            boundary & (mesh.boundary_kind == k) & (mesh.boundary_kind != INTERIOR)))
    corners = np.asarray(mesh.vertices)[np.asarray(mesh.element_vertices)]  # (E, 8, 3)
    low, high = corners.min(axis=1), corners.max(axis=1)
    points = {"probe": ((data.get("output", {}).get("probes") or {}).get("points") or [None])[0],
              "source": next((s.get("position") for s in (data.get("source") or {}).values()), None)}
    for what, point in points.items():
        if point is not None:
            inside = np.all((low <= np.asarray(point) + 1e-12) & (np.asarray(point) - 1e-12 <= high), axis=1)
            out[f"point:{what}"] = int(inside.any())
    return out


def main(out: Path, mesh_dir: Path, names: list) -> None:
    from lobatto.api import parse_case
    from lobatto.runner.build import build_mesh
    from lobatto.runner.simulation import run_case
    from lobatto.machine.parallel import world_comm

    comm = world_comm()
    table = cases(mesh_dir)
    for name in names:
        data, _ = table[name]
        case = parse_case(data, source=f"<{name}>", name=name)
        mine = holdings(build_mesh(case, comm), data)
        everyone = [mine] if comm is None else comm.allgather(mine)
        if comm is None or comm.Get_rank() == 0:
            (out / name).mkdir(parents=True, exist_ok=True)
            (out / name / "ownership.json").write_text(json.dumps(everyone))
        run_case(case, "cpu", out / name, comm=comm)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    try:
        main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
    except BaseException:  # an error on one rank ends the job (as lobatto run does), not a hang
        import traceback

        from lobatto.machine.parallel import end_job

        traceback.print_exc()
        end_job(None, 1)
