"""Readers of the generic sections of a case file: [mesh], [discretization], [initial] and
[exact], [time], [output] (with its monitor tables), [checkpoint], [backend], [parallel].

Each reads one table through the toolkit (config/toolkit.py) against its declared keys
(config/generic_tables.py) and returns its section (config/case.py); ``parse_case``
(config/schema.py) calls them in the order that decides which error a case shows first.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
from pathlib import Path
from typing import Any, Mapping

from lobatto.config.case import (BackendSection, CheckpointSection, DiscretizationSection, FieldsSection, MeshSection,
                                 OutputSection, ParallelSection, TimeSection)
from lobatto.config.declared import read_monitor_tables
from lobatto.config.derived import read_derived
from lobatto.config.dft import parse_dft
from lobatto.config.expressions import CONSTANTS, FUNCTIONS, compile_expression
from lobatto.config.extrude import read_extrude
from lobatto.config.generic_tables import (AXES, BACKEND, CHECKPOINT, DEFAULT_CFL, DISCRETIZATION,
                                           INTEGRATORS, MAX_ELEMENTS, MAX_ORDER, MESH, MESH_GENERATORS,
                                           MULTISTEP_INTEGRATORS, OUTPUT, OUTPUT_FORMATS, PARALLEL, SIDES, TIME,
                                           default_max_cfl)
from lobatto.config.physics import PhysicsSpec
from lobatto.config.probes import parse_integrals, parse_probes
from lobatto.config.toolkit import (REQUIRED, Context, bool_or_auto, boolean, choice, get_value, integer, is_number,
                                    key_value, positive, read_table, refuse_repeats, show, vector)
from lobatto.errors import InputError

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
#: the variables of [initial] and [exact]
FIELD_VARIABLES = ("x", "y", "z", "t")


def read_expressions(ctx: Context, section: str, table: Mapping | None, names: tuple, variables: tuple) -> dict:
    """The expressions of ``table`` named in ``names`` (in that order), compiled in ``variables``."""
    out = {}
    if not table:
        return out
    for name in names:
        if name not in table:
            continue
        text = table[name]
        if not isinstance(text, str):
            if is_number(text):
                text = repr(float(text)) if isinstance(text, float) else str(text)
            else:
                raise ctx.bad(
                    section, name, "an expression string (for example \"sin(pi*x)\")", text
                )
        out[name] = compile_expression(text, variables, where=f"{ctx.source}: [{section}] {name}")
    return out


def check_output_name_length(ctx: Context, out_name: str, given: bool) -> None:
    """Every file name made from [output] name (the longest: an HDF5 part's temporary,
    ``<name>_<step>.r<rank>.h5.tmp-<pid>``) must fit in the file system's NAME_MAX bytes."""
    from lobatto.io.output_dir import MAX_OUTPUT_NAME_LENGTH, NAME_MAX, longest_output_file_name

    length = len(out_name.encode("utf-8"))
    if length <= MAX_OUTPUT_NAME_LENGTH:
        return
    where = "" if given else " (it defaults to the case file's name; set a shorter one)"
    pattern = longest_output_file_name("<name>")
    raise ctx.error(
        f"[output] name is {length} characters long, at most {MAX_OUTPUT_NAME_LENGTH} allowed{where}: "
        f"file names made from it, up to '{pattern}', must fit in the {NAME_MAX}-byte "
        f"limit of file names (got {show(out_name)})"
    )


def read_compression(ctx: Context, section: str, table: Mapping[str, Any]) -> str:
    """[output] or [checkpoint] compression; lz4 and zstd need hdf5plugin, checked now."""
    from lobatto.io.compression import check_available

    key = OUTPUT["compression"]
    value = choice(ctx, section, table, "compression", key.choices, key.default)
    check_available(value, f"{ctx.source}: [{section}] compression")
    return value


def sanitize_name(stem: str) -> str:
    """A file-name stem for [output] name made of the case file's stem."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", stem)
    name = name.lstrip("._-+") or "case"
    return name


def physics_values(ctx: Context, spec: PhysicsSpec, table: Mapping[str, Any]) -> dict:
    """The system's own [physics] keys, checked by kind, defaults filled in; an expression key
    with ``variables_from`` read after the other keys, its names then being known."""
    values = {key.name: _physics_value(ctx, table, key) for key in spec.keys if key.variables_from is None}
    for key in spec.keys:
        if key.variables_from is not None:
            names = tuple(values[key.variables_from])
            taken = [n for n in names if n in ("x", "y", "z", "t") or n in CONSTANTS or n in FUNCTIONS]
            if taken:
                raise ctx.error(f"[physics] {key.variables_from}: '{taken[0]}' is a name of the expressions (as "
                                f"[physics] {key.name}: x, y, z, t, {', '.join(CONSTANTS)} and the functions); "
                                "call it something else")
            values[key.name] = key_value(ctx, "physics", table, key, names)
    return {key.name: values[key.name] for key in spec.keys}


def _physics_value(ctx: Context, table: Mapping[str, Any], key):
    """key_value; a list given for a number ends its message with the key's hint."""
    try:
        return key_value(ctx, "physics", table, key)
    except InputError as error:
        if not (key.hint and isinstance(table, Mapping) and isinstance(table.get(key.name), list)):
            raise
        raise InputError(f"{error}; {key.hint}") from None


def read_integrator(ctx: Context, spec: PhysicsSpec, time: Mapping[str, Any]) -> str:
    """[time] integrator: one of the system's integrators (PhysicsSpec.integrators)."""
    value = time.get("integrator", spec.default_integrator) if isinstance(time, Mapping) else None
    if isinstance(value, str) and value in INTEGRATORS and value not in spec.integrators:
        allowed = ", ".join(f'"{name}"' for name in spec.integrators)
        raise ctx.error(f'[time] integrator "{value}" is not available for {spec.name}: it takes {allowed}')
    return choice(ctx, "time", time, "integrator", spec.integrators, spec.default_integrator)


def read_substeps(ctx: Context, spec: PhysicsSpec, time: Mapping[str, Any]) -> int:
    """[time] substeps: 0, or sub-steps of a system that sub-steps its advection term."""
    substeps = integer(ctx, "time", time, "substeps", TIME["substeps"].default, 0)
    if substeps and not spec.substeps:
        raise ctx.error(f"[time] substeps = {substeps}: {spec.name} has no sub-stepped advection term (only "
                        "navier_stokes sub-steps its advection along the characteristics); remove substeps")
    return substeps


def variable_dt(ctx: Context, time: Mapping[str, Any], integrator: str, substeps: int = 0,
                sub_stepping: bool = False) -> dict:
    """[time] target_cfl (variable dt: not with dt or cfl), initial_dt (only with target_cfl)
    and max_cfl (default ``default_max_cfl(substeps)`` for the multistep schemes, else unchecked)."""
    target = positive(ctx, "time", time, "target_cfl", None)
    initial = positive(ctx, "time", time, "initial_dt", None)
    default_max = default_max_cfl(substeps) if integrator in MULTISTEP_INTEGRATORS else None
    max_cfl = positive(ctx, "time", time, "max_cfl", default_max)
    if target is not None:
        for fixed in ("dt", "cfl"):
            if fixed in time:
                raise ctx.error(f"[time] {fixed} and target_cfl are both set: target_cfl varies dt (the first step "
                                f"from initial_dt, or from the initial state), {fixed} fixes it; remove one")
        if max_cfl is not None and target > max_cfl:
            # the default is 2 (1 + 2 substeps): name the sub-steps that would admit this target
            needed = max(substeps + 1, math.ceil((target / 2 - 1) / 2))
            more = (f"; the default max_cfl is 2 (1 + 2 substeps) = {show(max_cfl)} with substeps = {substeps}: "
                    f"substeps = {needed} admits target_cfl {show(target)} (max_cfl {show(default_max_cfl(needed))})"
                    if sub_stepping and "max_cfl" not in time else "")
            raise ctx.error(f"[time] target_cfl = {show(target)} is above max_cfl = {show(max_cfl)}, where a step "
                            f"stops the run: lower target_cfl (or raise max_cfl){more}")
    elif initial is not None:
        raise ctx.error("[time] initial_dt is the first step of a variable-dt run and needs target_cfl; for a fixed "
                        "step use dt")
    return {"target_cfl": target, "initial_dt": initial, "max_cfl": max_cfl}


def file_mesh(ctx: Context, spec: PhysicsSpec, mesh: dict, gen: str) -> MeshSection:
    """[mesh] of a mesh file: file (relative to the case file's directory), boundary (the kind of
    every group not named in [mesh.boundaries]), [mesh.boundaries] by the file's group names
    (checked against the file when it is read), deform."""
    for key in ("elements", "lower", "upper", "periodic"):
        if key in mesh:
            raise ctx.error(f"[mesh] {key} is a key of generator = \"box\"; a {gen} mesh takes its elements, "
                            "extent and periodic faces from its file: remove it")
    if "file" not in mesh:
        raise ctx.error(f"[mesh] file is required with generator = \"{gen}\" (the mesh file, relative to the "
                        "case file's directory)")
    given = mesh["file"]
    if not isinstance(given, str) or not given:
        raise ctx.bad("mesh", "file", "a file name (a string)", given)
    path = Path(given).expanduser()
    if not path.is_absolute() and not (ctx.source.startswith("<") and ctx.source.endswith(">")):
        path = Path(ctx.source).parent / path
    path = Path(os.path.abspath(path))
    if not path.is_file():
        where = "" if Path(given).is_absolute() else " (relative to the case file's directory)"
        raise ctx.error(f"[mesh] file = {show(given)}: no such file {path}{where}")
    boundary = choice(ctx, "mesh", mesh, "boundary", spec.boundary_kinds, spec.default_boundary)
    groups = mesh.get("boundaries") or {}
    if not isinstance(groups, Mapping):
        raise ctx.error(f"[mesh.boundaries] must be a table of surface group names, got {show(groups)}")
    boundaries = {}
    for name in groups:
        if groups[name] == "periodic":
            raise ctx.bad("mesh.boundaries", name, "a boundary kind; periodic faces come from the mesh file",
                          groups[name])
        boundaries[name] = choice(ctx, "mesh.boundaries", groups, name, spec.boundary_kinds, None)
    deform_table = read_table(ctx, mesh, "mesh", "deform")
    deform = read_expressions(ctx, "mesh.deform", deform_table, AXES, AXES)
    return MeshSection(generator=gen, elements=None, lower=None, upper=None, periodic=(False, False, False),
                       boundary=boundary, boundaries=boundaries, deform=deform, file=str(path),
                       extrude=read_extrude(ctx, mesh.get("extrude")))


def box_mesh(ctx: Context, spec: PhysicsSpec, mesh: dict) -> MeshSection:
    """[mesh] of generator = \"box\"."""
    if "extrude" in mesh:
        raise ctx.error("[mesh] extrude grows layers on a mesh file's surfaces; a box is made longer by lower, upper "
                        "and elements: remove extrude")
    if "file" in mesh:
        raise ctx.error(f"[mesh] file is read by the file generators ({', '.join(MESH_GENERATORS[1:])}); "
                        "generator = \"box\" makes its own mesh: remove file or set generator")
    elements = vector(
        ctx, "mesh", mesh, "elements", REQUIRED, "posint", length=(2, 3),
        required_hint=" (for example elements = [4, 4, 4], or [4, 4] for a 2-D mesh)",
    )
    if math.prod(elements) > MAX_ELEMENTS:
        raise ctx.bad("mesh", "elements", f"at most {MAX_ELEMENTS:.0e} elements in all", list(elements))
    dim = len(elements)  # 2: quadrilaterals in the plane z = 0 (docs/case-file.md, "2-D")
    for key in ("lower", "upper", "periodic"):
        given = mesh.get(key)
        if isinstance(given, (list, tuple)) and len(given) in (2, 3) and len(given) != dim:
            raise ctx.error(f"[mesh] {key} has {len(given)} entries but elements = {show(list(elements))} has {dim}: "
                            f"give one per axis of the {dim}-D box")
    lower = vector(ctx, "mesh", mesh, "lower", MESH["lower"].default[:dim], "float", length=dim)
    upper = vector(ctx, "mesh", mesh, "upper", MESH["upper"].default[:dim], "float", length=dim)
    for a, lo, hi in zip(AXES, lower, upper):
        if not hi > lo:
            raise ctx.error(
                f"[mesh] upper must be greater than lower on every axis, "
                f"got lower = {show(list(lower))}, upper = {show(list(upper))} ({a} axis)"
            )
    periodic = vector(ctx, "mesh", mesh, "periodic", MESH["periodic"].default[:dim], "bool", length=dim)
    boundary = choice(ctx, "mesh", mesh, "boundary", spec.boundary_kinds, spec.default_boundary)
    overrides = read_table(ctx, mesh, "mesh", "boundaries") or {}
    boundaries = {}
    for side in SIDES[2 * dim:]:
        if side in overrides:
            raise ctx.error(f"[mesh.boundaries] {side}: a 2-D box (elements = {show(list(elements))}) has the sides "
                            f"{', '.join(SIDES[:4])} only: remove it")
    for i, side in enumerate(SIDES[:2 * dim]):
        axis = i // 2
        if side in overrides:
            if periodic[axis]:
                raise ctx.error(
                    f"[mesh.boundaries] {side} is set but the {AXES[axis]} axis is periodic "
                    f"(mesh.periodic = {show(list(periodic))}); remove it or make the axis non-periodic"
                )
            boundaries[side] = choice(ctx, "mesh.boundaries", overrides, side, spec.boundary_kinds, None)
        else:
            boundaries[side] = "periodic" if periodic[axis] else boundary
    deform_table = read_table(ctx, mesh, "mesh", "deform")
    if dim == 2 and deform_table and "z" in deform_table:
        raise ctx.error(f"[mesh.deform] z: a 2-D box (elements = {show(list(elements))}) has no z axis (its points "
                        "stay at z = 0): remove it")
    deform = read_expressions(ctx, "mesh.deform", deform_table, AXES, AXES)
    return MeshSection(
        generator="box",
        elements=elements,
        lower=lower,
        upper=upper,
        periodic=periodic,
        boundary=boundary,
        boundaries=boundaries,
        deform=deform,
    )


def read_mesh(ctx: Context, spec: PhysicsSpec, data: Mapping[str, Any]) -> tuple:
    """(MeshSection, the raw [mesh] table) of a box or a mesh file."""
    mesh = read_table(ctx, data, "", "mesh", required=True)
    gen = choice(ctx, "mesh", mesh, "generator", MESH["generator"].choices, MESH["generator"].default)
    return (box_mesh(ctx, spec, mesh) if gen == "box" else file_mesh(ctx, spec, mesh, gen)), mesh


def read_discretization(ctx: Context, spec: PhysicsSpec, data: Mapping[str, Any]) -> DiscretizationSection:
    disc = read_table(ctx, data, "", "discretization") or {}
    form = DISCRETIZATION["volume_form"]
    return DiscretizationSection(
        order=integer(ctx, "discretization", disc, "order", DISCRETIZATION["order"].default, 1, MAX_ORDER),
        flux=choice(ctx, "discretization", disc, "flux", spec.fluxes, spec.fluxes[0]),
        volume_form=choice(ctx, "discretization", disc, "volume_form", form.choices, form.default),
    )


def read_fields(ctx: Context, data: Mapping[str, Any], field_names: tuple) -> tuple:
    """(initial, exact) FieldsSections: every field an expression in x, y, z, t (0 where not
    given); exact's fields are None when the case has no [exact]."""
    init = read_expressions(ctx, "initial", read_table(ctx, data, "", "initial"), field_names, FIELD_VARIABLES)
    zero = None

    def full(given: dict) -> dict:
        nonlocal zero
        if zero is None:
            zero = compile_expression("0", FIELD_VARIABLES, where="zero")
        return {n: given.get(n, zero) for n in field_names}

    initial = FieldsSection(fields=full(init), given=tuple(init))
    exact_table = read_table(ctx, data, "", "exact")
    if exact_table is None:
        return initial, FieldsSection(fields=None, given=())
    ex = read_expressions(ctx, "exact", exact_table, field_names, FIELD_VARIABLES)
    return initial, FieldsSection(fields=full(ex), given=tuple(ex))


def read_time(ctx: Context, spec: PhysicsSpec, data: Mapping[str, Any], flux: str) -> TimeSection | None:
    """[time]; None for a steady system (PhysicsSpec.steady), which has none."""
    time = {} if spec.steady else read_table(ctx, data, "", "time", required=True)
    integrator = read_integrator(ctx, spec, time)
    if spec.steady:
        return None
    substeps = read_substeps(ctx, spec, time)
    return TimeSection(
        integrator=integrator,
        t_end=positive(ctx, "time", time, "t_end", REQUIRED, " (the latest time the run may reach, for example "
                       "t_end = 20.0: until_decayed stops before it, never after)" if "until_decayed" in time else
                       " (the final time, for example t_end = 1.0)"),
        cfl=positive(ctx, "time", time, "cfl", spec.default_cfl(flux, integrator, DEFAULT_CFL[integrator])),
        dt=positive(ctx, "time", time, "dt", None),
        cfl_check=boolean(ctx, "time", time, "cfl_check", TIME["cfl_check"].default),
        growth_check=boolean(ctx, "time", time, "growth_check", TIME["growth_check"].default),
        **variable_dt(ctx, time, integrator, substeps, spec.substeps),
        substeps=substeps,
        **read_steady(ctx, time),
        **read_decay(ctx, time),
    )


def read_steady(ctx: Context, time: Mapping[str, Any]) -> dict:
    """[time] steady_tolerance (None: run to t_end) and steady_every (only with it)."""
    tolerance = positive(ctx, "time", time, "steady_tolerance", None)
    every = integer(ctx, "time", time, "steady_every", TIME["steady_every"].default, 1)
    if tolerance is None and "steady_every" in time:
        raise ctx.error("[time] steady_every applies with steady_tolerance only (the checks it spaces): give "
                        "steady_tolerance or remove steady_every")
    return {"steady_tolerance": tolerance, "steady_every": every}


def read_decay(ctx: Context, time: Mapping[str, Any]) -> dict:
    """[time] until_decayed (None: run to t_end), decay_interval (required with it) and
    decay_watch (resolved against [output.probes] by decay_watch_for); the latter two only with
    until_decayed."""
    fraction = positive(ctx, "time", time, "until_decayed", None)
    if fraction is None:
        for key in ("decay_interval", "decay_watch"):
            if key in time:
                raise ctx.error(f"[time] {key} applies with until_decayed only (the decay stop): give until_decayed "
                                f"(for example until_decayed = 1e-6) or remove {key}")
        return {}
    interval = positive(ctx, "time", time, "decay_interval", REQUIRED,
                        " with until_decayed: the time over which the watched field's maximum is taken between "
                        "checks, at least the longest period of interest (Meep's dt), for example decay_interval = 2.0")
    t_end = time["t_end"]  # read (and checked) before
    if interval > 0.5 * t_end:
        raise ctx.bad("time", "decay_interval", f"at most t_end / 2 = {0.5 * t_end:g} (the first check only sets the "
                      "maximum, so a stop needs two checks before t_end)", time["decay_interval"])
    watch = choice(ctx, "time", time, "decay_watch", TIME["decay_watch"].choices, "probes") if "decay_watch" in time \
        else None
    return {"until_decayed": fraction, "decay_interval": interval, "decay_watch": watch}


def decay_watch_for(ctx: Context, time: TimeSection | None, output: OutputSection) -> TimeSection | None:
    """The [time] section with decay_watch resolved: probes when [output.probes] is there (its
    points and fields), else energy; "probes" without [output.probes] is refused."""
    if time is None or time.until_decayed is None:
        return time
    if time.decay_watch == "probes" and output.probes is None:
        raise ctx.error('[time] decay_watch = "probes" needs [output.probes] (the points and fields watched): add '
                        'the table, or watch the energy (decay_watch = "energy")')
    watch = time.decay_watch or ("probes" if output.probes is not None else "energy")
    return dataclasses.replace(time, decay_watch=watch)


def read_output(ctx: Context, spec: PhysicsSpec, data: Mapping[str, Any], name: str,
                monitors: Mapping[str, Any] | None = None) -> OutputSection:
    """[output] and its monitor tables; ``name``: the case's name (the default file stem);
    ``monitors``: the declared tables of registered monitors (config/declared.py)."""
    out = read_table(ctx, data, "", "output") or {}
    every = integer(ctx, "output", out, "every", OUTPUT["every"].default, 0)
    formats = get_value(ctx, "output", out, "formats", OUTPUT["formats"].default)
    opts = ", ".join(f'"{c}"' for c in OUTPUT_FORMATS)
    if isinstance(formats, str):
        raise ctx.bad("output", "formats", f"a list of formats from {opts}", formats,
                      f'write formats = ["{formats}"]')
    if not isinstance(formats, (list, tuple)):
        raise ctx.bad("output", "formats", f"a list of formats from {opts}", formats)
    seen = []
    for f in formats:
        if not isinstance(f, str) or f not in OUTPUT_FORMATS:
            hint = ""
            if isinstance(f, str):
                close = difflib.get_close_matches(f.lower(), OUTPUT_FORMATS, n=1, cutoff=0.5)
                hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise ctx.error(
                f"[output] formats: unknown format {show(f)}{hint}; allowed: {opts}"
            )
        seen.append(f)
    refuse_repeats(ctx, "output", "formats", seen)
    out_name = get_value(ctx, "output", out, "name", sanitize_name(name))
    if not isinstance(out_name, str) or not _NAME_RE.match(out_name):
        raise ctx.bad(
            "output", "name",
            "a file-name stem of letters, digits and _ . + - (starting with a letter or digit)",
            out_name,
        )
    check_output_name_length(ctx, out_name, given="name" in out)
    derived, format_derived = read_derived(ctx, out, spec, tuple(seen))
    return OutputSection(every=every, formats=tuple(seen), name=out_name,
                         compression=read_compression(ctx, "output", out),
                         probes=parse_probes(ctx, out, spec), integrals=parse_integrals(ctx, out, spec),
                         dft=parse_dft(ctx, out, spec),
                         log_every=integer(ctx, "output", out, "log_every", OUTPUT["log_every"].default, 0),
                         monitors=read_monitor_tables(ctx, out, monitors or {}),
                         derived=derived, format_derived=format_derived)


def read_checkpoint(ctx: Context, data: Mapping[str, Any]) -> CheckpointSection:
    ck = read_table(ctx, data, "", "checkpoint") or {}
    return CheckpointSection(
        every=integer(ctx, "checkpoint", ck, "every", CHECKPOINT["every"].default, 0),
        wall_minutes=positive(ctx, "checkpoint", ck, "wall_minutes", CHECKPOINT["wall_minutes"].default),
        keep=integer(ctx, "checkpoint", ck, "keep", CHECKPOINT["keep"].default, 1),
        compression=read_compression(ctx, "checkpoint", ck),
        # not given: None, the default's "when checkpoints are on" (CheckpointSection.at_end)
        at_end=boolean(ctx, "checkpoint", ck, "at_end", CHECKPOINT["at_end"].default) if "at_end" in ck else None,
    )


def read_backend(ctx: Context, data: Mapping[str, Any]) -> BackendSection:
    be = read_table(ctx, data, "", "backend") or {}
    return BackendSection(**{key.name: key_value(ctx, "backend", be, key) for key in BACKEND.keys})


def read_parallel(ctx: Context, data: Mapping[str, Any]) -> ParallelSection:
    par = read_table(ctx, data, "", "parallel") or {}
    choices = {key.name: key_value(ctx, "parallel", par, key) for key in PARALLEL.keys if key.kind == "choice"}
    overlap = PARALLEL["overlap"]
    return ParallelSection(**choices, overlap=bool_or_auto(ctx, "parallel", par, "overlap", overlap.default))
