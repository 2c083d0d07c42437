"""``[discretization] volume_form = "auto"`` (the default) for Maxwell: which volume form a case runs.

On a 3-D mesh with a curved element (on any rank) it is "galerkin" (galerkin.py): energy-stable
and as accurate as NekCEM's chain rule on curved elements, where the collocated split form is
2-13x less accurate (benchmarks/notes-curved-maxwell.md: NekCEM's cylwave at N = 11 fails with
split, passes with galerkin). Everywhere else it is "split": on affine elements the collocated
forms are NekCEM's scheme (the chain rule, the conservative and the split forms are one
operator there) and cheaper than the Galerkin form's exact mass, and 2-D meshes do not take
the Galerkin form. Where a curved case uses a table the Galerkin form does not take yet
(``refused_tables``) it is "split" too, and the run says so once (``note``). The choice and its
reason are in the run's summary (MaxwellSystem.summary, "volume_form").
"""

from __future__ import annotations

import numpy as np

from lobatto.machine.parallel import allreduce, rank_and_size

def refused_tables(case) -> list[str]:
    """The case's tables that the Galerkin form does not take (yet), by their case-file names:
    from the case alone, so that "auto" chooses before the system is built (galerkin.
    check_supported refuses the same terms of a built system where the case names the form)."""
    from lobatto.systems.maxwell.galerkin import TAKEN_TERMS
    from lobatto.systems.maxwell.ports import ports_of

    refused = []
    for spec in case.tables.get("source", ()):
        if spec.type == "plane_wave" and spec.values.get("incident_field", "analytic") == "discrete":
            refused.append(f'[source.{spec.name}] incident_field = "discrete"')
    if "port" not in TAKEN_TERMS:
        refused += [f"[port.{t.name}]" for t in ports_of(case)[0]]
    if "dispersion" not in TAKEN_TERMS:
        materials = case.tables.get("material")
        refused += [f"[material.{t.name}] (dispersive)" for t in (materials.tables if materials is not None else ())
                    if t.dispersion is not None]
    if case.physics.values.get("bloch_k") is not None and not BLOCH_TAKEN:
        refused.append("[physics] bloch_k")
    return refused


#: whether the Galerkin form takes Bloch-periodic boundaries (bloch.py)
BLOCH_TAKEN = True


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
        return "split", "every element is affine (the collocated forms are exact there and cheaper)"
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


__all__ = ["BLOCH_TAKEN", "note", "refused_tables", "resolve"]
