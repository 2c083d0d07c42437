"""A test-only system for the multistep path: at every grid point, independently,

    du/dt = -rate u + N(u, t, x),   N = g(t, x) - u^2,

BDF for du/dt with -rate u implicit, N extrapolated (EXT), each point solved on its own (the
shape of a Navier-Stokes step without the solves). g is chosen so that

    u(x, t) = (1 + x / 2) (1 + sin(omega t) / 2)       exactly.

Its CFL number is ``speed * dt * max|u| / (smallest GLL spacing)``: it follows |u|, so a target
CFL gives steps that vary by a factor 3 over a period. ``register()`` makes it available to
case files as ``[physics] equations = "test_multistep"``.
"""

from __future__ import annotations

import numpy as np

from lobatto.config.physics import Key, PhysicsSpec
from lobatto.machine.parallel import allreduce
from lobatto.systems.base import System
from lobatto.systems.registry import SYSTEMS, register, unregister

NAME = "test_multistep"
OMEGA = 3.0


def exact(x, t):
    return (1 + x / 2) * (1 + np.sin(OMEGA * t) / 2)


def exact_rate(x, t):
    return (1 + x / 2) * OMEGA * np.cos(OMEGA * t) / 2


class MultistepTestSystem(System):
    spec = PhysicsSpec(
        name=NAME,
        description="test only: pointwise du/dt = -rate u + g - u^2 with BDF/EXT",
        fields=("u",),
        boundary_kinds=("none",),
        default_boundary="none",
        keys=(Key("rate", "positive", 5.0, "the implicit decay rate"),
              Key("speed", "positive", 1.0, "CFL number per (dt max|u| / spacing)")),
        fluxes=("none",),
        integrators=("bdf2", "bdf1", "bdf3"),
        default_integrator="bdf2",
    )
    time_dependent = True

    def __init__(self, mesh, geometry, backend, comm, rate, speed):
        self.mesh, self.geometry, self.backend, self.comm = mesh, geometry, backend, comm
        self.order = geometry.coords.shape[-1] - 1
        self.num_elements = geometry.coords.shape[1]
        self.points = int(geometry.coords[0].size)
        self.rate, self.speed = rate, speed
        self.x = backend.asarray(geometry.coords[0])
        self.spacing = float(geometry.min_spacing)
        shape = (self.num_elements,) + (self.order + 1,) * 3
        self.u_past = backend.zeros((2,) + shape)  # u^{n-1}, u^{n-2}
        self.n_past = backend.zeros((3,) + shape)  # N^n, N^{n-1}, N^{n-2}
        self.report = {}

    @classmethod
    def from_case(cls, case, mesh, geometry, backend, comm=None):
        return cls(mesh, geometry, backend, comm, case.physics.rate, case.physics.speed)

    def explicit(self, u, t):
        x = self.x
        e = exact(x, t)
        return exact_rate(x, t) + self.rate * e + e * e - u * u

    def multistep_step(self, u, t, dt, bdf, ext):
        k = len(ext)
        self.n_past[1:] = self.n_past[:-1].copy()
        self.n_past[0] = self.explicit(u[0], t)
        history = [u[0], self.u_past[0], self.u_past[1]]
        rhs = sum(ext[j] * self.n_past[j] for j in range(k)) - sum(bdf[j] * history[j - 1] for j in range(1, k + 1)) / dt
        new = rhs / (bdf[0] / dt + self.rate)
        self.u_past[1] = self.u_past[0]
        self.u_past[0] = u[0]
        u[0] = new
        residual = allreduce(self.comm, float(abs((bdf[0] / dt + self.rate) * new - rhs).max()), "max")
        self.report = {"velocity_iterations": 1, "velocity_residual": residual, "order": k}

    def courant(self, u, dt) -> float:
        return float(self.speed * dt * abs(u).max() / self.spacing)

    def step_report(self) -> dict:
        return dict(self.report)

    def history(self) -> dict:
        return {"u_past": self.u_past, "n_past": self.n_past}

    def restore_history(self, history: dict) -> None:
        self.u_past[...] = self.backend.asarray(history["u_past"])
        self.n_past[...] = self.backend.asarray(history["n_past"])

    def energy(self, u) -> float:
        return float(np.sum(self.geometry.mass * self.backend.to_host(u[0]) ** 2))


def registered():
    """Register the system (once); returns its class."""
    if SYSTEMS.get(NAME) is not MultistepTestSystem:
        register(MultistepTestSystem)
    return MultistepTestSystem


def case_dict(**time) -> dict:
    """A one-element periodic box at order 2 with u exact at t = 0 ([time] from the keywords)."""
    return {"physics": {"equations": NAME, "speed": 20.0},
            "mesh": {"elements": [1, 1, 1], "periodic": [True, True, True]},
            "discretization": {"order": 2},
            "initial": {"u": "1 + x/2"},
            "exact": {"u": f"(1 + x/2)*(1 + sin({OMEGA}*t)/2)"},
            "time": {"t_end": 2.0, **time},
            "output": {"formats": []}}


__all__ = ["MultistepTestSystem", "case_dict", "exact", "registered", "unregister", "NAME"]
