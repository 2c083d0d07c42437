"""``[output.probes]`` and ``[output.integrals]``: time series of point values and integrals
(docs/probes.md). Checked here against the system's spec (its fields and integrands); the
points, region and surface names are checked against the mesh when the run is set up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from lobatto.config.physics import Key, PhysicsSpec
from lobatto.config.ranges import is_number, section_range
from lobatto.config.toolkit import Context, Table, integer, name_list, read_table

#: a probe point's coordinates (config/ranges.py)
POINT_RANGE = section_range("output.probes", "points")
#: the region that is always there: the whole mesh
WHOLE_MESH = "all"

#: the keys of [output.probes] (docs/probes.md)
PROBES = Table("output.probes", (
    Key("every", "positive_integer", 1, "steps between samples", range=section_range("output.probes", "every")),
    Key("points", "list", None, "the points [x, y, z] sampled ([x, y] on a 2-D mesh)", required=True, range=POINT_RANGE),
    Key("fields", "list", None, "the fields sampled (default: all the system's)"),
))
#: the keys of [output.integrals] (docs/probes.md)
INTEGRALS = Table("output.integrals", (
    Key("every", "positive_integer", 1, "steps between samples", range=section_range("output.probes", "every")),
    Key("volume", "list", None, "volume integrands (default: energy, or the system's first)"),
    Key("regions", "list", [WHOLE_MESH], "regions each volume integrand is integrated over"),
    Key("surface", "list", None, "surface integrands (default: all the system's)"),
    Key("surfaces", "list", [], "named boundary surfaces each surface integrand is integrated over"),
))


@dataclass(frozen=True)
class ProbesSection:
    every: int  # steps between samples
    points: tuple  # ((x, y, z), ...); (x, y) on a 2-D mesh
    fields: tuple  # field names sampled, in the system's order
    fields_given: bool = False  # named by the case (else every field: a 2-D run samples those it has)

    def to_dict(self) -> dict:
        return {"every": self.every, "points": [list(p) for p in self.points], "fields": list(self.fields)}


@dataclass(frozen=True)
class IntegralsSection:
    every: int
    volume: tuple  # volume integrands, each integrated over every region
    regions: tuple  # region names ("all": the whole mesh)
    surface: tuple  # surface integrands, each integrated over every surface
    surfaces: tuple  # named boundary surfaces

    def to_dict(self) -> dict:
        return {"every": self.every, "volume": list(self.volume), "regions": list(self.regions),
                "surface": list(self.surface), "surfaces": list(self.surfaces)}


def parse_probes(ctx: Context, output: Mapping[str, Any], spec: PhysicsSpec) -> ProbesSection | None:
    table = read_table(ctx, output, "output", "probes")
    if table is None:
        return None
    where = "output.probes"
    points = table.get("points")
    if points is None:
        raise ctx.error(f"[{where}] points is required (for example points = [[0.5, 0.5, 0.5]])")
    if not isinstance(points, (list, tuple)) or not points:
        raise ctx.bad(where, "points", "a non-empty list of points [x, y, z]", points)
    checked = []
    for i, point in enumerate(points):
        # [x, y] only on a 2-D mesh: its dimension is known once the mesh is read (runner/dimension.py)
        if not (isinstance(point, (list, tuple)) and len(point) in (2, 3)
                and all(is_number(v) and math.isfinite(v) for v in point)):
            raise ctx.bad(where, f"points[{i}]", "a point [x, y, z] of 3 finite numbers ([x, y] on a 2-D mesh)", point)
        if not all(POINT_RANGE.contains(v) for v in point):
            raise ctx.bad(where, f"points[{i}]", f"a point [x, y, z] of numbers {POINT_RANGE.describe()}", point)
        checked.append(tuple(float(v) for v in point))
    fields = name_list(ctx, where, table, "fields", spec.fields, f"field of {spec.name}", list(spec.fields))
    return ProbesSection(every=integer(ctx, where, table, "every", PROBES["every"].default, 1), points=tuple(checked),
                         fields=tuple(f for f in spec.fields if f in fields), fields_given="fields" in table)


def parse_integrals(ctx: Context, output: Mapping[str, Any], spec: PhysicsSpec) -> IntegralsSection | None:
    table = read_table(ctx, output, "output", "integrals")
    if table is None:
        return None
    where = "output.integrals"
    volume_names, surface_names = spec.integrand_names("volume"), spec.integrand_names("surface")
    if not spec.integrands:
        raise ctx.error(f"[{where}]: {spec.name} declares no integrands; remove the section")
    default_volume = ["energy"] if "energy" in volume_names else list(volume_names[:1])
    volume = name_list(ctx, where, table, "volume", volume_names, f"volume integrand of {spec.name}",
                       default_volume, other=(surface_names, "surface"))
    surface = name_list(ctx, where, table, "surface", surface_names, f"surface integrand of {spec.name}",
                       list(surface_names), other=(volume_names, "volume"))
    regions = name_list(ctx, where, table, "regions", None, "region", INTEGRALS["regions"].default)
    surfaces = name_list(ctx, where, table, "surfaces", None, "surface", INTEGRALS["surfaces"].default)
    if not (volume and regions) and not (surface and surfaces):
        raise ctx.error(f"[{where}] has nothing to integrate: give volume integrands and regions, "
                        "or surface integrands and surfaces")
    return IntegralsSection(every=integer(ctx, where, table, "every", INTEGRALS["every"].default, 1),
                            volume=tuple(volume),
                            regions=tuple(regions), surface=tuple(surface), surfaces=tuple(surfaces))

