"""The memory the [pml] layer needs (memory_items.MemoryItem): counted before the mesh is built
(runner.build.check_memory, through MaxwellSystem.memory_estimate) from [mesh] and [pml] for a box,
and checked again once the layer's elements are found (pml.build_pml), as
dispersive_memory.py does for the dispersive poles. ``spec`` is the [pml] table (pml.PmlSpec).
"""

from __future__ import annotations

import math

from lobatto.config.schema import SIDES

#: values per point of a layer element: the term's rate (6), its 18 auxiliary fields, their
#: rates and residuals (54), the gains and poles (4 x 3)
LAYER_VALUES = 72


def layer_elements(case, spec) -> int | None:
    """Elements of a box mesh in the layer (their centroids within the layer's reach of the
    chosen sides), or None for a file mesh (known only once the mesh is built)."""
    if case.mesh.from_file:
        return None
    counts = list(case.mesh.elements)
    inner = 1
    for axis, n in enumerate(counts):
        width = (case.mesh.upper[axis] - case.mesh.lower[axis]) / n
        deep = [spec.elements if spec.elements is not None else int(math.ceil(spec.thickness / width - 0.5))
                for side in (SIDES[2 * axis], SIDES[2 * axis + 1]) if side in spec.sides]
        inner *= max(n - sum(min(d, n) for d in deep), 0)
    return math.prod(counts) - inner


def memory_estimate(case, layout) -> list:
    """The layer's arrays (memory_items.MemoryItem): LAYER_VALUES per point of its elements (a
    box: counted from [mesh] and [pml]; the rank with the most holds at least its share), and
    on the host while it is found, the conductivity and the sides' distances at every point."""
    spec = case.tables.get("pml")
    if spec is None:
        return []
    per_element = (layout.order + 1) ** layout.dim
    count = layer_elements(case, spec)
    on_rank = layout.elements if count is None else min(layout.elements, math.ceil(count / layout.ranks))
    return [layout.backend_item(
        f"[pml] on {', '.join(spec.sides)}: {LAYER_VALUES} values per point of "
        + (f"{count:,} layer elements" if count is not None else "the layer's elements"),
        LAYER_VALUES * on_rank * per_element * layout.value_bytes, host=(3 + len(spec.sides)) * layout.points * 8,
        advice="use a thinner [pml] (fewer elements) or fewer sides", known=count is not None)]


def check_layer_memory(system, spec, count: int, where: str) -> None:
    """The layer's arrays on its ``count`` elements of this rank fit in the memory free now."""
    from lobatto.machine.parallel import launched_local_size
    from lobatto.machine.memory_items import RunLayout, check_allocation
    from lobatto.machine.resources import available_host_memory

    layout = RunLayout(elements=max(count, 1), total_elements=max(count, 1), order=system.order, fields=6,
                       precision=system.backend.precision, backend=system.backend.name)
    item = layout.backend_item(f"[pml] on {', '.join(spec.sides)}: {LAYER_VALUES} values per point of {count:,} "
                               "layer elements", LAYER_VALUES * count * (system.order + 1) ** system.mesh.dim * layout.value_bytes,
                               advice="use a thinner [pml] (fewer elements) or fewer sides")
    host = available_host_memory()
    check_allocation([item], None if host is None else host // launched_local_size(),
                     system.backend.memory_available(), f"{where}: [pml]")
