"""What a run is built from: the case's mesh on this rank, the memory check before it, and the
system on that mesh (``build_system``), shared by time-dependent and steady runs.

Nothing here knows a system's names: the system's class comes from the registry by
``[physics] equations`` and estimates its own memory.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from lobatto.errors import InputError, SolverError
from lobatto.integrators import get_scheme
from lobatto.machine.memory_items import RunLayout, with_items
from lobatto.machine.parallel import allreduce, collective_errors, launched_local_size, rank_and_size
from lobatto.machine.resources import available_host_memory, check_fits, estimate_run_memory, stepper_states
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.partition import partition_box, partition_mesh
from lobatto.monitors import MonitorSet
from lobatto.operators.assembly import exchange_defaults
from lobatto.runner.dimension import check_dimension, mesh_dimension
from lobatto.runner.restart import memory_estimate as checkpoint_memory
from lobatto.runner.schedule import MAX_STEPS
from lobatto.runner.steady_stop import memory_estimate as steady_memory
from lobatto.systems.registry import get_system


def deformation_from_expressions(deform: dict):
    """A callable (x, y, z) -> (dx, dy, dz) from the [mesh.deform] expressions, or None."""
    if not deform:
        return None

    def displacement(x, y, z):
        return tuple(
            deform[axis].evaluate(np, x=x, y=y, z=z) if axis in deform else np.zeros_like(x)
            for axis in ("x", "y", "z")
        )

    return displacement


def read_mesh_file(case):
    """The whole mesh of the case's mesh file (every rank reads all of it: docs/meshes.md), with
    its [mesh] extrude layers grown (before partitioning: every rank grows the same)."""
    from lobatto.mesh.extrude import apply_extrusions
    from lobatto.mesh.readers import mesh_from_file

    m = case.mesh
    whole = mesh_from_file(m.generator, m.file, case.discretization.order, m.boundaries, m.boundary)
    return apply_extrusions(whole, m.extrude, "[mesh] extrude") if m.extrude else whole


def build_mesh(case, comm=None, whole=None):
    """This rank's part of the case's mesh (the whole mesh without comm), halo elements last.

    whole: a file mesh already read (read_mesh_file), else it is read here."""
    m = case.mesh
    rank, size = rank_and_size(comm)
    if m.from_file:
        whole = whole if whole is not None else read_mesh_file(case)
        mesh = whole if size == 1 else whole.subset(partition_mesh(whole, size, rank, case.parallel.partitioner))
        mesh.deform = deformation_from_expressions(m.deform)
        return mesh.halo_last()
    sides = {side: kind for side, kind in m.boundaries.items() if kind != "periodic"}
    element_ids = None if size == 1 else partition_box(m.elements, size, rank, case.parallel.partitioner)
    mesh = box_mesh(
        m.elements, m.lower, m.upper, m.periodic, boundary=m.boundary, boundaries=sides,
        deform=deformation_from_expressions(m.deform), element_ids=element_ids,
    )
    return mesh.halo_last()


def describe_mesh(case, mesh) -> dict:
    """The summary's account of the mesh: where it came from, its geometry order and names."""
    m = case.mesh
    about = {"generator": m.generator}
    if m.from_file:
        about["file"] = m.file
    about.update(elements=int(mesh.num_global_elements), geometry_order=mesh.geometry_order,
                 regions=list(mesh.region_names), surfaces=list(mesh.group_names))
    return about


def check_partition(mesh, case, comm) -> None:
    """Collective: the ranks' parts cover every element once (element count, sum of ids and
    sum of their squares over ranks). Graph partitioners (metis, rsb) run on every rank
    independently; this catches ranks that disagree instead of running on a broken mesh."""
    if comm is None:
        return
    ids = mesh.element_ids.astype(np.int64)
    total = mesh.num_global_elements
    prime = 2**31 - 1  # squares summed modulo a prime: no int64 overflow on any mesh size
    got = allreduce(comm, np.array([ids.size, ids.sum(), ((ids * ids) % prime).sum()], dtype=np.int64))
    expected = [total, total * (total - 1) // 2, (total - 1) * total * (2 * total - 1) // 6 % prime]
    if [int(got[0]), int(got[1]), int(got[2]) % prime] != expected:
        raise SolverError(f"[parallel] the '{case.parallel.partitioner}' partition computed on the "
                          f"{comm.Get_size()} ranks does not cover the {total} elements exactly once "
                          f"({int(got[0])} assigned); the ranks disagree (different numpy builds?)")


def check_memory(case, system_class, backend, comm=None, whole=None) -> dict:
    """Refuse (InputError, before any allocation) a run whose estimated memory per rank
    exceeds what this node (shared by its ranks) or this GPU has free; the estimate is returned.
    whole: the file mesh, read (its element count and geometry order count), else the box."""
    rank, size = rank_and_size(comm)
    total = whole.num_elements if whole is not None else math.prod(case.mesh.elements)
    dim = mesh_dimension(case, whole)
    fields = system_class.spec.for_case(case.physics.values, InputError).fields_in(dim)
    estimate = estimate_run_memory(
        math.ceil(total / size), case.discretization.order, len(fields),
        system_class.trace_components, backend.precision, ranks=size, backend=backend.name,
        # the stepper's states, or a system's own count where larger (its solvers' arrays and
        # history: a steady system, Navier-Stokes)
        integrator_states=max(stepper_states(get_scheme(case.time.integrator)) if case.time is not None else 1,
                              getattr(system_class, "memory_states", 1)),
        reference_kernels=not system_class.tuned_on(backend), partitioner=case.parallel.partitioner,
        exact_fields=case.exact.present, geometry_order=1 if whole is None else whole.geometry_order,
        file_elements=None if whole is None else total, dim=dim)
    # what the monitors, physics terms, solvers and checkpoints allocate, each part's own count
    estimate = with_items(estimate, memory_items(case, system_class, run_layout(case, system_class, backend, size,
                                                                                 total, dim)))
    host = available_host_memory()
    host = None if host is None else host // launched_local_size()
    mesh_is = (f"[mesh] file {case.mesh.file} ({total} elements)" if whole is not None
               else f"[mesh] elements = {list(case.mesh.elements)}")
    what = (f"{case.source}: {mesh_is} at order {case.discretization.order}"
            + (f" on {size} ranks" if size > 1 else ""))
    check_fits(estimate, host, backend.memory_available(), what)
    return estimate


def run_layout(case, system_class, backend, ranks: int, total: int, dim: int = 3) -> RunLayout:
    """What the parts' memory estimates need (memory_items.RunLayout), from the case and the
    mesh's dimension (``dim``: 2 or 3)."""
    fields = len(system_class.spec.for_case(case.physics.values, InputError).fields_in(dim))
    time_ = case.time
    steps = None
    if time_ is not None and time_.dt is not None and time_.target_cfl is None:
        steps = int(min(math.ceil(time_.t_end / time_.dt), MAX_STEPS))
    return RunLayout(elements=math.ceil(total / ranks), total_elements=total, order=case.discretization.order,
                     fields=fields, ranks=ranks, precision=backend.precision, backend=backend.name,
                     box=None if case.mesh.from_file else tuple(case.mesh.elements), steps=steps, dim=dim)


def memory_items(case, system_class, layout) -> list:
    """Each part's own estimate (memory_items.MemoryItem): the system's (its terms and solvers),
    the monitors' (MonitorSet) and the checkpoints' (restart.py)."""
    return (list(system_class.memory_estimate(case, layout)) + MonitorSet.memory_estimate(case, layout)
            + checkpoint_memory(case, layout, system_class) + steady_memory(case, layout))


def build_system(case, backend, comm=None):
    """The case's system (by ``[physics] equations``) on this rank's part of its mesh."""
    system_class = get_system(case.physics.equations)
    with collective_errors(comm):  # a bad element may sit on one rank only
        with case_named(case):  # a file mesh is read first: its size is known from it only
            whole = read_mesh_file(case) if case.mesh.from_file else None
            # a 2-D mesh: the system runs in 2-D, and the case asks for nothing 3-D only (dimension.py)
            dim = mesh_dimension(case, whole)
            system_class.check_dimension(case, dim)  # the system's own keys first (ports, sources...)
            check_dimension(case, system_class.spec.for_case(case.physics.values, InputError), dim, whole)
        check_memory(case, system_class, backend, comm, whole)
        with case_named(case):
            mesh = build_mesh(case, comm, whole)
            del whole  # a rank keeps its part only
            geometry = compute_geometry(mesh, case.discretization.order)
    check_partition(mesh, case, comm)
    # the same on every rank, and any rank that fails alone ends the job (collective_errors);
    # [parallel] method and exchange reach every continuous assembly (NCCL where asked)
    with collective_errors(comm), case_named(case), exchange_defaults(case.parallel.method, case.parallel.exchange):
        return system_class.from_case(case, mesh, geometry, backend, comm)


@contextmanager
def case_named(case):
    """Input errors raised inside name the case file first."""
    try:
        yield
    except InputError as error:
        if str(error).startswith(case.source):
            raise
        raise InputError(f"{case.source}: {error}") from None

