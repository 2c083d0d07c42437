"""Ports on named boundary surfaces (``[port.<name>] surface``, Palace's wave ports): the case
rewritten with the explicit planes, source planes, [pml] sides and the mesh's extension that
reproduce them (docs/electromagnetics.md, "Ports on boundary surfaces").

Behind each surface the mesh is extended along the surface's outward normal by P + 2 layers of
elements as deep as those behind the surface (h): the outer P are a [pml] side (``[ports]
pml_elements``, or the case's own [pml] elements/thickness), the next one ends on the source
plane (one h behind the surface) and the innermost one reaches the surface, which is the
reference plane. A box grows longer (lower/upper/elements); a mesh file gets a ``[mesh] extrude``
entry (mesh/extrude.py, applied on the whole mesh before partitioning, so every rank agrees).
The [pml] selects its elements at the mesh's bounding box: a surface must lie at the mesh's
extreme along its axis, on its outward side (refused otherwise).

Every rank resolves the same case from the whole mesh: nothing here is rank-local.
"""

from __future__ import annotations

import math

from lobatto.config.dft import AXES
from lobatto.config.extrude import MOST_EXTRUDED_LAYERS
from lobatto.config.generic_tables import SIDES
from lobatto.errors import InputError
from lobatto.systems.maxwell import planar
from lobatto.systems.maxwell.ports import ports_of

#: the target normal reflection of the [pml] grown behind surface ports without a [pml] table
PORT_REFLECTION = 1e-8
#: [ports] pml_elements' default
PML_ELEMENTS = 4
#: layers between the [pml] and the surface: one ending on the source plane, one on the surface
BUFFER_LAYERS = 2


def _side(axis: int, outward: float) -> str:
    """'zmin' for a surface whose outward normal is -z."""
    return f"{AXES[axis]}{'max' if outward > 0 else 'min'}"


def surfaces_of(case) -> list:
    return [p for p in ports_of(case)[0] if p.surface is not None]


def resolve(case):
    """(the case's data with every surface port made explicit, {port: what was derived}), or
    None when no port names a surface. InputError (one line, naming the file, table and key)."""
    found = surfaces_of(case)
    if not found:
        return None
    where = case.source
    if not case.mesh.from_file and len(case.mesh.elements) == 2:  # a 2-D box: no surface is a port yet
        planar.check_case(case, 2, where)
    if ports_of(case)[1] is None:
        raise InputError(f"{where}: [port.{found[0].name}] needs a [ports] table with the frequencies "
                         "(frequencies = [...] or fmin, fmax, count)")
    integrals = getattr(case.output, "integrals", None)
    for port in found:  # the surface's group moves to the grown layer's outer end, behind the [pml]
        if integrals is not None and port.surface in integrals.surfaces:
            raise InputError(f"{where}: [output.integrals] surfaces names \"{port.surface}\", the surface of "
                             f"[port.{port.name}]: its layers are grown behind it, and the name then means their "
                             "outer end behind the [pml]: give the port plane, source and direction instead")
    if case.mesh.deform:
        raise InputError(f"{where}: [port.{found[0].name}] surface cannot go with [mesh.deform] (the grown layers "
                         "would be deformed too): give plane, source and direction, and a [pml]")
    planes = _box_planes(case, found) if not case.mesh.from_file else _file_planes(case, found)
    pml = case.tables.get("pml")
    spec = ports_of(case)[1]
    if pml is not None and spec is not None and spec.pml_elements is not None:
        raise InputError(f"{where}: [ports] pml_elements is the layer grown behind surface ports without a [pml] "
                         "table; this case has a [pml] table, whose elements or thickness the layer follows: remove "
                         "one of them")
    sides = {}
    for port, (axis, coordinate, outward, h) in zip(found, planes):
        side = _side(axis, outward)
        if side in sides:
            raise InputError(f"{where}: [port.{port.name}] surface = \"{port.surface}\" lies on side {side}, as "
                             f"[port.{sides[side]}]'s surface: one surface port per side of the mesh")
        if pml is not None and side in pml.sides:
            raise InputError(f"{where}: [pml] sides includes \"{side}\", where [port.{port.name}] surface = "
                             f"\"{port.surface}\" grows its own layer: remove \"{side}\" from [pml] sides")
        sides[side] = port.name
    layers = _pml_layers(case, pml, spec, planes, found)
    if layers + BUFFER_LAYERS > MOST_EXTRUDED_LAYERS:  # else [mesh] extrude, which the case never wrote, is refused
        given = f"elements = {pml.elements}" if pml.elements is not None else f"thickness = {pml.thickness:g}"
        raise InputError(f"{where}: [pml] {given} makes {layers} PML layers of the elements behind [port."
                         f"{found[0].name}] surface = \"{found[0].surface}\" ({planes[0][3]:.6g} deep); surface ports "
                         f"grow at most {MOST_EXTRUDED_LAYERS - BUFFER_LAYERS}: give fewer [pml] elements or a "
                         "thinner layer")
    data = case.to_dict()
    derived = {}
    for port, (axis, coordinate, outward, h) in zip(found, planes):
        source = coordinate + outward * h
        entry = {"plane": f"{AXES[axis]} = {coordinate!r}", "source": f"{AXES[axis]} = {source!r}",
                 "direction": "-" if outward > 0 else "+", "shape": port.shape, "mode": port.mode}
        data["port"][port.name] = entry
        side = _side(axis, outward)
        derived[port.name] = {"surface": port.surface, "plane": entry["plane"], "source": entry["source"],
                              "direction": entry["direction"], "pml_side": side, "element_depth": h,
                              "layers": layers + BUFFER_LAYERS, "pml_layers": layers,
                              "extension": (layers + BUFFER_LAYERS) * h}
        _extend_mesh(case, data["mesh"], port, axis, outward, h, layers + BUFFER_LAYERS)
    data["ports"].pop("pml_elements", None)
    if pml is None:
        data["pml"] = {"sides": list(sides), "elements": layers, "reflection": PORT_REFLECTION}
    else:
        data["pml"]["sides"] = list(pml.sides) + list(sides)
    return data, derived


def _box_planes(case, found) -> list:
    """(axis, coordinate, outward sign, element depth) of each surface port on a box: a side."""
    m = case.mesh
    out = []
    for port in found:
        if port.surface not in SIDES:
            raise InputError(f"{case.source}: [port.{port.name}] surface = \"{port.surface}\" is no surface of the box "
                             f"(its surfaces: {', '.join(SIDES)})")
        axis, upper = SIDES.index(port.surface) // 2, port.surface.endswith("max")
        if m.periodic[axis]:
            raise InputError(f"{case.source}: [port.{port.name}] surface = \"{port.surface}\": the {AXES[axis]} axis "
                             "is periodic ([mesh] periodic), so the side is no boundary")
        h = (m.upper[axis] - m.lower[axis]) / m.elements[axis]
        out.append((axis, float(m.upper[axis] if upper else m.lower[axis]), 1.0 if upper else -1.0, h))
    return out


def _file_planes(case, found) -> list:
    """The same for a mesh file: each named surface checked on the whole mesh (mesh/extrude.py)."""
    from lobatto.mesh.extrude import apply_extrusions, surface_plane
    from lobatto.mesh.readers import mesh_from_file

    m = case.mesh
    whole = mesh_from_file(m.generator, m.file, case.discretization.order, m.boundaries, m.boundary)
    whole = apply_extrusions(whole, m.extrude, f"{case.source}: [mesh] extrude") if m.extrude else whole
    out = []
    for port in found:
        plane = surface_plane(whole, port.surface, f"{case.source}: [port.{port.name}] surface")
        if not plane.at_extreme(whole):
            raise InputError(f"{case.source}: [port.{port.name}] surface = \"{port.surface}\" at {AXES[plane.axis]} = "
                             f"{plane.coordinate:.6g} is not the mesh's {plane.side} end (the [pml] grown behind it "
                             "lines the mesh's bounding box): give plane, source and direction, and a mesh with its "
                             "own layer")
        out.append((plane.axis, plane.coordinate, plane.outward, plane.depth))
    return out


def _pml_layers(case, pml, spec, planes, found) -> int:
    """P: [ports] pml_elements (default PML_ELEMENTS), or the case's [pml] elements, or its
    thickness in elements behind every surface (refused where it is not a whole number)."""
    if pml is None:
        return spec.pml_elements if spec is not None and spec.pml_elements is not None else PML_ELEMENTS
    if pml.elements is not None:
        return int(pml.elements)
    counts = {round(pml.thickness / h) for _, _, _, h in planes}
    for port, (_, _, _, h) in zip(found, planes):
        n = pml.thickness / h
        if len(counts) > 1 or round(n) < 1 or not math.isclose(n, round(n), rel_tol=1e-9):
            raise InputError(f"{case.source}: [pml] thickness = {pml.thickness:g} is not a whole number of the "
                             f"elements ({h:.6g} deep) behind [port.{port.name}] surface = \"{port.surface}\": give "
                             "[pml] elements instead")
    return int(counts.pop())


def _extend_mesh(case, mesh: dict, port, axis: int, outward: float, h: float, layers: int) -> None:
    """The case's [mesh] data grown by ``layers`` of depth h behind the port's surface."""
    if not case.mesh.from_file:
        mesh["elements"][axis] += layers
        key = "upper" if outward > 0 else "lower"
        mesh[key][axis] = mesh[key][axis] + outward * layers * h
        return
    mesh.setdefault("extrude", []).append({"surface": port.surface, "layers": layers, "thickness": h})
