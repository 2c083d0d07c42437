"""Conductivity in the time step.

With a conductivity sigma, eps dE/dt = curl H - sigma E: E decays at the rate sigma/eps
besides the waves, a real eigenvalue -sigma/eps of the operator that an explicit step must
keep inside its stability region, whatever the cfl. As for the PML's rates (pml.py), the
step keeps the wave's cfl the same fraction of the bound with the decay added:

    dt c / h / bound + dt * rate / reach <= cfl / bound        (rate = max sigma/eps)

where ``reach`` is REACH_FRACTION of the scheme's reach along the negative real axis (from
its stability polynomial). From ``[time] cfl`` the step is shortened to fit; a ``[time] dt``
beyond it is refused before the run, naming sigma and the stable step (unless
``cfl_check = false``).
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce

#: how far each Runge-Kutta scheme's stability region reaches along the negative real axis
#: (|R(-x)| <= 1 for 0 <= x <= reach; the stability polynomials of integrators/tables.py)
REAL_AXIS_REACH = {"lsrk45": 4.65, "rk4": 2.78, "ssprk3": 2.51}
#: the fraction of that reach the bound gives the decay. Measured edge of stability (a periodic
#: 2x2x2 box, order 3, upwind, random fields, 300 steps; docs/electromagnetics.md): dt sigma/eps
#: = 0.91, 0.55, 0.19 of the reach at cfl = 0.1, 0.5, 0.9 of its bound (lsrk45; rk4 0.91,
#: 0.56, 0.21), at or beyond the line (1 - cfl/bound) reach; 0.6 of it keeps a margin for other
#: meshes and fluxes
REACH_FRACTION = 0.6
#: the [pml] layer's own reach (pml.RATE_REACH), for a step checked with both
PML_REACH = 3.0


def loss_rate(system, comm=None) -> float:
    """max sigma/eps over the mesh (every rank the same; 0 without a conductor)."""
    medium = getattr(system, "medium", None)
    local = 0.0
    if medium is not None and medium.sigma.size and np.any(medium.sigma > 0):
        local = float(np.max(medium.sigma / medium.epsilon))
    return float(allreduce(comm, local, "max"))


def loss_time_step(dt: float, cfl: float, fit) -> float:
    """The step from the wave's step ``dt`` at ``cfl`` with the decay (module docstring)."""
    if fit is None:
        return dt
    rate, bound, reach = fit
    return dt / (1.0 + bound * dt * rate / (cfl * reach))


def loss_keys(case) -> str:
    """Where the conductivity comes from, for messages."""
    keys = ["[physics] sigma"] if case.physics.values.get("sigma", 0.0) else []
    tables = case.tables.get("material")
    keys += [f"[material.{t.name}] sigma" for t in (tables.tables if tables is not None else ()) if "sigma" in t.values]
    return " and ".join(keys) or "sigma"


def fit_loss_step(case, system, comm=None) -> None:
    """Sets ``system.loss_fit`` (rate, cfl bound, reach) for MaxwellSystem.stable_time_step;
    refuses a [time] dt too long for the decay (with the PML's rates, if any). Collective."""
    rate = loss_rate(system, comm)
    time = case.time
    bound = system.spec.cfl_bounds.get((case.discretization.flux, time.integrator))
    reach = REAL_AXIS_REACH.get(time.integrator)
    if not rate > 0 or bound is None or reach is None:
        return
    reach *= REACH_FRACTION
    system.loss_fit = (rate, bound, reach)
    if time.dt is None or not time.cfl_check:
        return
    spacing = float(allreduce(comm, system.geometry.min_spacing, "min"))
    speed = system.wave_speed
    layer = max((getattr(term, "largest_rate", 0.0) for term in system.terms), default=0.0)
    load = time.dt * speed / spacing / bound + time.dt * layer / PML_REACH + time.dt * rate / reach
    if load > 1 + 1e-12:
        # the longest dt with load 1
        stable = 1.0 / (speed / spacing / bound + layer / PML_REACH + rate / reach)
        error = InputError(
            f"{case.source}: [time] dt = {time.dt:.4g} is too long for the conductivity: sigma/epsilon = {rate:.4g} "
            f"({loss_keys(case)}) makes E decay faster than the {time.integrator} step can follow (dt sigma/epsilon "
            f"= {time.dt * rate:.3g}); the stable step is about {stable:.4g}: lower dt, or give cfl instead (the step "
            "is then fitted to sigma), or set [time] cfl_check = false to run anyway")
        error.collective = comm is not None
        raise error


#: how far each scheme's stability region reaches along the imaginary axis (|R(iy)| <= 1 for
#: |y| <= reach): a pole's rates are complex (an undamped Drude or Lorentz pole oscillates at
#: about its plasma or resonance frequency), so the smaller of the two reaches bounds dt * rate
IMAGINARY_AXIS_REACH = {"lsrk45": 3.34, "rk4": 2.82, "ssprk3": 1.73}


def check_pole_rates(case, system, comm=None) -> None:
    """A dispersive pole faster than the step can follow at all (dt * its fastest rate beyond
    the scheme's reach, whatever the cfl) is refused before the run, naming the table, rather
    than failing later blaming the cfl. Collective (the rates and dt are the same on every rank)."""
    time = case.time
    reach = min(REAL_AXIS_REACH.get(time.integrator, 0.0), IMAGINARY_AXIS_REACH.get(time.integrator, 0.0))
    if not time.cfl_check or not reach:
        return
    terms = [t for t in system.terms if getattr(t, "fastest_rate", 0.0) > 0]
    if not terms:
        return
    dt = time.dt
    if dt is None:
        dt = system.stable_time_step(time.cfl, float(allreduce(comm, system.geometry.min_spacing, "min")))
    for term in terms:
        if dt * term.fastest_rate > reach:
            error = InputError(
                f"{case.source}: [material.{term.label}] poles: their fastest rate {term.fastest_rate:.4g} (angular, "
                f"with epsilon) times the step dt = {dt:.4g} is {dt * term.fastest_rate:.3g}, beyond the {time.integrator} "
                f"scheme's reach {reach}: lower the pole frequencies, or the step below dt = {reach / term.fastest_rate:.4g} "
                f"([time] dt, or a [time] cfl {reach / (dt * term.fastest_rate):.3g} times the present one's)")
            error.collective = comm is not None
            raise error

