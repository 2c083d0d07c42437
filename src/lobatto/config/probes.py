"""``[output.probes]`` and ``[output.integrals]``: time series of point values and integrals
(docs/probes.md). Checked here against the system's spec (its fields and integrands); the
points, region and surface names are checked against the mesh when the run is set up.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Mapping

from lobatto.config.physics import PhysicsSpec
from lobatto.config.ranges import is_number, section_range
from lobatto.config.schema import _Ctx, _int, _show, _table

#: a probe point's coordinates (config/ranges.py)
POINT_RANGE = section_range("output.probes", "points")
#: the region that is always there: the whole mesh
WHOLE_MESH = "all"


@dataclass(frozen=True)
class ProbesSection:
    every: int  # steps between samples
    points: tuple  # ((x, y, z), ...)
    fields: tuple  # field names sampled, in the system's order

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


def parse_probes(ctx: _Ctx, output: Mapping[str, Any], spec: PhysicsSpec) -> ProbesSection | None:
    table = _table(ctx, output, "output", "probes")
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
        if not (isinstance(point, (list, tuple)) and len(point) == 3
                and all(is_number(v) and math.isfinite(v) for v in point)):
            raise ctx.bad(where, f"points[{i}]", "a point [x, y, z] of 3 finite numbers", point)
        if not all(POINT_RANGE.contains(v) for v in point):
            raise ctx.bad(where, f"points[{i}]", f"a point [x, y, z] of numbers {POINT_RANGE.describe()}", point)
        checked.append(tuple(float(v) for v in point))
    fields = _names(ctx, where, table, "fields", spec.fields, f"field of {spec.name}", list(spec.fields))
    return ProbesSection(every=_int(ctx, where, table, "every", 1, 1), points=tuple(checked),
                         fields=tuple(f for f in spec.fields if f in fields))


def parse_integrals(ctx: _Ctx, output: Mapping[str, Any], spec: PhysicsSpec) -> IntegralsSection | None:
    table = _table(ctx, output, "output", "integrals")
    if table is None:
        return None
    where = "output.integrals"
    volume_names, surface_names = spec.integrand_names("volume"), spec.integrand_names("surface")
    if not spec.integrands:
        raise ctx.error(f"[{where}]: {spec.name} declares no integrands; remove the section")
    default_volume = ["energy"] if "energy" in volume_names else list(volume_names[:1])
    volume = _names(ctx, where, table, "volume", volume_names, f"volume integrand of {spec.name}",
                    default_volume, other=(surface_names, "surface"))
    surface = _names(ctx, where, table, "surface", surface_names, f"surface integrand of {spec.name}",
                     list(surface_names), other=(volume_names, "volume"))
    regions = _names(ctx, where, table, "regions", None, "region", [WHOLE_MESH])
    surfaces = _names(ctx, where, table, "surfaces", None, "surface", [])
    if not (volume and regions) and not (surface and surfaces):
        raise ctx.error(f"[{where}] has nothing to integrate: give volume integrands and regions, "
                        "or surface integrands and surfaces")
    return IntegralsSection(every=_int(ctx, where, table, "every", 1, 1), volume=tuple(volume),
                            regions=tuple(regions), surface=tuple(surface), surfaces=tuple(surfaces))


def _names(ctx: _Ctx, where: str, table: Mapping, key: str, allowed, what: str, default: list,
           other: tuple = ((), "")) -> list:
    """A list of names (duplicates dropped), each one of ``allowed`` unless that is None."""
    value = table.get(key, default)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ctx.bad(where, key, "a list of names", value)
    names = list(dict.fromkeys(value))
    for name in names:
        if allowed is None or name in allowed:
            continue
        if name in other[0]:
            hint = f"'{name}' is a {other[1]} integrand: list it in [{where}] {other[1]}"
        else:
            close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.5)
            hint = (f"did you mean '{close[0]}'? " if close else "") + \
                f"expected one of {', '.join(allowed) if allowed else '(none)'}"
        raise ctx.error(f"[{where}] {key}: unknown {what} {_show(name)} ({hint})")
    return names
