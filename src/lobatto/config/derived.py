"""``[output] derived`` and its per-format overrides ``[output.hdf5]``, ``[output.nek]`` and
``[output.vtk]`` ``derived``: fields the system computes from its state at each snapshot
(vorticity, Q-criterion... : the names its :class:`~lobatto.config.physics.PhysicsSpec`
declares in ``derived``) and adds to the snapshot files.

``[output] derived`` applies to every format; a format's own table replaces it for that
format (``[output.vtk] derived = []`` keeps them out of the VTK files). Checked here against
the spec; whether the mesh allows one (a wall for the wall shear) is the system's check when
the run is set up (``System.check_derived``).
"""

from __future__ import annotations

from typing import Any, Mapping

from lobatto.config.physics import Key, PhysicsSpec
from lobatto.config.toolkit import Context, Table, name_list, read_table

__all__ = ["SNAPSHOT_FORMATS", "FORMAT_TABLES", "DERIVED_KEY", "read_derived"]

#: the snapshot formats with a table of their own (config/generic_tables.py OUTPUT_FORMATS)
SNAPSHOT_FORMATS = ("hdf5", "nek", "vtk")
#: [output] derived; its values are names the system declares (PhysicsSpec.derived), so the
#: valid range is that list, checked by ``read_derived``
DERIVED_KEY = Key("derived", "list", [], "fields computed from the state and added to every snapshot format "
                  "(names the system declares: docs/navier-stokes.md, \"Derived fields\")")
#: [output.hdf5], [output.nek], [output.vtk]: the derived fields of that format alone
FORMAT_TABLES = tuple(Table(f"output.{fmt}", (
    Key("derived", "list", None, f"the derived fields of the {fmt} snapshots, instead of [output] derived"),))
    for fmt in SNAPSHOT_FORMATS)


def read_derived(ctx: Context, output: Mapping[str, Any], spec: PhysicsSpec, formats: tuple) -> tuple:
    """(names of [output] derived, {format: names} of the formats' own tables), each checked
    against ``spec.derived``; a format table for a format the case does not write is refused
    (its names would silently go nowhere)."""
    allowed = tuple(spec.derived)
    what = f"derived field of {spec.name}"
    given = {"output": output} if "derived" in output else {}
    per_format = {}
    for fmt in SNAPSHOT_FORMATS:
        table = read_table(ctx, output, "output", fmt)
        if table is None:
            continue
        if fmt not in formats:
            raise ctx.error(f"[output.{fmt}] is given but \"{fmt}\" is not in [output] formats "
                            f"({', '.join(formats) or 'none'}); add it there or remove the table")
        if "derived" in table:
            given[f"output.{fmt}"] = table
    if given and not allowed:
        raise ctx.error(f"[{next(iter(given))}] derived: {spec.name} provides no derived fields; remove the key")
    names = {where: tuple(name_list(ctx, where, table, "derived", allowed, what, []))
             for where, table in given.items()}
    for where, chosen in names.items():
        for name in chosen:
            clash = [c for c in spec.derived[name].components if c in spec.fields]
            if clash:
                raise ctx.error(f"[{where}] derived: '{name}' writes the field '{clash[0]}', which is already a field "
                                f"of this case ({', '.join(spec.fields)}); rename that field")
    for fmt in SNAPSHOT_FORMATS:
        if f"output.{fmt}" in names:
            per_format[fmt] = names[f"output.{fmt}"]
    return names.get("output", ()), per_format
