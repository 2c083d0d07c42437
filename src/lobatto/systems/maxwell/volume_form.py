"""``[discretization] volume_form = "auto"`` (the default) for Maxwell: which volume form a case runs.

On a 3-D mesh with a curved element (on any rank) it is "galerkin" (galerkin.py): energy-stable
and as accurate as NekCEM's chain rule on curved elements, where the collocated split form is
1.4-17.6 times less accurate in L2 on NekCEM's cylwave (N = 3..11; it fails NekCEM's check at
N = 11, the Galerkin form passes: benchmarks/notes-curved-maxwell.md). Everywhere else it is
"split": on affine elements the collocated forms are NekCEM's scheme (the chain rule, the
conservative and the split forms are one operator there; the Galerkin form differs slightly,
its exact mass: 3dboxper at N = 7 L2 1.70e-9 against 1.75e-9) and cheaper, with a larger time
step; 2-D meshes do not take the Galerkin form. Where a curved case uses a table the Galerkin
form does not take (``refused_tables``) it is "split" too, and the run says so once (``note``).
The choice and its reason are in the run's summary (MaxwellSystem.summary, "volume_form").
"""

from __future__ import annotations

import numpy as np

from lobatto.machine.parallel import allreduce, rank_and_size


def refused_tables(case) -> list[str]:
    """The case's tables that the Galerkin form does not take, by their case-file names: from the
    case alone, so that "auto" chooses before the system is built. Only a plane wave's discrete
    incident field now (it steps the collocated operator alongside: plane_waves.py); every stage
    term kind is taken (galerkin.TAKEN_TERMS, checked again on the built system)."""
    return [f'[source.{spec.name}] incident_field = "discrete"' for spec in case.tables.get("source", ())
            if spec.type == "plane_wave" and spec.values.get("incident_field", "analytic") == "discrete"]


def resolve(case, mesh, geometry, comm=None) -> tuple[str, str]:
    """(form, reason) for the case's volume_form: itself unless "auto" (module docstring).
    Collective where "auto" meets a 3-D mesh: every rank takes the same form."""
    form = case.discretization.volume_form
    if form != "auto":
        return form, "chosen by the case"
    if mesh.dim != 3:
        return "split", "a 2-D mesh (the Galerkin form is 3-D only)"
    curved = int(allreduce(comm, int(np.any(~np.asarray(geometry.affine, dtype=bool))), "max"))
    if not curved:
        return "split", "every element is affine (the collocated forms are NekCEM's scheme there, and cheaper)"
    refused = refused_tables(case)
    if refused:
        return "split", f"curved elements, but the Galerkin form does not take {', '.join(refused)} yet"
    return "galerkin", "curved elements (the Galerkin form is as accurate as the chain rule there, and stable)"


def note(case, form: str, reason: str, comm=None) -> None:
    """One line on rank 0 where "auto" left a curved mesh to the less accurate split form."""
    if case.discretization.volume_form == "auto" and form == "split" and reason.startswith("curved") \
            and rank_and_size(comm)[0] == 0:
        print(f'lobatto: note: {case.source}: [discretization] volume_form = "auto" runs "split" on this curved mesh: '
              f'{reason.partition(", but ")[2]}; its curved elements are less accurate than with "galerkin" '
              "(docs/meshes.md)", flush=True)


__all__ = ["note", "refused_tables", "resolve"]
