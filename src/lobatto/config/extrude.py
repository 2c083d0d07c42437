"""``[mesh] extrude``: layers grown outward from named planar surfaces of a mesh file
(mesh/extrude.py), as a waveguide port's ``surface`` writes it (docs/case-file.md)."""

from __future__ import annotations

from typing import Mapping

from lobatto.config.ranges import LARGE, SMALL
from lobatto.config.toolkit import Context, is_number, show



#: [mesh] extrude: at most this many layers per surface (each is as many elements as the surface
#: has faces; a waveguide port's extension needs a PML of a few and two buffer layers)
MOST_EXTRUDED_LAYERS = 100


def read_extrude(ctx: Context, given) -> tuple:
    """[mesh] extrude: a list of {surface (a name), layers (1..MOST_EXTRUDED_LAYERS), thickness
    (> 0, a length: SMALL..LARGE as any coordinate difference)} applied in order."""
    if given is None:
        return ()
    expected = ('a list of tables {surface = "name", layers = n (1 to ' f'{MOST_EXTRUDED_LAYERS}), thickness = h > 0}}')
    if not isinstance(given, list) or not all(isinstance(e, Mapping) for e in given):
        raise ctx.bad("mesh", "extrude", expected, given)
    out = []
    for entry in given:
        if set(entry) != {"surface", "layers", "thickness"}:
            raise ctx.bad("mesh", "extrude", expected, given, "each table has exactly surface, layers and thickness")
        surface, layers, thickness = entry["surface"], entry["layers"], entry["thickness"]
        if not isinstance(surface, str) or not surface:
            raise ctx.bad("mesh", "extrude", expected, given, "surface must be a name")
        if not isinstance(layers, int) or isinstance(layers, bool) or not 1 <= layers <= MOST_EXTRUDED_LAYERS:
            raise ctx.bad("mesh", "extrude", expected, given, f"layers = {show(layers)}")
        if not is_number(thickness) or not SMALL <= float(thickness) <= LARGE:
            raise ctx.bad("mesh", "extrude", expected, given, f"thickness = {show(thickness)} (from {SMALL:g} to "
                          f"{LARGE:g})")
        out.append({"surface": surface, "layers": int(layers), "thickness": float(thickness)})
    return tuple(out)
