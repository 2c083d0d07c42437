"""``[output.dft]``: running Fourier transforms of the fields at chosen frequencies on named
surfaces and regions, and the flux of the system's surface integrands per frequency
(docs/electromagnetics.md, "Frequency-domain monitors"). Names of surfaces and regions are
checked against the mesh when the run is set up (probes.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lobatto.config.physics import Key, PhysicsSpec
from lobatto.config.ranges import LARGE, Range, check_number
from lobatto.config.toolkit import Context, Table, name_list, read_table


@dataclass(frozen=True)
class DftSection:
    frequencies: tuple  # cycles per unit time (omega = 2 pi f)
    fields: tuple  # fields transformed, in the system's order
    surfaces: tuple  # named boundary surfaces
    regions: tuple  # region names ("all": the whole mesh)
    flux: tuple  # surface integrands given per frequency on every surface

    def to_dict(self) -> dict:
        return {"frequencies": list(self.frequencies), "fields": list(self.fields), "surfaces": list(self.surfaces),
                "regions": list(self.regions), "flux": list(self.flux)}


#: a transform's frequency (cycles per unit time): the phase 2 pi f t is computed at every step
FREQUENCY = Range(0.0, LARGE, reason="cycles per unit time; the phase 2 pi f t must stay finite")

#: the keys of [output.dft] (docs/electromagnetics.md, "Frequency-domain monitors")
DFT = Table("output.dft", (
    Key("frequencies", "list", None, "the frequencies transformed, cycles per unit time", required=True,
        range=FREQUENCY),
    Key("fields", "list", None, "the fields transformed (default: all the system's)"),
    Key("surfaces", "list", [], "named boundary surfaces"),
    Key("regions", "list", [], "region names (all: the whole mesh)"),
    Key("flux", "list", None, "surface integrands given per frequency (default: all the system's)"),
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
    if not surfaces and not regions:
        raise ctx.error(f"[{where}] has nowhere to transform: give surfaces (named boundary surfaces) or regions")
    return DftSection(frequencies=tuple(float(f) for f in frequencies),
                      fields=tuple(f for f in spec.fields if f in fields), surfaces=tuple(surfaces),
                      regions=tuple(regions), flux=tuple(flux))
