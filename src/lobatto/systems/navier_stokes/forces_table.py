"""``[output.forces.<name>]``: the force and moment the fluid exerts on named surfaces
(docs/navier-stokes.md, "Forces and moments"; run time: forces.py).

One table per named group of surfaces, under ``[output.forces]``; the monitor registry knows
one table per section, so FORCES declares the keys of one group (``output.forces``, for the
known keys and the docs) and parse_forces reads every ``[output.forces.<name>]`` with them.
The surface names are checked against the mesh when the run is set up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from lobatto.config.physics import Key
from lobatto.config.ranges import COORDINATES, LARGE, SMALL, Range, check_vector
from lobatto.config.toolkit import Context, Table, key_value, name_list, show

#: reference values: the coefficient divides by rho U^2 A / 2, a product that must stay a
#: normal float64 (and the force times it finite), so each factor stays within 1e-30 .. 1e30
REFERENCE = Range(SMALL, LARGE, reason="the coefficients divide by density * reference_velocity^2 * "
                  "reference_area / 2, which must stay a normal float64 number")
#: steps between samples
EVERY = Range(1, 10**9, "a number of steps, and a run takes at most 1e9")

#: the keys of one [output.forces.<name>] (docs/case-file.md, docs/navier-stokes.md)
FORCES = Table("output.forces", (
    Key("surfaces", "list", None, "the mesh's named surfaces (face groups) whose force is summed", required=True),
    Key("center", "vector", (0.0, 0.0, 0.0), "the point the moment is taken about ([cx, cy] on a 2-D mesh)",
        range=COORDINATES),
    Key("reference_area", "positive", None, "A of the coefficients F / (rho U^2 A / 2)", range=REFERENCE),
    Key("reference_velocity", "positive", None, "U of the coefficients", range=REFERENCE),
    Key("density", "positive", 1.0, "rho: the force is rho times the kinematic one (p and nu are per unit "
        "density)", range=REFERENCE),
    Key("every", "positive_integer", 1, "steps between samples (and the run's last step)", range=EVERY),
))
KEYS = FORCES.key_names
#: a group's name: part of the CSV columns (Fx@name) and of the HDF5 paths
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ForceGroup:
    """One [output.forces.<name>]: surfaces, moment centre, reference values, sampling."""

    name: str
    surfaces: tuple
    center: tuple
    reference_area: float | None
    reference_velocity: float | None
    density: float
    every: int

    @property
    def coefficients(self) -> bool:
        return self.reference_area is not None

    def to_dict(self) -> dict:
        out = {"surfaces": list(self.surfaces), "center": list(self.center), "density": self.density,
               "every": self.every}
        if self.coefficients:
            out.update(reference_area=self.reference_area, reference_velocity=self.reference_velocity)
        return out


@dataclass(frozen=True)
class ForcesSection:
    """The case's [output.forces.<name>] tables, in the file's order."""

    groups: tuple

    def to_dict(self) -> dict:
        return {group.name: group.to_dict() for group in self.groups}


def _group(ctx: Context, name: str, table: Mapping[str, Any]) -> ForceGroup:
    where = f"output.forces.{name}"
    FORCES.check(ctx, table, where)
    if "surfaces" not in table:
        raise ctx.error(f"[{where}] surfaces is required: the named surfaces of the mesh (face groups) whose "
                        "force is summed, e.g. surfaces = [\"cylinder\"]")
    surfaces = name_list(ctx, where, table, "surfaces", None, "surface", [])
    if not surfaces:
        raise ctx.bad(where, "surfaces", "a non-empty list of the mesh's named surfaces", table["surfaces"])
    # [cx, cy]: a 2-D mesh's centre (the moment about the z axis through it); refused in 3-D at set-up
    given = table.get("center", (0.0,) * 3)
    length = 2 if isinstance(given, list) and len(given) == 2 else 3
    center = check_vector(ctx, where, "center", given, COORDINATES, length)
    values = {key: key_value(ctx, where, table, FORCES[key])
              for key in ("reference_area", "reference_velocity", "density", "every")}
    if (values["reference_area"] is None) != (values["reference_velocity"] is None):
        given, missing = (("reference_area", "reference_velocity") if values["reference_area"] is not None
                          else ("reference_velocity", "reference_area"))
        raise ctx.error(f"[{where}] {given} needs {missing} too: the coefficients are F / (density * "
                        "reference_velocity^2 * reference_area / 2); give both, or neither for forces only")
    return ForceGroup(name, tuple(surfaces), tuple(center), values["reference_area"], values["reference_velocity"],
                      float(values["density"]), int(values["every"]))


def parse_forces(ctx: Context, output: Mapping[str, Any]) -> ForcesSection | None:
    forces = output.get("forces")
    if forces is None:
        return None
    if not isinstance(forces, Mapping):
        raise ctx.error(f"[output.forces] must be a table of named tables ([output.forces.<name>]), got {show(forces)}")
    groups = []
    for name, table in forces.items():
        if not isinstance(table, Mapping):
            hint = (f"; put it in a named group: [output.forces.body] {name} = ..." if name in KEYS else "")
            raise ctx.error(f"[output.forces] {name}: each entry is a named table [output.forces.<name>] (keys: "
                            f"{', '.join(KEYS)}), got {show(table)}{hint}")
        if not NAME.match(name):
            raise ctx.error(f"[output.forces.{name}]: a group's name is letters, digits and _, starting with a "
                            "letter (it names the CSV columns, Fx@<name>)")
        groups.append(_group(ctx, name, table))
    if not groups:
        raise ctx.error("[output.forces] has no [output.forces.<name>] table (e.g. [output.forces.body] surfaces = "
                        "[\"cylinder\"])")
    return ForcesSection(tuple(groups))


FORCES = FORCES.read_by(parse_forces)
