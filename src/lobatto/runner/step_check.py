"""The time step checked against the operator it steps, once at set-up.

dt = cfl h_min / c (schedule.stable_dt) stands in for the spectral radius of the semi-discrete
operator L on the meshes where the cfl bounds were calibrated (boxes, benchmarks/notes-stability.md);
on strongly distorted elements it does not: the split-form curl operator on a deformed 2^3
box has dt rho up to 8 % over lsrk45's reach at the enforced cfl (N = 2 to 10), and such runs
grow without bound. Meshes of axis-aligned box elements only are not checked (check_step). Here ITERATIONS power iterations of L (the system's ``homogeneous_operator``: no
sources, homogeneous boundaries) in the system's energy norm, where an energy-stable L is nearly
normal, from pseudo-random fields estimate the modulus rho of its largest eigenvalue, and the
last iterate's Rayleigh quotient its direction (the central flux's are imaginary, the upwind
flux's largest near the negative real axis). dt rho must stay within THRESHOLD of the reach
of the integrator's stability region in that direction (integrators.stability.reach):

* a step from [time] cfl that is over it is shortened to (1 - MARGIN) reach / rho, with a note;
* a step given as [time] dt is refused (InputError) naming that step;
* [time] cfl_check = false skips the check.

Collective, and the same on any number of ranks: the start fields are a hash of global element
ids and point indices, the norms reduced over ranks, rho and the direction rounded (DIGITS)
before they decide anything. Only the operator's largest eigenvalue is
looked at: one of smaller modulus in a worse direction can still be unstable (the energy check
of the run stops such a case).
"""

from __future__ import annotations

import math
import time

import numpy as np

from lobatto.errors import InputError
from lobatto.integrators.stability import reach
from lobatto.integrators.tables import STABILITY_RADII
from lobatto.machine.parallel import allreduce

__all__ = ["ITERATIONS", "MARGIN", "THRESHOLD", "box_elements", "check_step", "estimate", "start_fields"]

#: power iterations: rho within 0.15 % of the dense eigenvalues' on the deformed test box, 2 %
#: on the flat one (the iteration converges from below; notes-stability.md)
ITERATIONS = 40
#: a step is shortened where dt rho is over this fraction of the reach: the estimate is low by
#: 0.1 to 2 % after 40 iterations, and the deformed box at N = 6 grew (upwind, 6e11 in 20
#: time units) at an estimated 1.001 (benchmarks/notes-stability.md). Boxes are not checked:
#: there the enforced bounds come within 2 % of the reach (N = 10; step_check_survey.py)
THRESHOLD = 0.99
#: a shortened step keeps dt rho this fraction inside the reach (the estimate is low by up
#: to a few per cent where the spectrum's edge is crowded)
MARGIN = 0.05
DIGITS = 4  # significant digits of rho (the direction's cosine: 3 decimals; a shortened dt: 3 digits)


def _significant(value: float, digits: int = DIGITS, down: bool = False) -> float:
    if not (math.isfinite(value) and value > 0):
        return value
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(value)))
    return (math.floor(value * scale) if down else round(value * scale)) / scale


def start_fields(fields: int, element_ids, points: int) -> np.ndarray:
    """(fields, E, points) values in [-1, 1): splitmix64 of (global element id, field, point),
    the same for an element on whichever rank holds it."""
    ids = np.asarray(element_ids, dtype=np.uint64)[None, :, None]
    key = (ids * np.uint64(fields) + np.arange(fields, dtype=np.uint64)[:, None, None]) * np.uint64(points)
    x = key + np.arange(points, dtype=np.uint64)[None, None, :] + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)  # unsigned arrays wrap around
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) * 2.0 ** -52 - 1.0


def estimate(system, comm, iterations: int = ITERATIONS) -> tuple[float, float]:
    """Collective: (rho, cosine) of the largest eigenvalue of system.homogeneous_operator(),
    by ``iterations`` power iterations in its energy norm; rho rounded to DIGITS digits, the
    cosine (of the direction, from the last iterate's Rayleigh quotient) to 3 decimals."""
    apply, energy = system.homogeneous_operator()
    backend, xp = system.backend, system.backend.xp
    shape = system.allocate_state().shape
    values = start_fields(shape[0], system.mesh.element_ids, int(np.prod(shape[2:])))
    u = backend.asarray(values.reshape(shape).astype(backend.dtype))
    w = xp.empty_like(u)
    rho, cosine = 0.0, -1.0
    norm = math.sqrt(2.0 * max(allreduce(comm, energy(u)), 0.0))  # energy(x) = <x, x> / 2
    if not (math.isfinite(norm) and norm > 0):
        return math.nan, cosine  # (values out of range for the energy: nothing to decide from)
    u *= 1.0 / norm
    for k in range(iterations):
        apply(u, w)
        half = allreduce(comm, energy(w))
        rho = math.sqrt(2.0 * half) if half >= 0 else math.nan
        if not (math.isfinite(rho) and rho > 0):
            return rho, cosine  # (the same on every rank: the values are reduced)
        if k == iterations - 1:  # Re <L u, u> = E(u + w) - E(u) - E(w), with ||u|| = 1
            w += u
            cosine = (allreduce(comm, energy(w)) - 0.5 - half) / rho
        else:
            xp.multiply(w, 1.0 / rho, out=u)
    return _significant(rho), round(min(max(cosine, -1.0), 0.0), 3)


def box_elements(geometry, comm) -> bool:
    """Collective: every element of the mesh is an axis-aligned rectangular box (affine, each
    reference direction along one coordinate axis)."""
    metrics = np.abs(np.asarray(geometry.metrics)[..., 0, 0, 0])  # (3, 3, E): constant where affine
    scale = metrics.max(axis=1, keepdims=True)
    along_one_axis = np.all(np.count_nonzero(metrics > 1e-12 * scale, axis=1) == 1)
    local = bool(np.all(np.asarray(geometry.affine, dtype=bool)) and along_one_axis)
    return bool(allreduce(comm, int(local), "min"))


def check_step(case, system, scheme, comm, dt: float, min_spacing: float, rank: int = 0) -> tuple[float, dict | None]:
    """Collective: (dt, record) with dt shortened where dt rho is over THRESHOLD of the
    integrator's reach (module docstring); InputError for a [time] dt over it. record (summary.json's step_check)
    is {"skipped": ...} with cfl_check = false, and None where nothing was checked: a system without
    homogeneous_operator(), a scheme without a stability polynomial in STABILITY_RADII, and
    meshes of axis-aligned box elements only: the cfl bounds were calibrated on cubes, and a
    box of other sides has a smaller spectral radius than the cube of its shortest side (the
    estimate would cost about 10 steps' time for nothing)."""
    if not case.time.cfl_check:
        return dt, ({"skipped": "[time] cfl_check = false"} if system.homogeneous_operator() is not None else None)
    if (scheme.name not in STABILITY_RADII
            or system.homogeneous_operator() is None or box_elements(system.geometry, comm)):
        return dt, None
    start = time.perf_counter()
    rho, cosine = estimate(system, comm)
    angle = math.acos(cosine)
    radius = reach(scheme, angle)
    record = {"spectral_radius": rho, "direction_degrees": round(math.degrees(angle), 1),
              "reach": round(radius, 4), "iterations": ITERATIONS, "dt_rho": dt * rho, "dt_checked": dt,
              "shortened": False, "seconds": time.perf_counter() - start}
    if not math.isfinite(rho):  # (summary.json holds no NaN)
        record.update(spectral_radius=None, dt_rho=None)
    if not (math.isfinite(rho) and dt * rho > THRESHOLD * radius):
        return dt, record
    stable = _significant((1 - MARGIN) * radius / rho, 3, down=True)
    wave = system.wave_speed
    why = (f"the operator's largest eigenvalue, estimated by {ITERATIONS} power iterations, has modulus "
           f"{rho:.4g} (direction {math.degrees(angle):.0f} degrees), and dt times it must stay within "
           f"{THRESHOLD} x {radius:.3f}, the reach of the {scheme.name} stability region that way "
           "(distorted elements make it larger than cfl h_min / c says)")
    if case.time.dt is not None:
        raise InputError(f"{case.source}: [time] dt = {dt:.4g} is over the stable step of this mesh: {why}; "
                         f"lower it (stable dt <= {stable:.4g}), or set [time] cfl_check = false to run anyway")
    record.update(shortened=True, dt=stable, cfl=stable * wave / min_spacing, dt_rho=stable * rho)
    if rank == 0:
        print(f"lobatto: the time step is shortened from dt = {dt:.4g} (cfl {dt * wave / min_spacing:.3g}) to "
              f"{stable:.4g} (cfl {record['cfl']:.3g}): {why}; [time] cfl_check = false skips this check",
              flush=True)
    return stable, record


def check_kept(case, record: dict | None, dt: float) -> dict | None:
    """A restart's dt (the checkpoint's, which goes on) against the estimate made at set-up
    (record from check_step, or None where nothing was checked): InputError where dt rho is
    over THRESHOLD of the reach (the case's [physics] values may have changed); else the record
    of the step taken (not shortened: a restart keeps its dt)."""
    if record is None or record.get("spectral_radius") is None:
        return record
    rho, radius = record["spectral_radius"], record["reach"]
    if dt * rho > THRESHOLD * radius:
        stable = _significant((1 - MARGIN) * radius / rho, 3, down=True)
        raise InputError(f"{case.source}: the checkpoint's dt = {dt:.4g} is over the stable step of this case on "
                         f"this mesh (the operator's largest eigenvalue has modulus {rho:.4g}; dt times it must "
                         f"stay within {THRESHOLD} x {radius:.3f}, the integrator's reach that way: stable dt <= "
                         f"{stable:.4g}); restart with the old [physics] values, or set [time] cfl_check = false "
                         "to continue anyway")
    kept = {key: value for key, value in record.items() if key not in ("dt", "cfl")}
    kept.update(dt_checked=dt, dt_rho=dt * rho, shortened=False, kept_from_checkpoint=True)
    return kept
