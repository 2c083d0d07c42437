"""The memory a dispersive [material] table needs (memory_items.MemoryItem), counted before the
mesh is built (runner.build.check_memory, through MaxwellSystem.memory_estimate) and checked again
once its elements are found, before any pole is set up (dispersive.dispersive_terms)."""

from __future__ import annotations

from lobatto.machine.parallel import launched_local_size
from lobatto.machine.memory_items import MemoryItem, RunLayout, check_allocation
from lobatto.machine.resources import available_host_memory

#: values per point of a dispersive element besides the poles' 3 x aux_count (auxiliary
#: fields, rates, residuals): the term's rate (6), the mask, eps_inf and the mass
TERM_VALUES = 9
#: and with ``volume_form = "galerkin"`` (dispersive_galerkin.py) at most 5 more: w J at the
#: Gauss points of its elements, and of its cut elements again with w / (J eps_c) (3)
GALERKIN_VALUES = 5


def memory_estimate(case, layout) -> list:
    """Each dispersive [material] table's arrays (memory_items.MemoryItem): the poles' rate
    matrix (host, (1 + aux/3)^2 float64 and LAPACK's copies: known from the case) and the
    auxiliary fields on its elements (3 aux_count + TERM_VALUES per point). The elements are
    known before the mesh only for a ``where`` that is constant; otherwise that item is an
    upper bound (every element) that dispersive_terms checks again once they are found."""
    tables = case.tables.get("material")
    items = []
    for t in (tables.tables if tables is not None else ()):
        if t.dispersion is None:
            continue
        aux, poles = t.dispersion.aux_count, len(t.dispersion.poles)
        size = 1 + aux // 3
        items.append(MemoryItem(f"[material.{t.name}] {poles:,} poles: their {size:,} x {size:,} rate matrix",
                                host=4.0 * 8 * size * size, advice=f"use fewer [material.{t.name}] poles"))
        everywhere = t.where is not None and t.where.is_constant
        items.append(aux_item(t, layout, layout.elements, known=everywhere, galerkin=is_galerkin(case)))
    return items


def is_galerkin(case) -> bool:
    """Before the system is built: the Galerkin form may run ("auto" on a mesh that may be curved:
    a file mesh or a deformed box; galerkin_memory.py counts the same way)."""
    form = getattr(case.discretization, "volume_form", "split")
    if form == "auto":
        return case.mesh.generator != "box" or bool(case.mesh.deform)
    return form == "galerkin"


def aux_item(table, layout, elements: int, known: bool = True, galerkin: bool = False) -> MemoryItem:
    """The auxiliary fields of ``table``'s poles on ``elements`` elements of the rank."""
    aux, poles = table.dispersion.aux_count, len(table.dispersion.poles)
    values = 3 * aux + TERM_VALUES + (GALERKIN_VALUES if galerkin else 0)
    return layout.backend_item(
        f"[material.{table.name}] {poles:,} poles: {values:,} values per point on {elements:,} elements",
        values * elements * (layout.order + 1) ** layout.dim * layout.value_bytes,
        advice=f"use fewer [material.{table.name}] poles or a smaller material", known=known)


def check_aux_memory(case, system, tables, counts) -> None:
    """Before any pole is set up: the auxiliary fields of the tables on the elements found
    (counts) fit in the memory available now (the second check of memory_estimate)."""
    layout = RunLayout(elements=system.num_elements, total_elements=system.num_elements, order=system.order,
                       fields=len(system.field_names), precision=system.backend.precision,
                       backend=system.backend.name, dim=system.mesh.dim)
    galerkin = getattr(system, "galerkin", None) is not None  # the form that runs (built)
    items = [aux_item(t, layout, int(count), galerkin=galerkin) for t, count in zip(tables, counts) if count]
    if items:
        host = available_host_memory()
        host = None if host is None else host // launched_local_size()
        check_allocation(items, host, system.backend.memory_available(), f"{case.source}: [material]")
