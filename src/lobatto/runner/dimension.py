"""What a run on a 2-D mesh may ask for, checked once the mesh's dimension is known.

A box's dimension is known from ``[mesh] elements``; a mesh file's only once it is read, so
the case-file schema accepts the 3-D names ([initial] uz, [mesh.deform] z) and
``check_dimension`` refuses, before the memory check and the system, what a 2-D mesh cannot
take: a system without 2 in ``PhysicsSpec.dimensions``, expressions of fields that do not
exist in 2-D (``PhysicsSpec.fields_2d``), a z deformation, the outputs not built in 2-D yet and
the registered monitors whose class does not list 2 in ``Monitor.dimensions``. Each refusal is an InputError naming the case file and the key (exit 2).
"""

from __future__ import annotations

from lobatto.errors import InputError
from lobatto.monitors import MONITORS

#: the [output] formats that write a 2-D state (their writers are dimension-aware: Lagrange
#: quadrilaterals, Nek5000 headers with nz = 1, HDF5 with a dimension attribute)
OUTPUT_FORMATS_2D: tuple = ("hdf5", "nek", "vtk")


def mesh_dimension(case, whole=None) -> int:
    """2 or 3: the file mesh's (``whole``, read) or the box's (its elements' entries)."""
    return whole.dim if whole is not None else len(case.mesh.elements)


def describe_2d(case, whole=None) -> str:
    """How the case's mesh says it is 2-D, for the messages."""
    if whole is not None:
        return f"[mesh] file {case.mesh.file} holds quadrilaterals"
    return f"[mesh] elements = {list(case.mesh.elements)}"


def check_dimension(case, spec, dim: int, whole=None) -> None:
    """InputError (the message starts with the case file) for what a ``dim``-D run of ``case``
    with the system ``spec`` cannot do; nothing for a 3-D mesh of a 3-D system."""
    source = case.source
    probes = case.output.probes
    if dim == 3 and probes is not None:
        for p, point in enumerate(probes.points):
            if len(point) != 3:
                raise InputError(f"{source}: [output.probes] points[{p}] = {list(point)}: the mesh is 3-D: give "
                                 "[x, y, z]")
    if dim not in spec.dimensions:
        kind = "2-D" if dim == 2 else "3-D"
        if dim == 2 and whole is None:
            elements = list(case.mesh.elements) + [1]
            instead = (f"elements = {elements} with periodic z, one layer of the same plane "
                       "(docs/case-file.md, \"2-D\")")
        else:
            instead = "a 3-D mesh (a 2-D one extruded one layer deep with periodic z: mesh.extrude.extrude_quads)"
        raise InputError(f"{source}: {describe_2d(case, whole) if dim == 2 else 'the mesh'} is a {kind} mesh, and "
                         f"[physics] equations = \"{spec.name}\" does not run in {kind} yet (it runs in "
                         f"{' and '.join(f'{d}-D' for d in spec.dimensions)}): use {instead}")
    if dim != 2:
        return
    mesh = case.mesh
    if "z" in mesh.deform:
        raise InputError(f"{source}: [mesh.deform] z: the mesh is 2-D ({describe_2d(case, whole)}): its points stay "
                         "at z = 0; remove it")
    fields_2d = spec.fields_in(2)
    for section, fields in (("initial", case.initial), ("exact", case.exact)):
        for name in fields.given:
            # a zero is what 2-D means (the effective configuration of a 2-D run lists uz = "0")
            if name not in fields_2d and not _is_zero(fields.fields[name]):
                raise InputError(f"{source}: [{section}] {name}: {spec.name} on a 2-D mesh has the fields "
                                 f"{', '.join(fields_2d)} only ({name} does not exist in 2-D): remove it")
    output = case.output
    for fmt in output.formats:
        if fmt not in OUTPUT_FORMATS_2D:
            ready = ", ".join(f'"{f}"' for f in OUTPUT_FORMATS_2D) or "none yet"
            raise InputError(f"{source}: [output] formats: \"{fmt}\" does not write a 2-D mesh's fields yet (2-D "
                             f"formats: {ready}); set formats = [] (the run still prints its summary and errors)")
    if probes is not None and probes.fields_given:
        for name in probes.fields:
            if name not in fields_2d:
                raise InputError(f"{source}: [output.probes] fields: {name} does not exist in 2-D ({spec.name} on "
                                 f"a 2-D mesh has {', '.join(fields_2d)}): remove it")
    for axis, value in output.dft.planes if output.dft is not None else ():
        if axis == 2:  # (a 2-D plane is a line of edges: monitors/planes.py)
            raise InputError(f"{source}: [output.dft] planes: \"z = {value:g}\": the mesh is 2-D "
                             f"({describe_2d(case, whole)}), the plane z = 0: give lines \"x = c\" or \"y = c\"")
    for table in output.monitors:  # a registered monitor says whether it works in 2-D
        if 2 not in getattr(MONITORS.get(table), "dimensions", ()):
            raise InputError(f"{source}: [output.{table}] is not built on a 2-D mesh yet: remove it")
    # [output] derived: the system's own check (Navier-Stokes refuses lambda2 in 2-D)


def _is_zero(expression) -> bool:
    try:
        return float(expression.text) == 0.0
    except ValueError:
        return False
