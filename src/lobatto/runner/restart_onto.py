"""Restart onto another order or mesh: the checkpoint's fields interpolated onto the case's
GLL points (docs/restart.md, "Onto another order or mesh"; ``lobatto run --restart DIR
--interpolate``).

Two paths, chosen by what differs:

* **the same mesh, another order** (the checkpoint's ``[mesh]`` and element count equal the
  case's): each element's fields go from the old GLL points to the new ones by the 1-D Lagrange
  matrix along each axis (operators.interpolation.gll_to_gll). Exact for polynomials of degree
  <= the lower order; each rank reads its own elements by global id.
* **another mesh** (any order): the checkpoint's own case (its stored TOML) gives the old mesh,
  which every rank builds whole (its GLL coordinates at the old order: 3 (N+1)^3 values per old
  element). Each new GLL point is located in it as probes are (mesh.locate: candidate boxes,
  Newton's method; the lowest global id among the elements holding it), and the old element's
  Lagrange basis gives the value there. A rank reads only the old elements its points fall in,
  from whichever parts hold them. A point outside every old element but within SNAP_FRACTION of
  an element's size takes the value at the nearest face point (curved boundaries of two
  meshes differ by their geometric error); farther out the restart is refused (exit 2).

A 2-D mesh (quads: element arrays (..., 1, n, n)) goes onto another order along i and j only,
and onto another 2-D mesh by locating its points in the old quads (made slabs one element size
thick around z = 0, so the 3-D location applies) and interpolating along r, s. A restart
across dimensions (a 2-D checkpoint onto a 3-D case or the reverse) is refused (exit 2).

What is not interpolated: a multistep scheme's history (the earlier states and explicit terms of
BDF/EXT). The run starts its history again with the start-up steps of a fresh run (BDF1, then
BDF2, ...: integrators.Stepper), and says so. A single-step scheme's system history (auxiliary
fields of absorbing layers or dispersive media) is element data like the state and is
interpolated with it. Time and step count go on from the checkpoint; dt is planned again from the case's
[time] for the new resolution (Simulation.time_origin keeps t = t0 + (step - step0) dt exact).
"""

from __future__ import annotations

import json
import math

import numpy as np

from lobatto.discretization import gll_points
from lobatto.discretization.tensor import dimension_of
from lobatto.errors import InputError
from lobatto.integrators import plan_steps
from lobatto.integrators.step_size import first_dt, steps_left
from lobatto.io.checkpoint import Checkpoint
from lobatto.machine.parallel import allreduce, collective_errors
from lobatto.mesh.geometry import element_coordinates
from lobatto.mesh.locate import axis_weights, candidate_pairs, element_boxes, newton, tensor_weights
from lobatto.operators.interpolation import gll_to_gll

__all__ = ["SNAP_FRACTION", "check_dimension", "differs", "onto_order", "resume_onto", "state_dimension"]

#: a new GLL point outside every old element by at most this fraction of the nearest candidate
#: element's size is taken at the nearest point of that element (a curved wall of two meshes)
SNAP_FRACTION = 1e-3
#: values of old element nodes copied at a time (Newton's nodes, the interpolation's gather)
BLOCK_VALUES = 1 << 22
#: new points located at a time (their candidate pairs and Newton's iterates are kept at once)
LOCATE_POINTS = 1 << 18
#: outside points named in the refusal
SHOWN_POINTS = 3


def differs(sim, checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's order, mesh, integrator or sub-steps differ from the case's
    (any of them: the history is not carried, the fields are interpolated)."""
    attrs, system = checkpoint.attrs, sim.system
    return (int(attrs.get("order", -1)) != system.order or not _same_mesh(sim, attrs)
            or attrs.get("integrator") != sim.stepper.scheme.name
            or int(attrs.get("substeps", 0)) != int(sim.case.time.substeps))


def _same_mesh(sim, attrs) -> bool:
    ours = sim.case.to_dict()["mesh"]
    return (json.dumps(ours, sort_keys=True) == json.dumps(attrs.get("mesh"), sort_keys=True)
            and int(attrs.get("num_global_elements", -1)) == int(sim.system.mesh.num_global_elements))


def state_dimension(checkpoint: Checkpoint) -> int:
    """2 or 3: the dimension of the mesh the checkpoint's state was written on, from the shape
    of its elements ((F, 1, n, n) on a 2-D mesh: N >= 1 makes a k axis of one point thin)."""
    return dimension_of(checkpoint.array_shape("state"))


def check_dimension(source, mesh_dim: int, case_mesh: dict, checkpoint: Checkpoint) -> None:
    """InputError, naming both files and both [mesh] tables, unless the checkpoint's state has
    the dimension of the case's mesh: no restart crosses dimensions (a 2-D state has no z
    dependence to give a 3-D mesh, and a 3-D one no unique plane)."""
    theirs = state_dimension(checkpoint)
    if theirs != int(mesh_dim):
        raise InputError(f"{source}: cannot restart from {checkpoint.path}: it holds a {theirs}-D state (its [mesh] "
                         f"{json.dumps(checkpoint.attrs.get('mesh'), sort_keys=True)}), the case's mesh is "
                         f"{int(mesh_dim)}-D ([mesh] {json.dumps(case_mesh, sort_keys=True)}): a restart, "
                         "interpolated or not, stays in the dimension it was written in")


def _refuse(sim, checkpoint, what: str) -> InputError:
    return InputError(f"{sim.case.source}: cannot interpolate from {checkpoint.path}: {what}")


def resume_onto(sim, checkpoint: Checkpoint) -> dict:
    """Collective: set ``sim`` (just built, not stepped) to the checkpoint's fields interpolated
    onto its GLL points, at the checkpoint's step and time; returns the restart's record."""
    system, attrs, comm = sim.system, checkpoint.attrs, sim.comm
    if attrs.get("equations") != system.name or list(attrs.get("field_names") or []) != list(system.field_names):
        raise _refuse(sim, checkpoint, f"it holds {attrs.get('equations')} fields {attrs.get('field_names')}, the "
                                       f"case is {system.name} with fields {list(system.field_names)}: a restart "
                                       "continues the same system")
    if sim.step_count != 0:
        raise _refuse(sim, checkpoint, "the Simulation has already stepped (interpolate into a new one)")
    with collective_errors(comm):
        check_dimension(sim.case.source, system.mesh.dim, sim.case.to_dict()["mesh"], checkpoint)
    step, t = int(attrs["step"]), float(attrs["time"])
    if sim.case.time.t_end < t * (1 - 1e-9):
        raise InputError(f"{sim.case.source}: [time] t_end = {sim.case.time.t_end:.6g} is before the time of the "
                         f"checkpoint {checkpoint.path} (t = {t:.6g}, step {step})")
    keep_history = not sim.stepper.multistep  # a single-step scheme's history is element data
    history_numbers = (attrs.get("history_numbers") or {}) if keep_history else {}
    kept = {name for name, value in sim.stepper.history().items() if not np.isscalar(value)} if keep_history else set()
    names = ["state"] + [f"history/{name}" for name in sorted(kept)]
    old_order = int(attrs["order"])
    if _same_mesh(sim, attrs):
        with collective_errors(sim.comm):  # a damaged part raises on one rank: all raise
            arrays = onto_order(checkpoint, system.mesh.element_ids, old_order, system.order, names)
        how = "the same mesh"
    else:
        arrays, snapped = _onto_mesh(sim, checkpoint, old_order, names)
        how = f"another mesh ({int(attrs['num_global_elements'])} -> {system.mesh.num_global_elements} elements" + (
            f"; {snapped} points on the old mesh's boundary within {SNAP_FRACTION:g} of an element's size)"
            if snapped else ")")
    element = tuple(system.geometry.coords.shape[2:])  # (n, n, n), or (1, n, n) in 2-D
    state = np.moveaxis(arrays.pop("state", np.zeros((0, len(system.field_names)) + element)), 0, 1)
    sim.u[...] = sim.backend.asarray(state.astype(sim.backend.dtype, copy=False))
    if keep_history and (kept or history_numbers):
        history = {name[len("history/"):]: np.moveaxis(value, 0, 1) for name, value in arrays.items()}
        history.update(history_numbers)
        if sorted(history) != sorted(sim.stepper.history()):
            raise _refuse(sim, checkpoint, f"it holds the history {sorted(history) or 'none'}, the "
                                           f"{sim.stepper.scheme.name} integrator of {system.name} keeps "
                                           f"{sorted(sim.stepper.history()) or 'none'}")
        sim.stepper.restore_history(history)
    sim.step_count, sim.t = step, t
    _plan(sim, checkpoint, step, t)
    sim.energy_initial = float(attrs["energy_initial"])
    if sim.advance_one is not None:  # a graph recorded with another dt must not be replayed
        sim.advance_one = sim.record_step()
    history = ("its multistep history (BDF/EXT) is not interpolated: it starts again with "
               f"{sim.stepper.scheme.name}'s start-up steps" if sim.stepper.multistep else
               "single-step scheme: nothing more to restart")
    interpolated = {"order": [old_order, system.order], "mesh": how, "history": history}
    if sim.rank == 0:
        print(f"lobatto: restart from {checkpoint.path} interpolated from order {old_order} to {system.order} on "
              f"{how} at step {step}, t = {t:.6g}; {history}; dt = {sim.dt:.4g}", flush=True)
    return interpolated


def onto_order(checkpoint, element_ids, old_order: int, order: int, names=None) -> dict:
    """{name: (E, ...) values at order ``order``} of the elements ``element_ids`` (this rank's),
    each array of the checkpoint interpolated element by element (a 2-D element's thin k axis
    stays one point)."""
    matrix = gll_to_gll(old_order, order)
    out = {}
    for name, values in checkpoint.read(element_ids, names).items():
        values = values.astype(np.float64, copy=False)
        values = np.einsum("ai,...kji->...kja", matrix, values)
        values = np.einsum("bj,...kja->...kba", matrix, values)
        out[name] = values if dimension_of(values.shape) == 2 else np.einsum("ck,...kba->...cba", matrix, values)
    return out


def _as_slab(coords: np.ndarray, order: int) -> np.ndarray:
    """A 2-D mesh's (3, E, 1, n, n) coordinates as hexahedra (3, E, n, n, n) of the same x, y
    with z = t h / 2 (h: the element's larger side in x, y): a point of the plane z = 0 is then
    located at t = 0 by the 3-D search, and its distance outside is measured in the element's
    size as for a hexahedron."""
    size = (coords[:2].max(axis=(2, 3, 4)) - coords[:2].min(axis=(2, 3, 4))).max(axis=0)  # (E,)
    slab = np.repeat(coords, order + 1, axis=2)
    slab[2] = gll_points(order)[None, :, None, None] * size[:, None, None, None] / 2
    return slab


def _old_coordinates(sim, checkpoint, old_order: int):
    """(3, E_old, n, n, n) GLL coordinates and (E_old,) global ids of the checkpoint's whole mesh,
    built from its own case (the TOML stored in it)."""
    from lobatto.config.schema import parse_case, tomllib
    from lobatto.monitors.registry import monitor_tables
    from lobatto.systems.registry import physics_specs

    source = f"{checkpoint.path} (the checkpoint's case)"
    try:
        data = tomllib.loads(str(checkpoint.attrs.get("config") or ""))
    except tomllib.TOMLDecodeError as err:
        raise _refuse(sim, checkpoint, f"its stored case is not readable TOML ({err})") from None
    old_case = parse_case(data, source=source, systems=physics_specs(), monitors=monitor_tables())
    m = old_case.mesh
    if m.from_file:  # as runner.build builds a run's mesh, whole (build imports this module)
        from lobatto.mesh.readers import mesh_from_file

        mesh = mesh_from_file(m.generator, m.file, old_order, m.boundaries, m.boundary)
    else:
        from lobatto.mesh import box_mesh

        sides = {side: kind for side, kind in m.boundaries.items() if kind != "periodic"}
        mesh = box_mesh(m.elements, m.lower, m.upper, m.periodic, boundary=m.boundary, boundaries=sides)
    coords = element_coordinates(mesh, old_order)
    if m.deform:
        x, y, z = coords
        coords = coords + np.stack([m.deform[a].evaluate(np, x=x, y=y, z=z) if a in m.deform else np.zeros_like(x)
                                    for a in ("x", "y", "z")])
    if int(mesh.num_global_elements) != int(checkpoint.attrs["num_global_elements"]):
        raise _refuse(sim, checkpoint, f"its case's mesh now has {mesh.num_global_elements} elements, the "
                                       f"checkpoint {checkpoint.attrs['num_global_elements']} (the mesh file changed?)")
    return coords, np.asarray(mesh.element_ids, dtype=np.int64)


def _onto_mesh(sim, checkpoint, old_order: int, names) -> tuple[dict, int]:
    """({name: (E, ...) values at this rank's GLL points}, points snapped): every array of the
    checkpoint at this rank's new GLL points, located in the old mesh."""
    with collective_errors(sim.comm):
        coords, ids = _old_coordinates(sim, checkpoint, old_order)
    return onto_points(checkpoint, coords, ids, old_order, sim.system.geometry.coords, names, sim.comm,
                       lambda what: _refuse(sim, checkpoint, what), sim.rank)


def onto_points(checkpoint, coords, ids, old_order: int, new_coords, names=None, comm=None, refuse=None,
                rank: int = 0) -> tuple[dict, int]:
    """Collective: ({name: (E, ..., n, n, n) values}, points snapped): the checkpoint's arrays at
    the GLL points ``new_coords`` (3, E, n, n, n), or (3, E, 1, n, n) on a 2-D mesh, located in
    the old mesh whose whole GLL coordinates (3, E_old, ...) and global ids are ``coords`` and
    ``ids``. ``refuse(what)`` makes the InputError for points outside the old mesh."""
    refuse = refuse or (lambda what: InputError(f"cannot interpolate from {checkpoint.path}: {what}"))
    thin = dimension_of(coords.shape) == 2  # 2-D (the dimensions agree: check_dimension)
    if thin:
        coords = _as_slab(coords, old_order)
    new_coords = np.asarray(new_coords)
    element_shape = tuple(new_coords.shape[2:])
    points = np.moveaxis(new_coords.reshape(3, -1), 0, 1)  # (P, 3), element by element
    element = np.zeros(len(points), dtype=np.int64)
    reference, distance = np.zeros((len(points), 3)), np.zeros(len(points))
    boxes = element_boxes(coords)
    for first in range(0, len(points), LOCATE_POINTS):  # bounds the candidate pairs' memory
        part = slice(first, first + LOCATE_POINTS)
        element[part], reference[part], distance[part] = _locate(points[part], coords, boxes, ids, old_order)
    outside = ~(distance <= SNAP_FRACTION)
    count = int(allreduce(comm, int(outside.sum())))
    if count:
        shown = points[outside][:SHOWN_POINTS]
        lower = allreduce(comm, np.min(np.where(outside[:, None], points, np.inf), axis=0), "min")
        upper = allreduce(comm, np.max(np.where(outside[:, None], points, -np.inf), axis=0), "max")
        with collective_errors(comm):
            raise refuse(f"{count} of the case's {allreduce(comm, len(points))} GLL points lie outside the "
                         "checkpoint's mesh (the new mesh must cover the same domain), "
                         f"between {_point(lower)} and {_point(upper)}"
                         + (f", e.g. {', '.join(_point(p) for p in shown)} on rank {rank}" if len(shown) else ""))
    snapped = int(allreduce(comm, int((distance > 0).sum())))
    needed, index = np.unique(ids[element], return_inverse=True)
    with collective_errors(comm):
        old = checkpoint.read(needed, names)
    hr, hs, ht = axis_weights(old_order, reference)
    if thin:  # the old values have one point along t: no t interpolation
        ht = np.ones((len(points), 1))
    out = {}
    for name, values in old.items():
        values = values.astype(np.float64, copy=False)
        result = np.empty((len(points),) + values.shape[1:-3])
        block = max(1, BLOCK_VALUES // max(1, values[0].size))
        for first in range(0, len(points), block):
            part = slice(first, first + block)
            result[part] = np.einsum("p...kji,pk,pj,pi->p...", values[index[part]], ht[part], hs[part], hr[part])
        # (E n^3, ...) -> (E, ..., n, n, n): the points came element by element, k, j, i (2-D: (1, n, n))
        result = result.reshape((new_coords.shape[1],) + element_shape + result.shape[1:])
        out[name] = np.moveaxis(result, (1, 2, 3), (-3, -2, -1))
    return out, snapped


def _point(p) -> str:
    return "(" + ", ".join(f"{float(v):.4g}" for v in p) + ")"


def _locate(points, coords, boxes, ids, order: int):
    """(old element index, reference (P, 3), distance) per point: the lowest-id old element
    holding it (distance 0), else the candidate nearest to it, its distance outside as a
    fraction of that element's size (inf: no candidate)."""
    point_of, element_of = candidate_pairs(boxes, points)
    order_ = np.lexsort((ids[element_of], point_of))
    point_of, element_of = point_of[order_], element_of[order_]
    inside = np.zeros(point_of.size, dtype=bool)
    reference = np.zeros((point_of.size, 3))
    chunk = max(1, BLOCK_VALUES // (3 * (order + 1) ** 3))
    for first in range(0, point_of.size, chunk):
        part = slice(first, first + chunk)
        found = newton(coords, element_of[part], points[point_of[part]])
        inside[part], reference[part] = found.inside, found.reference
    element = np.zeros(len(points), dtype=np.int64)
    where = np.zeros((len(points), 3))
    distance = np.full(len(points), np.inf)
    # the first inside pair of each point has the lowest id (pairs sorted by point, then id)
    held, first = np.unique(point_of[inside], return_index=True)
    element[held] = element_of[inside][first]
    where[held] = reference[inside][first]
    distance[held] = 0.0
    rest = ~np.isin(point_of, held)
    if rest.any():  # outside every element: the nearest face point of a candidate
        p, e, r = point_of[rest], element_of[rest], reference[rest]
        weights = tensor_weights(order, r, dimension_of(coords.shape))  # (m, n, n, n); (m, 1, n, n) in 2-D
        nearest = np.einsum("xmkji,mkji->mx", coords[:, e], weights)
        size = (boxes[1] - boxes[0])[e].max(axis=1)
        gap = np.linalg.norm(nearest - points[p], axis=1) / size
        best = np.lexsort((gap, p))
        p, e, r, gap = p[best], e[best], r[best], gap[best]
        unique, first = np.unique(p, return_index=True)
        element[unique], where[unique], distance[unique] = e[first], r[first], gap[first]
    return element, where, distance


def _plan(sim, checkpoint, step: int, t: float) -> None:
    """dt and the last step of the continued run, planned from the case's [time] for the new
    resolution over the time left (the checkpoint's dt where the case gives no other)."""
    time_ = sim.case.time
    saved_dt = float(checkpoint.attrs["dt"])
    left = max(time_.t_end - t, 0.0)
    per_unit, force = None, 0.0
    if sim.advective and (time_.initial_dt if sim.variable_dt else time_.dt) is None:
        if callable(getattr(sim.system, "courant", None)):
            value = float(sim.system.courant(sim.u, 1.0))
            per_unit = allreduce(sim.comm, value if math.isfinite(value) else 0.0, "max")
        if sim.variable_dt and callable(getattr(sim.system, "force_courant", None)):  # as schedule.plan_from_courant
            value = float(sim.system.force_courant(sim.u, t))
            force = allreduce(sim.comm, value if math.isfinite(value) else 0.0, "max")
    if sim.variable_dt:
        dt = time_.initial_dt or first_dt(time_.target_cfl, per_unit or 0.0, force) or saved_dt
        sim.dt, sim.steps = dt, step + steps_left(t, time_.t_end, dt)
    else:
        if not sim.advective:
            dt = sim.stable_dt(sim.min_spacing)
        else:
            dt = time_.dt or (first_dt(time_.cfl, per_unit) if per_unit else None) or saved_dt
        count, dt = plan_steps(left, dt) if left > 0 else (0, dt)
        sim.check_step_budget(count, dt)
        sim.dt, sim.steps = dt, step + count
    sim.time_origin = (step, t)
