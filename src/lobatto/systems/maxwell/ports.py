"""Waveguide ports: the ``[port.<name>]`` and ``[ports]`` tables (docs/electromagnetics.md,
"Ports and S-parameters"), their checks across tables, and the band's excitation pulse.

A port is a reference plane across a guide (element faces, as ``[output.dft] planes``) where
the fields are decomposed into the port's mode, travelling into the device (a) and out of it
(b); a port with ``source`` is driven by launching that mode from the plane ``source``
(port_launch.py). ``[ports]`` gives the frequencies and which ports are driven, one run per
driven port (runner/ports.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from lobatto.config.dft import AXES, FREQUENCY, PLANE_TEXT, check_frequencies, plane_name
from lobatto.config.physics import Key
from lobatto.config.ranges import COORDINATES, Range, check_number
from lobatto.config.toolkit import Table, choice, integer, show
from lobatto.errors import InputError
from lobatto.systems.maxwell.port_modes import MODE_TEXT, MODES

DIRECTIONS = ("+", "-")
#: the cross-sections with modes: analytic rectangle and circle, and any (a 2-D eigen-solve on the plane)
SHAPES = ("rectangle", "circle", "any")
#: at most this many frequencies (each is a running transform on every port plane, every step)
MOST_FREQUENCIES = 100_000
#: [ports] pml_elements: at most this many PML layers grown behind a surface port
MOST_PML_ELEMENTS = 50
#: the pulse's spectrum falls to this share of its peak at the band's edges
EDGE_SHARE = 0.1
#: the pulse's centre is this many widths after t = 0 (it starts at exp(-36/2) ~ 1.5e-8 of its peak)
DELAY_WIDTHS = 6.0

PORT = Table("port.<name>", (
    Key("surface", "string", None, 'a named planar boundary surface ("port1", a box side "zmin"): the reference '
        "plane; lobatto grows the source plane and a PML behind it (instead of plane, source and direction)"),
    Key("plane", "string", None, 'the reference plane, "z = 0.75" (element faces across the guide): the '
        "modal decomposition there, the S-parameters refer to it"),
    Key("source", "string", None, 'where the mode is launched when this port is driven, "z = 0.5" (between '
        "the [pml] layer and plane); absent: the port is only measured"),
    Key("direction", "choice", None, "along the plane's axis, the direction into the device (with plane)",
        choices=DIRECTIONS),
    Key("shape", "choice", "rectangle", "the cross-section (rectangle: analytic modes)", choices=SHAPES),
    Key("mode", "string", None, 'rectangle: "TE<m><n>" or "TM<m><n>"; any: "TE1", "TM2" (n-th lowest of a kind)',
        required=True),
))
PORTS = Table("ports", (
    Key("frequencies", "list", None, "the frequencies of the S-parameters, cycles per unit time (or fmin, fmax, "
        "count)", range=FREQUENCY),
    Key("fmin", "positive", None, "the band's lowest frequency (with fmax, count)", range=FREQUENCY),
    Key("fmax", "positive", None, "the band's highest frequency", range=FREQUENCY),
    Key("count", "positive_integer", None, "frequencies from fmin to fmax, evenly spaced",
        range=Range(1, MOST_FREQUENCIES, reason="each is a running transform on every port plane at every step")),
    Key("drive", "list", "all", 'the ports driven, one run each: "all" (every port with a source or a surface) or '
        "a list of names"),
    Key("pml_elements", "positive_integer", 4, "surface ports without a [pml] table: layers of PML elements "
        "grown behind each surface", range=Range(1, MOST_PML_ELEMENTS, reason="a few absorb to the target "
                                                 "reflection; each layer has as many elements as the surface faces")),
))


@dataclass(frozen=True)
class PortSpec:
    """One checked ``[port.<name>]`` table."""

    name: str
    axis: int
    plane: float
    source: float | None
    direction: str
    shape: str
    mode: str
    surface: str | None = None  # a named boundary surface: axis, plane, source, direction not yet known

    @property
    def sign(self) -> float:
        """+1 or -1: the direction into the device along the axis."""
        return 1.0 if self.direction == "+" else -1.0

    @property
    def plane_name(self) -> str:
        return plane_name(self.axis, self.plane)

    def to_dict(self) -> dict:
        if self.surface is not None:
            return {"surface": self.surface, "shape": self.shape, "mode": self.mode}
        out = {"plane": f"{AXES[self.axis]} = {self.plane!r}", "direction": self.direction, "shape": self.shape,
               "mode": self.mode}
        if self.source is not None:
            out["source"] = f"{AXES[self.axis]} = {self.source!r}"
        return out


class PortTables(tuple):
    """``Case.tables["port"]``: the ports, in the file's order."""

    def to_dict(self) -> dict:
        return {p.name: p.to_dict() for p in self}


@dataclass(frozen=True)
class PortsSpec:
    """The checked ``[ports]`` table: the frequencies and the driven ports ("all" or names)."""

    frequencies: tuple
    drive: Any
    band: tuple | None = None  # (fmin, fmax, count) when given so
    pml_elements: int | None = None  # given: the layers grown behind surface ports without a [pml]

    def to_dict(self) -> dict:
        out = ({"fmin": self.band[0], "fmax": self.band[1], "count": self.band[2]} if self.band is not None
               else {"frequencies": list(self.frequencies)})
        out["drive"] = self.drive if isinstance(self.drive, str) else list(self.drive)
        if self.pml_elements is not None:
            out["pml_elements"] = self.pml_elements
        return out


def _plane(ctx, where: str, key: str, text) -> tuple[int, float]:
    match = PLANE_TEXT.match(text) if isinstance(text, str) else None
    if match is None:
        raise ctx.bad(where, key, 'a plane "x = c", "y = c" or "z = c" (c a number)', text)
    return AXES.index(match.group(1)), check_number(ctx, where, key, float(match.group(2)), COORDINATES)


def parse_port_tables(ctx, given) -> PortTables:
    """Check the ``[port]`` tables (PhysicsSpec.named_tables): one-line errors naming the key."""
    if not isinstance(given, Mapping) or not given:
        raise ctx.error(f"[port] must hold one table per port, for example [port.in], got {show(given)}")
    return PortTables(_parse_port(ctx, name, table) for name, table in given.items())


def _parse_port(ctx, name: str, table) -> PortSpec:
    where = f"port.{name}"
    if not isinstance(table, Mapping):
        raise ctx.error(f"[{where}] must be a table with plane, direction and mode, got {show(table)}")
    PORT.check(ctx, table, where)
    for key in PORT.keys:
        if key.required and key.name not in table:
            raise ctx.error(f"[{where}] {key.name} is required ({key.doc})")
    if "surface" in table:
        return _surface_port(ctx, name, where, table)
    for key in ("plane", "direction"):
        if key not in table:
            raise ctx.error(f"[{where}] needs surface (a named boundary surface) or plane and direction ({key} is "
                            "missing)")
    axis, plane = _plane(ctx, where, "plane", table["plane"])
    source = None
    if "source" in table:
        source_axis, source = _plane(ctx, where, "source", table["source"])
        if source_axis != axis:
            raise ctx.bad(where, "source", f'a plane across the same axis as plane ("{AXES[axis]} = ...")',
                          table["source"])
    direction = choice(ctx, where, table, "direction", DIRECTIONS, None)
    if source is not None and not (source - plane) * (1.0 if direction == "+" else -1.0) < 0:
        raise ctx.bad(where, "source", f"upstream of plane for direction = \"{direction}\" (the mode is launched at "
                      f"source and travels {direction}{AXES[axis]} through plane into the device: source "
                      f"{'<' if direction == '+' else '>'} {plane:g})", table["source"])
    shape, mode = _shape_mode(ctx, where, table)
    return PortSpec(name, axis, float(plane), None if source is None else float(source), direction, shape, mode)


def _surface_port(ctx, name: str, where: str, table) -> PortSpec:
    """A port on a named surface: its planes and direction are found on the mesh (port_surface.py)."""
    given = [k for k in ("plane", "source", "direction") if k in table]
    if given:
        raise ctx.error(f"[{where}] surface goes without {', '.join(given)}: the surface is the reference plane, "
                        "and the source plane and direction follow from it (or give plane, source and direction "
                        "without surface)")
    surface = table["surface"]
    if not isinstance(surface, str) or not surface.strip():
        raise ctx.bad(where, "surface", 'a boundary surface\'s name ("port1", or a box side "zmin")', surface)
    shape, mode = _shape_mode(ctx, where, table)
    return PortSpec(name, -1, math.nan, None, "+", shape, mode, surface=surface)


def _shape_mode(ctx, where: str, table) -> tuple[str, str]:
    shape = choice(ctx, where, table, "shape", SHAPES, PORT["shape"].default)
    mode = table["mode"]
    if not isinstance(mode, str) or MODE_TEXT.match(mode) is None:
        raise ctx.bad(where, "mode", '"TE<m><n>" / "TM<m><n>" for a rectangle, "TE<k>" / "TM<k>" for any', mode)
    if shape == "rectangle":
        from lobatto.systems.maxwell.port_modes import parse_rectangle_mode

        try:
            parse_rectangle_mode(mode, f"[{where}]")
        except InputError as error:
            raise ctx.error(str(error)) from None
    return shape, mode


def parse_ports(ctx, table) -> PortsSpec:
    """Check ``[ports]`` (PhysicsSpec.named_tables)."""
    where = "ports"
    if not isinstance(table, Mapping):
        raise ctx.error(f"[ports] must be a table (frequencies, drive), got {show(table)}")
    PORTS.check(ctx, table, where)
    band = None
    given = [k for k in ("fmin", "fmax", "count") if k in table]
    if "frequencies" in table and given:
        raise ctx.error("[ports] gives frequencies and fmin/fmax/count; give one (a list, or an even band)")
    if "frequencies" in table:
        frequencies = check_frequencies(ctx, where, table, FREQUENCY)
        if any(f <= 0 for f in frequencies):
            raise ctx.bad(where, "frequencies", "a list of positive frequencies", table["frequencies"])
        if len(frequencies) > MOST_FREQUENCIES:
            raise ctx.bad(where, "frequencies", f"at most {MOST_FREQUENCIES} frequencies", f"{len(frequencies)} of them")
        if any(b <= a for a, b in zip(frequencies, frequencies[1:])):
            raise ctx.bad(where, "frequencies", "increasing, distinct frequencies (Touchstone lists them so)",
                          table["frequencies"])
    elif len(given) == 3:
        fmin, fmax = (check_number(ctx, where, k, table[k], FREQUENCY) for k in ("fmin", "fmax"))
        count = integer(ctx, where, table, "count", None, 1, MOST_FREQUENCIES)
        if not 0 < fmin <= fmax or (count > 1 and fmax == fmin):
            raise ctx.bad(where, "fmax", f"above fmin = {fmin:g} > 0 (equal only with count = 1)", table["fmax"])
        frequencies = tuple(fmin + (fmax - fmin) * i / (count - 1) for i in range(count)) if count > 1 else (fmin,)
        band = (fmin, fmax, count)
    else:
        raise ctx.error("[ports] needs the frequencies: frequencies = [f1, f2, ...] or fmin, fmax and count")
    drive = table.get("drive", "all")
    if drive != "all":
        if (not isinstance(drive, list) or not drive or not all(isinstance(d, str) for d in drive)
                or len(set(drive)) != len(drive)):
            raise ctx.bad(where, "drive", '"all" or a non-empty list of distinct port names', drive)
        drive = tuple(drive)
    layers = (integer(ctx, where, table, "pml_elements", None, 1, MOST_PML_ELEMENTS) if "pml_elements" in table
              else None)
    return PortsSpec(tuple(float(f) for f in frequencies), drive, band, layers)


def ports_of(case) -> tuple[PortTables, PortsSpec | None]:
    return case.tables.get("port") or PortTables(), case.tables.get("ports")


def driven(case) -> tuple:
    """The names of the ports driven, one run each (check_ports first)."""
    ports, spec = ports_of(case)
    if spec.drive == "all":
        return tuple(p.name for p in ports if p.source is not None)
    return tuple(spec.drive)


def check_ports(case) -> None:
    """Checks across [port.*], [ports] and the rest of the case (InputError, one line)."""
    ports, spec = ports_of(case)
    where = case.source
    if not ports and spec is None:
        return
    if not ports:
        raise InputError(f"{where}: [ports] needs at least one [port.<name>] table")
    if spec is None:
        raise InputError(f"{where}: [port.{ports[0].name}] needs a [ports] table with the frequencies "
                         "(frequencies = [...] or fmin, fmax, count)")
    names = [p.name for p in ports]
    surface = next((p for p in ports if p.surface is not None), None)
    if surface is not None:  # the port runs (runner/ports.py) resolve surfaces first (port_surface.py)
        raise InputError(f"{where}: [port.{surface.name}] surface = \"{surface.surface}\" is resolved by the port "
                         "runs (lobatto run, lobatto.run): a single Simulation needs plane, source and direction")
    for name in (() if spec.drive == "all" else spec.drive):
        if name not in names:
            raise InputError(f"{where}: [ports] drive names \"{name}\", which is no port (ports: {', '.join(names)})")
        port = next(p for p in ports if p.name == name)
        if port.source is None:
            raise InputError(f"{where}: [ports] drive names \"{name}\", but [port.{name}] has no source (where its "
                             "mode is launched)")
    if not driven(case):
        raise InputError(f"{where}: no port has a source: give one [port.<name>] a source = \"x = c\" to drive it")
    planes = {}
    for p in ports:
        for what, value in (("plane", p.plane), ("source", p.source)):
            if value is None:
                continue
            text = plane_name(p.axis, value)
            if text in planes:
                raise InputError(f"{where}: [port.{p.name}] {what} \"{text}\" is also {planes[text]}: each port's "
                                 "planes must differ")
            planes[text] = f"[port.{p.name}] {what}"
    if case.physics.values.get("bloch_k") is not None:
        raise InputError(f"{where}: [port] tables cannot go with [physics] bloch_k")
    check_layout(case, ports)


def check_layout(case, ports) -> None:
    """Each port needs a [pml] side behind it (the waves leaving the device through it, and a
    driven source's backward share, must leave the mesh: a reflecting end makes S nonsense),
    and the ports on one axis face each other (the device lies on every port's device side)."""
    where, pml = case.source, case.tables.get("pml")
    sides = set(pml.sides) if pml is not None else set()
    for p in ports:
        behind = f"{AXES[p.axis]}{'min' if p.direction == '+' else 'max'}"
        if behind not in sides:
            raise InputError(f"{where}: [port.{p.name}] direction = \"{p.direction}\" needs a [pml] on side {behind} "
                             f"behind it (the waves leaving the device through the port must leave the mesh): add "
                             f"\"{behind}\" to [pml] sides")
        for q in ports:
            if q is not p and q.axis == p.axis and not (q.plane - p.plane) * (1.0 if p.direction == "+" else -1.0) > 0:
                raise InputError(f"{where}: [port.{q.name}] plane \"{plane_name(q.axis, q.plane)}\" lies behind "
                                 f"[port.{p.name}] (direction = \"{p.direction}\" points into the device, which must "
                                 "lie between the ports on one axis): check the ports' directions")


def pulse(frequencies, cutoffs) -> dict:
    """The modulated Gaussian that drives a port: centred on f0, the middle of the band's part
    above every driven mode's cutoff, with its spectrum exp(-(2 pi (f - f0) width)^2 / 2) at
    EDGE_SHARE of its peak at that part's edges (width = sqrt(2 ln(1/EDGE_SHARE)) / (2 pi
    half-band); one frequency: a half-band of a tenth of it), t0 = DELAY_WIDTHS widths."""
    above = [f for f in frequencies if f > max(cutoffs)]
    low, high = min(above), max(above)
    f0 = 0.5 * (low + high)
    half = 0.5 * (high - low) if high > low else 0.1 * f0
    width = math.sqrt(2.0 * math.log(1.0 / EDGE_SHARE)) / (2.0 * math.pi * half)
    return {"frequency": f0, "width": width, "t0": DELAY_WIDTHS * width}
