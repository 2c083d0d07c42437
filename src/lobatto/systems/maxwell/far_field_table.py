"""``[output.far_field]``: the near-to-far-field transformation from a closed surface of element
faces, with cross sections per frequency (docs/electromagnetics.md, "Far fields and cross
sections"; run time: far_field.py); on a 2-D mesh a closed contour of edges, phi only, and
scattering widths. The table is the far-field monitor's own: FAR_FIELD,
read by parse_far_field, reaches the case reader through the monitor registry
(config/declared.py). The surface and region names are checked against the mesh, and the
incident plane wave against the case's sources, when the run is set up."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from lobatto.config.dft import check_frequencies
from lobatto.config.physics import Key
from lobatto.config.ranges import COORDINATES, LARGE, SMALL, Range, box_length, check_vector, is_number
from lobatto.config.toolkit import Context, Table, read_table

#: a far field's frequency (cycles per unit time): 2 pi f t is a phase at every step, and the
#: cross sections divide by the incident wave's transform, zero at f = 0
FREQUENCY = Range(SMALL, LARGE, reason="cycles per unit time; the phase 2 pi f t must stay finite, and the cross "
                  "sections divide by the incident transform (zero at f = 0)")

#: the keys of [output.far_field] (docs/electromagnetics.md, "Far fields and cross sections"),
#: read by parse_far_field (below)
FAR_FIELD = Table("output.far_field", (
    Key("frequencies", "list", None, "where the far field and cross sections are computed", required=True,
        range=FREQUENCY),
    Key("lower", "vector", None, "lower corner of the closed (Huygens) surface's box", range=COORDINATES),
    Key("upper", "vector", None, "upper corner of that box", range=COORDINATES),
    Key("region", "string", None, "a volume region whose boundary is the closed surface"),
    Key("origin", "vector", None, "the phase reference (default: the surface's centre)", range=COORDINATES),
    Key("theta", "list", [5.0 * i for i in range(37)], "polar angles of the far field, degrees (0 to 180); on a "
        "2-D mesh the far field lies in the xy plane (theta = 90, the key left out)"),
    Key("phi", "list", [0.0, 90.0], "azimuths of the far field, degrees (0 to 360)"),
    Key("incident", "string", None, "the plane-wave [source.<name>] that normalises the cross sections"),
    Key("absorption_lower", "vector", None, "lower corner of a box in the total-field region (absorption)",
        range=COORDINATES),
    Key("absorption_upper", "vector", None, "upper corner of that box", range=COORDINATES),
    Key("absorption_region", "string", None, "a volume region whose boundary's net inflow is the absorption"),
))
KEYS = FAR_FIELD.key_names


@dataclass(frozen=True)
class ClosedSurface:
    """The boundary of a box [lower, upper] whose sides lie on element faces, or of a region."""

    lower: tuple | None = None
    upper: tuple | None = None
    region: str | None = None

    def to_dict(self, prefix: str = "") -> dict:
        if self.region is not None:
            return {f"{prefix}region": self.region}
        return {f"{prefix}lower": list(self.lower), f"{prefix}upper": list(self.upper)}

    def describe(self) -> str:
        return f"region '{self.region}'" if self.region is not None else f"box {list(self.lower)} .. {list(self.upper)}"


@dataclass(frozen=True)
class FarFieldSection:
    frequencies: tuple  # cycles per unit time
    surface: ClosedSurface  # the Huygens surface (in the scattered-field region for a scatterer)
    theta: tuple  # degrees
    phi: tuple  # degrees
    origin: tuple | None  # phase reference of the far field (None: the surface's centre)
    incident: str | None  # the plane wave ([source.<name>]) that normalises the cross sections
    absorption: ClosedSurface | None  # a closed surface in the total-field region (absorption)

    def to_dict(self) -> dict:
        out = {"frequencies": list(self.frequencies), **self.surface.to_dict(), "theta": list(self.theta),
               "phi": list(self.phi)}
        if self.origin is not None:
            out["origin"] = list(self.origin)
        if self.incident is not None:
            out["incident"] = self.incident
        if self.absorption is not None:
            out.update(self.absorption.to_dict("absorption_"))
        return out


def _surface(ctx: Context, where: str, table: Mapping[str, Any], prefix: str, required: bool) -> ClosedSurface | None:
    lower, upper, region = f"{prefix}lower", f"{prefix}upper", f"{prefix}region"
    box = (lower in table) + (upper in table)
    if box == 1:
        raise ctx.error(f"[{where}] {lower} and {upper} go together (a box whose sides lie on element faces)")
    if box and region in table:
        raise ctx.error(f"[{where}] give either {lower}/{upper} or {region}, not both")
    if box:
        length = box_length(ctx, where, table, (lower, upper))  # [x, y]: a 2-D mesh's rectangle (refused in 3-D at set-up)
        lo = check_vector(ctx, where, lower, table[lower], COORDINATES, length)
        up = check_vector(ctx, where, upper, table[upper], COORDINATES, length)
        if not all(a < b for a, b in zip(lo, up)):
            raise ctx.bad(where, upper, f"above {lower} in every coordinate", list(up))
        return ClosedSurface(lower=tuple(lo), upper=tuple(up))
    if region in table:
        name = table[region]
        if not isinstance(name, str) or not name:
            raise ctx.bad(where, region, "the name of a volume region of the mesh", name)
        return ClosedSurface(region=name)
    if required:
        raise ctx.error(f"[{where}] needs a closed surface: lower = [...] and upper = [...] (a box whose sides lie "
                        "on element faces, around the scatterer or source) or region = \"name\" (its boundary)")
    return None


def _angles(ctx: Context, where: str, table: Mapping[str, Any], key: str, default: list, top: float) -> tuple:
    values = table.get(key, default)
    if not isinstance(values, (list, tuple)) or not values:
        raise ctx.bad(where, key, f"a non-empty list of angles in degrees (0 to {top:g})", values)
    for i, a in enumerate(values):
        if not (is_number(a) and math.isfinite(a) and 0 <= a <= top):
            raise ctx.bad(where, f"{key}[{i}]", f"an angle in degrees from 0 to {top:g}", a)
    return tuple(float(a) for a in values)


def parse_far_field(ctx: Context, output: Mapping[str, Any]) -> FarFieldSection | None:
    table = read_table(ctx, output, "output", "far_field")
    if table is None:
        return None
    where = "output.far_field"
    frequencies = check_frequencies(ctx, where, table, FREQUENCY)
    incident = table.get("incident")
    if incident is not None and (not isinstance(incident, str) or not incident):
        raise ctx.bad(where, "incident", "the name of a [source.<name>] of type \"plane_wave\"", incident)
    # (any coordinates: the phases k . (x - origin) it enters stay finite in float64, as the mesh's do)
    origin = check_vector(ctx, where, "origin", table["origin"], COORDINATES) if "origin" in table else None
    return FarFieldSection(
        frequencies=tuple(float(f) for f in frequencies), surface=_surface(ctx, where, table, "", True),
        theta=_angles(ctx, where, table, "theta", FAR_FIELD["theta"].default, 180.0),
        phi=_angles(ctx, where, table, "phi", FAR_FIELD["phi"].default, 360.0),
        origin=None if origin is None else tuple(origin),
        incident=incident, absorption=_surface(ctx, where, table, "absorption_", False))


FAR_FIELD = FAR_FIELD.read_by(parse_far_field)
