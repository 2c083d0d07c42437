"""Checkpoints of a Simulation and its continuation from one (docs/restart.md).

:func:`save` writes everything a run needs to go on (io/checkpoint.py holds the file layout):
the state and any integrator or system history by global element id, step, time, dt, the
initial energy, what the snapshot writer has written so far, earlier restarts, the case TOML,
version, backend and rank count. :func:`resume` reads this rank's elements back into a
Simulation built from a compatible case, on any number of ranks and either backend.
When the run loop writes one is schedule.py's CheckpointSchedule.
"""

from __future__ import annotations

import datetime
import json
import math
import tomllib
from pathlib import Path

import numpy as np

from lobatto import __version__
from lobatto.errors import InputError
from lobatto.io.checkpoint import Checkpoint, write_checkpoint
from lobatto.io.checkpoint_dir import checkpoint_path
from lobatto.machine.parallel import collective_errors
from lobatto.runner import step_check
from lobatto.runner.restart_onto import check_dimension, differs, resume_onto
from lobatto.runner.schedule import MAX_STEPS

__all__ = ["check_compatible", "memory_estimate", "resume", "save"]

#: attributes of a Simulation holding outputs that carry state from one write to the next (the
#: probes' time series; the steady-state test's reference, steady_stop.py; the decay test's
#: maxima, decay_stop.py): when one has
#: ``checkpoint_state() -> dict`` (JSON-able), the dict is saved, and handed back to its
#: ``restore_checkpoint_state(state)`` on restart
STATEFUL_OUTPUTS = ("series", "steady", "decay")
#: the continued run's step count: t_end / dt, rounded up, after taking off this relative slack
#: (t_end / (t_end / steps) is steps only to a few ulps)
STEP_SLACK = 1e-9
#: the checkpoint's group of the outputs' arrays (OUTPUT_ARRAYS/<output>/<key>), beside the history
OUTPUT_ARRAYS = "outputs"


def _element_first(array) -> np.ndarray:
    return np.moveaxis(np.asarray(array), 1, 0)


def _writer_state(writer) -> dict:
    """What the snapshot writer has to carry on: its records (listed in the summary), the
    Nek5000 file number, the VTK time series' entries."""
    state = {"records": writer.records, "nek_count": writer.nek_count}
    entries = getattr(getattr(writer, "vtk", None), "entries", None)
    if entries is not None:
        state["vtk_entries"] = [list(entry) for entry in entries]
    return state


def _restore_writer(writer, state: dict) -> None:
    writer.records = [dict(record) for record in state.get("records", [])]
    writer.nek_count = int(state.get("nek_count", 0))
    vtk = getattr(writer, "vtk", None)
    if vtk is not None and hasattr(vtk, "entries"):
        vtk.entries = [(float(t), str(name)) for t, name in state.get("vtk_entries", [])]


def _outputs_state(sim) -> dict:
    state = {}
    for name in STATEFUL_OUTPUTS:
        method = getattr(getattr(sim, name, None), "checkpoint_state", None)
        if method is not None:
            state[name] = method()
    return state


def _outputs_arrays(sim) -> list:
    """(name, checkpoint_arrays method) of the stateful outputs that keep arrays by element."""
    found = []
    for name in STATEFUL_OUTPUTS:
        method = getattr(getattr(sim, name, None), "checkpoint_arrays", None)
        if method is not None:
            found.append((name, method))
    return found


def memory_estimate(case, layout, system_class) -> list:
    """memory_items.MemoryItem of a checkpoint's host buffers while it is written: the state and
    the system's history as float64 on the host, and their element-first copies."""
    from lobatto.machine.memory_items import MemoryItem

    if not case.checkpoint.enabled:
        return []
    values = layout.fields + int(getattr(system_class, "history_fields", 0))
    return [MemoryItem(f"[checkpoint] buffers ({values} values per point of {layout.points:,} points)",
                       host=2.0 * 8 * values * layout.points, advice="use more ranks or a smaller mesh")]


def save(sim, path=None) -> Path:
    """Collective: write a checkpoint of ``sim`` at its current step into ``path`` (default
    ``<output_dir>/checkpoints/<name>_<step>``); returns the directory."""
    case, system, backend = sim.case, sim.system, sim.backend
    path = Path(path) if path is not None else checkpoint_path(sim.output_dir, case.output.name, sim.step_count)
    arrays = {"state": _element_first(backend.to_host(sim.u))}
    numbers = {}
    for name, method in _outputs_arrays(sim):
        for key, value in method().items():  # monitors' per-element state (a 3-D average's sums)
            arrays[f"{OUTPUT_ARRAYS}/{name}/{key}"] = _element_first(backend.to_host(value))
    for name, value in sim.stepper.history().items():
        if np.isscalar(value):
            numbers[name] = float(value) if isinstance(value, float) else value
        else:
            arrays[f"history/{name}"] = _element_first(backend.to_host(value))
    attrs = {
        "step": sim.step_count, "time": sim.t, "dt": sim.dt, "t_end": case.time.t_end,
        "energy_initial": sim.energy_initial,
        "integrator": sim.stepper.scheme.name, "substeps": int(case.time.substeps), "equations": system.name,
        "order": system.order, "field_names": list(system.field_names), "num_global_elements": int(system.mesh.num_global_elements),
        "mesh": case.to_dict()["mesh"], "config": case.to_toml(), "volume_form": running_form(system, case),
        "lobatto_version": __version__, "backend": backend.name, "precision": backend.precision,
        "ranks": sim.size, "history_numbers": numbers, "time_origin": list(getattr(sim, "time_origin", (0, 0.0))),
        "writer": _writer_state(sim.writer), "restarts": sim.restarts, "outputs_state": _outputs_state(sim),
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    return write_checkpoint(path, arrays, system.mesh.element_ids, attrs, case.checkpoint.compression, sim.comm)


def _incompatible(case, checkpoint: Checkpoint, what: str, ours, theirs) -> InputError:
    onto = ("; another [mesh], [discretization] order, integrator or substeps needs --interpolate "
            "(Simulation.restart(path, interpolate=True): docs/restart.md)" if what.startswith(("[mesh]", "[discretization] order", "the mesh", "[time] integrator",
                                                  "[time] substeps"))
            else "")
    return InputError(f"{case.source}: cannot continue from {checkpoint.path}: {what} differs (the case: {ours}; "
                      f"the checkpoint: {theirs}); restart with the case that wrote it, or one that changes only "
                      "[time] t_end, [physics] values, the flux, [output], [checkpoint], [backend] or "
                      f"[parallel]{onto}")


def _stored_discretization(checkpoint: Checkpoint) -> dict:
    """The [discretization] table of the case stored in the checkpoint ({} where none is)."""
    try:
        return dict(tomllib.loads(str(checkpoint.attrs.get("config") or "")).get("discretization") or {})
    except tomllib.TOMLDecodeError:
        return {}


def running_form(system, case) -> str:
    """The volume form the run computes: "auto" resolved (a system that resolves it records its choice;
    the other systems take the split form for it)."""
    choice = getattr(system, "volume_form_choice", None)
    if choice is not None:
        return choice["form"]
    setting = case.discretization.volume_form
    return "split" if setting == "auto" else setting


def check_compatible(sim, checkpoint: Checkpoint) -> None:
    """InputError unless the checkpoint was written by a run of the same system, mesh, order,
    fields and integrator."""
    case, system, attrs = sim.case, sim.system, checkpoint.attrs
    mesh = case.to_dict()["mesh"]
    pairs = [
        ("[physics] equations", system.name, attrs.get("equations")),
        ("[discretization] order", system.order, attrs.get("order")),
        ("[time] integrator", sim.stepper.scheme.name, attrs.get("integrator")),
        # the sub-steps' history differs from the extrapolated step's, and a different count
        # would change the continued run's bits (checkpoints before substeps existed had none)
        ("[time] substeps", int(sim.case.time.substeps), int(attrs.get("substeps", 0))),
        ("the fields", list(system.field_names), attrs.get("field_names")),
        ("the mesh's element count", int(system.mesh.num_global_elements), attrs.get("num_global_elements")),
    ]
    # the volume form changes the operator, its stable dt and the energy's norm: the form that ran
    # (attrs "volume_form", "auto" resolved; before 2026-11-28 the stored case's setting, where
    # "auto" did not exist, and before that none: taken as the case's) against the one that runs
    ours = running_form(system, case)
    theirs = attrs.get("volume_form") or _stored_discretization(checkpoint).get("volume_form") or ours
    pairs.append(("[discretization] volume_form (the form that runs)", ours, theirs))
    for what, ours, theirs in pairs:
        if ours != theirs:
            raise _incompatible(case, checkpoint, what, ours, theirs)
    theirs = attrs.get("mesh") or {}
    for key in sorted(set(mesh) | set(theirs)):
        if json.dumps(mesh.get(key), sort_keys=True) != json.dumps(theirs.get(key), sort_keys=True):
            raise _incompatible(case, checkpoint, f"[mesh] {key}", mesh.get(key), theirs.get(key))


def _history_names(sim) -> list[str]:
    return sorted(sim.stepper.history())


def resume(sim, path, interpolate: bool = False) -> dict:
    """Collective: continue ``sim`` (just built, or at any step) from the checkpoint at
    ``path``: this rank's elements by global id, step, time, dt, history, writer state.
    With ``interpolate``, a checkpoint of another order or mesh is interpolated onto the
    case's (restart_onto.py; ``sim`` just built). Returns the restart's record (also appended
    to ``sim.restarts``, listed in the summary)."""
    case, system, backend, comm = sim.case, sim.system, sim.backend, sim.comm
    with collective_errors(comm):
        checkpoint = Checkpoint(path)
        checkpoint.check_restart_attributes()
        # a restart, interpolated or not, stays in its dimension (the state's shape says which)
        check_dimension(case.source, system.mesh.dim, case.to_dict()["mesh"], checkpoint)
        onto = interpolate and differs(sim, checkpoint)
    if onto:
        interpolated = resume_onto(sim, checkpoint)
        return _restore_outputs(sim, checkpoint, {"interpolated": interpolated})
    with collective_errors(comm):
        check_compatible(sim, checkpoint)
        attrs = checkpoint.attrs
        step, dt = int(attrs["step"]), float(attrs["dt"])
        origin_step, origin_t = _time_origin(attrs)
        steps = max(step, origin_step + math.ceil((case.time.t_end - origin_t) / dt * (1 - STEP_SLACK)))
        if getattr(sim, "variable_dt", False):  # dt: the next step's; t: the sum of the steps taken
            from lobatto.integrators.step_size import steps_left

            steps = step + steps_left(float(attrs["time"]), case.time.t_end, dt)
        if case.time.t_end < float(attrs["time"]) * (1 - STEP_SLACK):
            raise InputError(f"{case.source}: [time] t_end = {case.time.t_end:.6g} is before the time of the "
                             f"checkpoint {checkpoint.path} (t = {float(attrs['time']):.6g}, step {step})")
        _check_kept_dt(sim, dt)
        if steps > MAX_STEPS:
            raise InputError(f"{case.source}: [time] t_end = {case.time.t_end:.4g} takes {steps:.3g} steps of the "
                             f"checkpoint's dt = {dt:.3g}, more than {MAX_STEPS:.0e}")
        arrays = checkpoint.read(system.mesh.element_ids)
        state = np.moveaxis(arrays.pop("state"), 0, 1)
        prefix = f"{OUTPUT_ARRAYS}/"
        outputs = {name[len(prefix):]: np.moveaxis(arrays.pop(name), 0, 1) for name in list(arrays)
                   if name.startswith(prefix)}
        history = {name[len("history/"):]: np.moveaxis(value, 0, 1) for name, value in arrays.items()}
        history.update(attrs.get("history_numbers") or {})
        # a history number a system lists in optional_history may be missing (older checkpoints)
        optional = {f"system/{name}" for name in getattr(system, "optional_history", ())} & set(_history_names(sim))
        if sorted(set(history) | optional) != _history_names(sim):
            raise InputError(f"{checkpoint.path}: holds the history {sorted(history) or 'none'}, the "
                             f"{sim.stepper.scheme.name} integrator of {system.name} keeps {_history_names(sim) or 'none'}")
    sim.u[...] = backend.asarray(state.astype(backend.dtype, copy=False))
    sim.stepper.restore_history(history)
    sim.step_count, sim.dt, sim.steps = step, dt, steps
    # as the uninterrupted run computes it
    sim.time_origin = (origin_step, origin_t)
    sim.t = (float(attrs["time"]) if getattr(sim, "variable_dt", False)
             else origin_t + (sim.step_count - origin_step) * sim.dt)
    sim.energy_initial = float(attrs["energy_initial"])
    if sim.advance_one is not None:  # a graph recorded with another dt must not be replayed
        sim.advance_one = sim.record_step()
    return _restore_outputs(sim, checkpoint, {}, outputs)


def _time_origin(attrs) -> tuple[int, float]:
    """(step, t) that the checkpointed run's fixed steps count from: (0, 0.0) unless it was
    itself restarted onto another order or mesh (its dt planned again there)."""
    origin = attrs.get("time_origin") or [0, 0.0]
    return int(origin[0]), float(origin[1])


def _restore_outputs(sim, checkpoint: Checkpoint, extra: dict, outputs: dict | None = None) -> dict:
    """The writer's and the outputs' state from the checkpoint (``outputs``: their arrays by
    element, this rank's, read with the state), and the restart's record."""
    attrs, backend = checkpoint.attrs, sim.backend
    _restore_writer(sim.writer, attrs.get("writer") or {})
    interpolated = "interpolated" in extra
    if getattr(sim, "steady", None) is not None:  # what an earlier run of this Simulation kept is not the checkpoint's
        sim.steady.reset()
    if getattr(sim, "decay", None) is not None:
        sim.decay.reset()
    afresh = []
    for name, saved in (attrs.get("outputs_state") or {}).items():
        restore = getattr(getattr(sim, name, None), "restore_checkpoint_state", None)
        if restore is not None:
            afresh += (restore(saved, interpolated=True) if interpolated else restore(saved)) or []
    if afresh:  # their state is at the checkpoint's points: not carried onto another order or mesh
        extra = {**extra, "outputs_started_afresh": afresh}
        if sim.rank == 0:
            print(f"lobatto: {', '.join(f'[output.{a}]' for a in afresh)} start afresh: what they kept is at the "
                  "checkpoint's points, not interpolated onto the new order or mesh", flush=True)
    for name in STATEFUL_OUTPUTS:
        restore = getattr(getattr(sim, name, None), "restore_checkpoint_arrays", None)
        saved = {key[len(name) + 1:]: value for key, value in (outputs or {}).items() if key.startswith(f"{name}/")}
        if restore is not None and saved:
            restore(saved)
    record = {"checkpoint": str(checkpoint.path), "step": int(attrs["step"]), "time": float(attrs["time"]),
              "from": {"ranks": attrs.get("ranks"), "backend": attrs.get("backend"),
                       "precision": attrs.get("precision"), "lobatto_version": attrs.get("lobatto_version")},
              "to": {"ranks": sim.size, "backend": backend.name, "precision": backend.precision}, **extra}
    sim.restarts = list(attrs.get("restarts") or []) + [record]
    return record


def _check_kept_dt(sim, dt: float) -> None:
    """The checkpoint's dt goes on; refused when it is over the integrator's stability bound
    for this case (its [physics] values may have changed) or, where the operator was checked at
    set-up (step_check.py), over its stable step."""
    case, system = sim.case, sim.system
    bound = system.spec.cfl_bounds.get((case.discretization.flux, sim.stepper.scheme.name))
    if bound is None:  # no wave-speed bound (the multistep schemes: max_cfl watches each step)
        return
    bound = round(bound * system.cfl_bound_factor(), 4)
    cfl = dt * system.wave_speed / sim.min_spacing
    if case.time.cfl_check and cfl > bound * (1 + 1e-12):
        raise InputError(f"{case.source}: the checkpoint's dt = {dt:.4g} is cfl {cfl:.4g} for this case, above the "
                         f"stability bound {bound} of {sim.stepper.scheme.name} with the {case.discretization.flux} "
                         "flux; set [time] cfl_check = false to continue anyway")
    shortened = bool((sim.step_check or {}).get("shortened"))
    sim.step_check = step_check.check_kept(case, sim.step_check, dt)  # against the operator's spectral radius
    if shortened and sim.rank == 0:  # the set-up's note spoke of the cfl step, which a restart does not take
        print(f"lobatto: the restart goes on with the checkpoint's dt = {dt:.4g}, within this mesh's stable step",
              flush=True)
