"""Exact solutions and mesh deformations shared by the CPU and GPU tests."""

from __future__ import annotations

import numpy as np

from lobatto.backends import get_backend
from lobatto.integrators import Stepper, get_scheme, plan_steps, stable_time_step
from lobatto.mesh import box_mesh

PI, SQRT2 = np.pi, np.sqrt(2.0)


class Fn:
    """A Python function standing in for a compiled case expression."""

    def __init__(self, f):
        self.f = f

    def evaluate(self, xp, x, y, z, t):
        return self.f(x, y, z, t)


# TM110 mode of the PEC unit cube.
CAVITY_TM110 = {
    "Ez": Fn(lambda x, y, z, t: np.sin(PI * x) * np.sin(PI * y) * np.cos(SQRT2 * PI * t)),
    "Hx": Fn(lambda x, y, z, t: -np.sin(PI * x) * np.cos(PI * y) * np.sin(SQRT2 * PI * t) / SQRT2),
    "Hy": Fn(lambda x, y, z, t: np.cos(PI * x) * np.sin(PI * y) * np.sin(SQRT2 * PI * t) / SQRT2),
}


def bump(x, y, z):
    """A smooth interior deformation of the unit cube that leaves its boundary in place."""
    b = 0.05 * np.sin(PI * x) * np.sin(PI * y) * np.sin(PI * z)
    return b, b, 0.0 * b


def build_system(system_class, elements=(2, 2, 2), order=5, deform=None, **kwargs):
    """A system of ``system_class`` on a CPU box mesh; box keywords go to the mesh, the rest
    to the system."""
    mesh_keys = {k: kwargs.pop(k) for k in ("periodic", "boundary", "boundaries", "lower", "upper") if k in kwargs}
    mesh = box_mesh(elements, deform=deform, **mesh_keys)
    return system_class(mesh, order, get_backend("cpu"), **kwargs)


def integrate(system, exact, t_end, dt=None, cfl=0.2, scheme="lsrk45"):
    """Start from ``exact`` at t = 0 and step to t_end; returns (u, t)."""
    u = system.backend.asarray(system.evaluate_fields(exact, 0.0))
    dt_max = dt or stable_time_step(cfl, system.geometry.min_spacing, system.wave_speed)
    steps, dt = plan_steps(t_end, dt_max)
    stepper = Stepper(system, get_scheme(scheme))
    for n in range(steps):
        stepper.step(u, n * dt, dt)
    return u, steps * dt
