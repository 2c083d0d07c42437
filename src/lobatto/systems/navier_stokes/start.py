"""What a Navier–Stokes run checks and measures before it steps: the case against the mesh
(boundary tables) and the backend's precision (coefficients, filter modes), and the largest
initial speed, which sizes the first time step.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.config.ranges import check_precision
from lobatto.errors import InputError
from lobatto.systems.navier_stokes.spec import SPEC


def initial_speed(case, geometry) -> float:
    """The largest |u| of the [initial] (or else [exact] at t = 0) velocity on this rank."""
    fields = case.initial.fields or {}
    source = fields if any(name in fields for name in ("ux", "uy", "uz")) else (case.exact.fields or {})
    x, y, z = geometry.coords
    square = np.zeros_like(x)
    with np.errstate(all="ignore"):  # values too large to square: the driver names them (check_given_fields)
        for name in ("ux", "uy", "uz"):
            e = source.get(name)
            if e is not None:
                square += np.asarray(e.evaluate(np, x=x, y=y, z=z, t=0.0)) ** 2
        speed = float(np.sqrt(square.max())) if square.size else 0.0
    return speed if math.isfinite(speed) else 0.0


def check_start(case, physics, geometry, backend) -> None:
    """What the case asks of the mesh and the precision, before any work: filter_modes below
    the order; the coefficients within what the backend's precision multiplies (float32)."""
    for key in SPEC.keys:
        if key.kind in ("positive", "nonnegative"):
            check_precision(physics[key.name], backend.dtype, f"[physics] {key.name}")
    for name in physics["scalars"]:
        check_precision(case.tables[f"scalar.{name}"]["diffusivity"], backend.dtype, f"[scalar.{name}] diffusivity")
    order = geometry.order
    modes = int(physics["filter_modes"])
    if modes and not modes <= order - 1:
        raise InputError(f"[physics] filter_modes = {modes} must be at most [discretization] order - 1 = {order - 1} "
                         "(the mean and at least one mode stay unfiltered)")


def check_tables(case, mesh, tables: dict) -> None:
    """[boundary.<name>] names must be surfaces of the mesh, and not outflow boundaries (a
    table makes a wall a velocity boundary)."""
    from lobatto.config.system_tables import check_boundary_name

    explicit = (case.raw or {}).get("mesh", {}).get("boundaries", {}) or {}
    for name in tables:
        if case.mesh.from_file:
            check_boundary_name(name, mesh.group_names, f"[boundary.{name}]", f"named surfaces of {case.mesh.file}")
        if explicit.get(name) == "outflow" and any(c in tables[name] for c in ("ux", "uy", "uz")):
            raise InputError(f"[boundary.{name}] gives velocity data, but [mesh.boundaries] {name} = "
                             f"\"{explicit[name]}\": make it \"velocity\" or remove the table")


def _nonzero(expression) -> bool:
    """Whether an expression may be nonzero (a constant 0 is what 2-D means)."""
    if expression is None:
        return False
    try:
        return float(expression.text) != 0.0
    except ValueError:
        return True


def check_planar(case, dim: int) -> None:
    """InputError for a key with a z part a 2-D run (fields ux, uy, p) cannot take: boundary
    uz or tz, force_z, flow_direction = "z", statistics averaged along z. Nothing in 3-D."""
    if dim != 2:
        return
    where = f"{case.source}: the mesh is 2-D (velocity ux, uy)"
    for name, table in case.tables.get("boundary", {}).items():
        for key in ("uz", "tz"):
            if _nonzero(table.get(key)):
                raise InputError(f"{where}: [boundary.{name}] {key} = \"{table[key].text}\" has no meaning: remove it")
    physics = case.physics
    if _nonzero(getattr(physics, "force_z", None)):
        raise InputError(f"{where}: [physics] force_z = \"{physics.force_z.text}\" has no meaning: remove it")
    if float(getattr(physics, "flow_rate", 0.0) or 0.0) > 0 and getattr(physics, "flow_direction", "x") == "z":
        raise InputError(f"{where}: [physics] flow_direction = \"z\": drive the flow along x or y")
    output = case.output
    if "lambda2" in output.derived or any("lambda2" in names for names in output.format_derived.values()):
        raise InputError(f"{where}: [output] derived: 'lambda2' has no 2-D meaning (a planar flow's S^2 + Omega^2 "
                         "has a zero eigenvalue along z): use 'q_criterion' or 'vorticity' (omega_z) instead")
    statistics = output.monitors.get("statistics")
    if statistics is not None and "z" in (statistics.average or ()):
        shown = "[" + ", ".join(f'"{a}"' for a in statistics.average) + "]"  # as the case file spells it
        raise InputError(f"{where}: [output.statistics] average = {shown}: a 2-D field has no z "
                         "direction to average along; average along x or y")
