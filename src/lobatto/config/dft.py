"""``[output.dft]``: running Fourier transforms of the fields at chosen frequencies on named
surfaces and regions, and the flux of the system's surface integrands per frequency
(docs/electromagnetics.md, "Frequency-domain monitors"). Names of surfaces and regions are
checked against the mesh when the run is set up (probes.py)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from lobatto.config.physics import Key, PhysicsSpec
from lobatto.config.ranges import COORDINATES, LARGE, Range, check_number, check_vector
from lobatto.config.toolkit import Context, Table, name_list, read_table


@dataclass(frozen=True)
class DftSection:
    frequencies: tuple  # cycles per unit time (omega = 2 pi f)
    fields: tuple  # fields transformed, in the system's order
    surfaces: tuple  # named boundary surfaces
    regions: tuple  # region names ("all": the whole mesh)
    flux: tuple  # surface integrands given per frequency on every surface
    planes: tuple = ()  # (axis 0-2, value): the planes x_axis = value through the mesh (monitors/planes.py)
    boxes: tuple = ()  # (lower, upper): closed surfaces of boxes of element faces
    normalize: str | None = None  # a surface of this table: its flux in the run without [material] tables
    taper: float = 0.0  # the share of the record at its end over which the transform's weight falls to 0

    def to_dict(self) -> dict:
        out = {"frequencies": list(self.frequencies), "fields": list(self.fields), "surfaces": list(self.surfaces),
               "regions": list(self.regions), "flux": list(self.flux)}
        if self.planes:
            out["planes"] = [f"{AXES[axis]} = {value!r}" for axis, value in self.planes]  # exact: read again
        if self.boxes:
            out["boxes"] = [{"lower": list(lower), "upper": list(upper)} for lower, upper in self.boxes]
        if self.normalize is not None:
            out["normalize"] = self.normalize
        if self.taper:  # (only when on: older effective configurations stay equal)
            out["taper"] = self.taper
        return out

    def surface_names(self) -> tuple:
        """Every surface of the table by its name in NAME_dft.h5: named ones, planes, boxes."""
        return (tuple(self.surfaces) + tuple(plane_name(*p) for p in self.planes)
                + tuple(box_name(*b) for b in self.boxes))


AXES = ("x", "y", "z")
#: "x = 0.5", "y=-1e-3": a plane's text in a case
PLANE_TEXT = re.compile(r"^\s*([xyz])\s*=\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)\s*$")


def plane_name(axis: int, value: float) -> str:
    """The text of the plane x_axis = value: its name in NAME_dft.h5 (surfaces/<name>)."""
    return f"{AXES[axis]} = {value:g}"


def box_name(lower, upper) -> str:
    """The name of a box's closed surface in NAME_dft.h5."""
    return "box [" + ", ".join(f"{v:g}" for v in lower) + "] to [" + ", ".join(f"{v:g}" for v in upper) + "]"


#: a transform's frequency (cycles per unit time): the phase 2 pi f t is computed at every step
FREQUENCY = Range(0.0, LARGE, reason="cycles per unit time; the phase 2 pi f t must stay finite")

#: the share of the record tapered: 1 would leave no sample at full weight (the window starts at
#: t_start); below 0 means nothing
TAPER = Range(0.0, 1.0, high_open=True, reason="a share of the record [t_start, t_end]: at 1 no sample would keep "
              "its full weight")

#: the keys of [output.dft] (docs/electromagnetics.md, "Frequency-domain monitors")
DFT = Table("output.dft", (
    Key("frequencies", "list", None, "the frequencies transformed, cycles per unit time", required=True,
        range=FREQUENCY),
    Key("fields", "list", None, "the fields transformed (default: all the system's)"),
    Key("surfaces", "list", [], "named boundary surfaces"),
    Key("planes", "list", [], 'planes through the mesh on element faces, "x = 0.5" (flux along +x; a line '
        'x = c or y = c of edges on a 2-D mesh)',
        range=COORDINATES),
    Key("boxes", "list", [], "closed surfaces of boxes on element faces, {lower = [...], upper = [...]} "
        "(outward flux; [x, y] on a 2-D mesh: rectangles of edges)", range=COORDINATES),
    Key("regions", "list", [], "region names (all: the whole mesh)"),
    Key("flux", "list", None, "surface integrands given per frequency (default: all the system's)"),
    Key("normalize", "string", None, "a surface, plane or box of this table (its name in NAME_dft.h5): the run "
        "first runs the case without its [material] tables and divides every flux by that one's flux there"),
    Key("taper", "nonnegative", 0.0, "the share of the record, at its end, over which the transform's weight "
        "falls from 1 to 0 by a half cosine (0: none); needs a known end, [time] t_end", range=TAPER),
))


def check_frequencies(ctx: Context, where: str, table: Mapping[str, Any], allowed: Range) -> tuple:
    """``table["frequencies"]``: a non-empty list of numbers in ``allowed``, as a tuple of floats
    (the phases 2 pi f t stay finite: f <= 1e30 and [time] t_end <= 1e100)."""
    frequencies = table.get("frequencies")
    if frequencies is None:
        raise ctx.error(f"[{where}] frequencies is required (for example frequencies = [0.5, 0.75])")
    if not isinstance(frequencies, (list, tuple)) or not frequencies:
        raise ctx.bad(where, "frequencies", f"a non-empty list of frequencies, each {allowed.text()}", frequencies)
    out = tuple(check_number(ctx, where, f"frequencies[{i}]", f, allowed) for i, f in enumerate(frequencies))
    return out


def parse_dft(ctx: Context, output: Mapping[str, Any], spec: PhysicsSpec) -> DftSection | None:
    table = read_table(ctx, output, "output", "dft")
    if table is None:
        return None
    where = "output.dft"
    frequencies = check_frequencies(ctx, where, table, FREQUENCY)
    fields = name_list(ctx, where, table, "fields", spec.fields, f"field of {spec.name}", list(spec.fields))
    surface_names = spec.integrand_names("surface")
    flux = name_list(ctx, where, table, "flux", surface_names, f"surface integrand of {spec.name}",
                     list(surface_names), other=(spec.integrand_names("volume"), "volume"))
    surfaces = name_list(ctx, where, table, "surfaces", None, "surface", DFT["surfaces"].default)
    regions = name_list(ctx, where, table, "regions", None, "region", DFT["regions"].default)
    planes, boxes = parse_planes(ctx, where, table), parse_boxes(ctx, where, table)
    if not surfaces and not regions and not planes and not boxes:
        raise ctx.error(f"[{where}] has nowhere to transform: give surfaces (named boundary surfaces), planes, "
                        "boxes or regions")
    section = DftSection(frequencies=tuple(float(f) for f in frequencies),
                         fields=tuple(f for f in spec.fields if f in fields), surfaces=tuple(surfaces),
                         regions=tuple(regions), flux=tuple(flux), planes=planes, boxes=boxes)
    if "taper" in table:
        section = DftSection(**{**section.__dict__, "taper": check_number(ctx, where, "taper", table["taper"], TAPER)})
    normalize = table.get("normalize")
    if isinstance(normalize, str) and PLANE_TEXT.match(normalize):  # "x=1.75" as planes accepts it
        match = PLANE_TEXT.match(normalize)
        normalize = plane_name(AXES.index(match.group(1)), float(match.group(2)))
    if normalize is not None:
        names = section.surface_names()
        if not isinstance(normalize, str) or normalize not in names:
            raise ctx.bad(where, "normalize", "the name of one of this table's surfaces, planes or boxes ("
                          + (", ".join(f'"{n}"' for n in names) or "it has none") + ")", normalize)
        if not flux:
            raise ctx.error(f"[{where}] normalize divides fluxes: give at least one flux integrand")
        section = DftSection(**{**section.__dict__, "normalize": normalize})
    return section


def check_taper_end(ctx: Context, time, dft: DftSection | None) -> None:
    """[output.dft] taper needs the record's end when the run starts: [time] t_end, reached
    (refused with until_decayed or steady_tolerance, which stop at a time not known before)."""
    if dft is None or not dft.taper:
        return
    early = [] if time is None else [key for key in ("until_decayed", "steady_tolerance")
                                      if getattr(time, key, None) is not None]
    if time is None or early:
        why = f"[time] {early[0]} stops the run at a time not known when it starts" if early else "the case has no [time]"
        raise ctx.error(f"[output.dft] taper = {dft.taper:g} tapers the record up to its end, [time] t_end, which must "
                        f"be known when the run starts: {why}; remove taper or {early[0] if early else 'the table'}")


def parse_planes(ctx: Context, where: str, table: Mapping[str, Any]) -> tuple:
    """``planes``: a list of "x = c" (y, z) texts, c a coordinate, none twice."""
    given = table.get("planes", [])
    if not isinstance(given, list):
        raise ctx.bad(where, "planes", 'a list of planes such as ["x = 0.5"]', given)
    out = []
    for i, text in enumerate(given):
        match = PLANE_TEXT.match(text) if isinstance(text, str) else None
        if match is None:
            raise ctx.bad(where, f"planes[{i}]", 'a plane "x = c", "y = c" or "z = c" (c a number)', text)
        value = check_number(ctx, where, f"planes[{i}]", float(match.group(2)), COORDINATES)
        plane = (AXES.index(match.group(1)), float(value))
        if plane_name(*plane) in (plane_name(*p) for p in out):  # the file's group names (6 digits) must differ
            raise ctx.error(f"[{where}] planes: \"{plane_name(*plane)}\" is given twice (planes are named "
                            "to 6 significant digits in NAME_dft.h5)")
        out.append(plane)
    return tuple(out)


def parse_boxes(ctx: Context, where: str, table: Mapping[str, Any]) -> tuple:
    """``boxes``: a list of {lower = [3 numbers], upper = [3 numbers]}, lower < upper; 2
    numbers each (x, y) for a 2-D mesh's rectangle (monitors/planes.py box_faces)."""
    given = table.get("boxes", [])
    expected = "a list of boxes such as [{lower = [0.2, 0.2, 0.2], upper = [0.8, 0.8, 0.8]}]"
    if not isinstance(given, list):
        raise ctx.bad(where, "boxes", expected, given)
    out = []
    for i, box in enumerate(given):
        if not isinstance(box, Mapping) or sorted(box) != ["lower", "upper"]:
            raise ctx.bad(where, f"boxes[{i}]", "a table {lower = [x, y, z], upper = [x, y, z]} (those two keys)", box)
        # 2 entries in both: a 2-D rectangle; anything else is read (and refused) as 3-D's
        length = 2 if all(isinstance(box[k], list) and len(box[k]) == 2 for k in ("lower", "upper")) else 3
        corners = [check_vector(ctx, where, f"boxes[{i}].{key}", box[key], COORDINATES, length)
                   for key in ("lower", "upper")]
        lower, upper = corners
        if not all(lo < up and math.isfinite(up - lo) for lo, up in zip(lower, upper)):
            raise ctx.bad(where, f"boxes[{i}]", "lower < upper along every axis", box)
        if box_name(lower, upper) in (box_name(*b) for b in out):  # the file's group names must differ
            raise ctx.error(f"[{where}] boxes: {box_name(lower, upper)} is given twice (boxes are named to 6 "
                            "significant digits in NAME_dft.h5)")
        out.append((lower, upper))
    return tuple(out)
