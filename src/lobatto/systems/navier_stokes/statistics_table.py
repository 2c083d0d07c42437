"""``[output.statistics]``: the keys of the running time averages (docs/navier-stokes.md,
"Statistics"; run time: statistics.py) and the quantities they average.

The table is read from its declaration (config/declared.py) through ``parse_statistics``,
which adds the one check across values the declaration cannot make: ``average`` names
distinct directions among x, y, z. Whether the mesh allows that averaging (a box, periodic
along those directions) and whether ``fields`` are the case's fields is checked once the run
is set up (statistics.py), as only then are the mesh and the scalars known.
"""

from __future__ import annotations

from typing import Any, Mapping

from lobatto.config.declared import DeclaredValues
from lobatto.config.physics import Key
from lobatto.config.ranges import LARGEST, STEPS, Range
from lobatto.config.toolkit import Context, Table, key_value, read_table

WHERE = "output.statistics"
DIRECTIONS = ("x", "y", "z")
VELOCITY = ("ux", "uy", "uz")
PRESSURE = "p"

STATISTICS = Table(WHERE, (
    Key("start", "nonnegative", 0.0, "time from which samples are averaged",
        range=Range(0.0, LARGEST, "a time of the run; products with the step sizes must stay finite")),
    Key("every", "positive_integer", 1, "steps between samples (steps that are multiples of it)",
        range=Range(1, STEPS.high, "a number of steps, and a run takes at most 1e9")),
    Key("average", "names", [], "homogeneous directions to average over as well (a box mesh, periodic along "
        "them): [] the 3-D field, [\"x\", \"z\"] profiles along y, [\"x\"] planes y-z"),
    Key("fields", "names", None, "the fields averaged, with their products (default: every field of the state)"),
))


def parse_statistics(ctx: Context, output: Mapping[str, Any]) -> DeclaredValues | None:
    """The checked ``[output.statistics]`` table, or None when the case has none."""
    given = read_table(ctx, output, "output", "statistics")
    if given is None:
        return None
    values = {key.name: key_value(ctx, WHERE, given, key) for key in STATISTICS.keys
              if key.default is not None or key.name in given}
    values["fields"] = list(values["fields"]) if "fields" in values else None
    average = values["average"] or ()
    if any(a not in DIRECTIONS for a in average):
        raise ctx.bad(WHERE, "average", "a list of distinct directions among \"x\", \"y\", \"z\"", given["average"])
    values["average"] = [a for a in DIRECTIONS if a in average]  # in x, y, z order
    return DeclaredValues(STATISTICS, values)


STATISTICS = STATISTICS.read_by(parse_statistics)


def quantities(field_names, chosen) -> list[tuple[str, tuple]]:
    """(name, field indices) of what is averaged, for the ``chosen`` fields (state order):
    each field; the velocity products u_i u_j (i <= j) ``ux_uy``; ``p_p``; for each scalar T,
    ``ux_T``, ``uy_T``, ``uz_T`` and ``T_T``. A product is formed of chosen fields only."""
    index = {name: i for i, name in enumerate(field_names)}
    chosen = [name for name in field_names if name in chosen]
    velocity = [name for name in VELOCITY if name in chosen]
    out = [(name, (index[name],)) for name in chosen]
    for i, a in enumerate(velocity):
        out += [(f"{a}_{b}", (index[a], index[b])) for b in velocity[i:]]
    if PRESSURE in chosen:
        out.append((f"{PRESSURE}_{PRESSURE}", (index[PRESSURE],) * 2))
    for scalar in (name for name in chosen if name not in VELOCITY and name != PRESSURE):
        out += [(f"{a}_{scalar}", (index[a], index[scalar])) for a in velocity]
        out.append((f"{scalar}_{scalar}", (index[scalar],) * 2))
    return out
