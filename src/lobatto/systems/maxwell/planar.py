"""What a Maxwell case on a 2-D mesh (quads: z-invariant fields, TE and TM at once, per unit
depth) does not have yet: each is refused when the system is built, with an InputError naming
the key (issue 34; docs/electromagnetics.md, "2-D"). Built in 2-D: PEC/PMC/absorbing/periodic
sides, both fluxes, the split and chain volume forms, per-point and diagonal eps, mu,
conductivity (sampled or sub-cell averaged), dispersive poles, currents ([source] type = "current", per unit depth),
line sources (a dipole's type: along z through its position, per unit depth), plane
waves (TF/SF) travelling in the xy plane, Bloch wraps along x or y and a [pml] on x and y
sides. The far field (a closed contour, far_field.py) and the DFT lines are the monitors' own."""

from __future__ import annotations

from lobatto.config.ranges import unit_vector
from lobatto.errors import InputError

#: [source.<name>] types not built on a 2-D mesh, and why (none left: a dipole is a line
#: source along z there, sources.py)
SOURCE_TYPES: dict = {}
TAIL = (" on a 2-D mesh yet (2-D Maxwell takes currents, line sources, plane waves in the xy plane, materials, poles and a "
        "[pml] on x and y sides)")


def check_case(case, dim: int, where: str = "case") -> None:
    """InputError for the first key of ``case`` a 2-D mesh cannot run; in 3-D, for a source's
    point or box given as [x, y] (the 2-D form)."""
    if dim != 2:
        for spec in case.tables.get("source", ()):
            for key in ("position", "lower", "upper"):
                if len(spec.values.get(key, ())) == 2:
                    raise InputError(f"{where}: [source.{spec.name}] {key} = {list(spec.values[key])}: the mesh is "
                                     "3-D: give [x, y, z]")
        return
    for spec in case.tables.get("source", ()):
        if spec.type in SOURCE_TYPES:
            raise InputError(f"{where}: [source.{spec.name}] type = \"{spec.type}\" is not supported{TAIL}: "
                             f"{SOURCE_TYPES[spec.type]}")
        if spec.type == "plane_wave" and abs(unit_vector(spec.values["direction"])[2]) > 1e-12:
            raise InputError(f"{where}: [source.{spec.name}] direction = {list(spec.values['direction'])}: on a 2-D "
                             "mesh the fields do not vary along z, so a plane wave travels in the xy plane: give "
                             "direction = [kx, ky, 0]")
    if case.tables.get("port") or case.tables.get("ports") is not None:
        raise InputError(f"{where}: [port.<name>] and [ports] (waveguide ports) are not supported{TAIL}")
    check_system(dim, case.discretization.volume_form, where)


def check_system(dim: int, volume_form: str, where: str = "case") -> None:
    """The system's own options on a 2-D mesh: the Galerkin volume form. (Bloch wraps work in
    2-D; a bloch_k along z is refused by bloch.py: a 2-D mesh does not wrap along z.)"""
    if dim != 2:
        return
    if volume_form == "galerkin":
        raise InputError(f"{where}: [discretization] volume_form = \"galerkin\" is not supported{TAIL}; "
                         "use \"split\" or \"chain\"")
