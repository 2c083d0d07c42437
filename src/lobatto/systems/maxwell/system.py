"""The SEDG Maxwell system (seed paper eqs. (1)-(9)): declarative set-up over the backend.

    eps dE/dt =  curl H + lift * F_E        mu dH/dt = -curl E + lift * F_H

Volume terms by tensor-product derivatives and the chain rule (collocation at GLL points,
so the mass matrix is diagonal and cancels in the strong form); face terms from a
gather–scatter sum of -n x E and -n x H over face-point ids (fluxes.py, boundaries.py).

Across ranks the exchange overlaps work: elements [0, split) share no face point with
another rank, so a stage updates them while the exchange is in flight and the rest after it
(meshes from the driver hold their halo elements last: HexMesh.halo_last). ``overlap`` is
True, False or "auto"; this stage-by-stage path overlaps unless it is False (the CUDA
whole-step path times both at its first step under "auto": backends/cuda/fused.py).
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization import derivative_matrix
from lobatto.mesh import BOUNDARY_KINDS, compute_geometry, face_point_ids
from lobatto.systems.base import System
from lobatto.systems.maxwell import reference  # noqa: F401  (registers the reference kernels)
from lobatto.systems.maxwell.boundaries import BOUNDARY_FACTORS, INTERIOR_FACTORS
from lobatto.systems.maxwell.fluxes import FLUX_ALPHA

FIELD_NAMES = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")


def flops_per_step(order: int, points: int, stages: int = 5) -> float:
    """The seed paper's work model, W = [180(N+1) + 420] n per 5-stage step, scaled by stages."""
    return (180.0 * (order + 1) + 420.0) * points * stages / 5.0


class MaxwellSystem(System):
    field_names = FIELD_NAMES

    def __init__(self, mesh, order, backend, epsilon=1.0, mu=1.0, flux="upwind", comm=None, geometry=None,
                 exchange_method="auto", exchange="auto", overlap="auto"):
        from lobatto.comm import GatherScatter

        if flux not in FLUX_ALPHA:
            raise ValueError(f"unknown flux {flux!r}; expected one of {sorted(FLUX_ALPHA)}")
        self.mesh, self.order, self.backend = mesh, int(order), backend
        self.epsilon, self.mu, self.flux = float(epsilon), float(mu), flux
        self.alpha = FLUX_ALPHA[flux]
        self.wave_speed = 1.0 / np.sqrt(self.epsilon * self.mu)
        self.geometry = geometry if geometry is not None else compute_geometry(mesh, self.order)
        self.num_elements = mesh.num_elements
        n = self.order + 1
        self.points = self.num_elements * n**3

        factors = np.empty((2, self.num_elements, 6))
        factors[0], factors[1] = INTERIOR_FACTORS
        for kind_index, kind in enumerate(BOUNDARY_KINDS):
            on_kind = mesh.boundary_kind == kind_index
            factors[0][on_kind], factors[1][on_kind] = BOUNDARY_FACTORS[kind]

        g, to_dev = self.geometry, backend.asarray
        self.device_geometry = {
            "derivative": to_dev(derivative_matrix(self.order)),
            "metrics": to_dev(g.metrics),
            "normals": to_dev(g.normals),
            "lift": to_dev(g.lift),
            "face_factors": to_dev(factors),
            "affine": to_dev(g.affine, dtype=np.int8),
            "mass": to_dev(g.mass),
        }
        ids = face_point_ids(mesh, self.order)
        self.exchange = GatherScatter(ids.reshape(-1), comm=comm, method=exchange_method, xp=backend.xp,
                                      vn_hint=6, exchange=exchange)
        halo = self.exchange.shared_points() // (6 * n * n)  # elements of shared face points
        self.split = int(halo.min()) if halo.size else self.num_elements
        if not (isinstance(overlap, bool) or overlap == "auto"):
            raise ValueError(f'overlap must be True, False or "auto", not {overlap!r}')
        self.overlap = overlap
        self.trace_buffer = backend.zeros((6, self.num_elements, 6, n, n))
        self._traces = backend.kernel("maxwell_traces", order=self.order)
        self._rhs = backend.kernel("maxwell_rhs", order=self.order)
        self._fused_stage = backend.kernel("maxwell_stage", order=self.order) if backend.has_tuned("maxwell_stage") else None

    # Operator -----------------------------------------------------------------------------
    def exchange_traces(self, u):
        """Face traces of u, summed with the neighbours' (the flux exchange)."""
        self._traces(u, self.device_geometry["normals"], self.trace_buffer)
        self.exchange.apply(self.trace_buffer.reshape(6, -1), "sum")
        return self.trace_buffer

    def _with_exchange(self, u, update):
        """Traces, exchange, then ``update(elements)`` over all elements; with overlap the
        interior block [0, split) is updated between the exchange's start and finish."""
        split, count = self.split, self.num_elements
        if self.overlap is False or split == count:
            update(None, self.exchange_traces(u))
            return
        self._traces(u, self.device_geometry["normals"], self.trace_buffer)
        handle = self.exchange.start(self.trace_buffer.reshape(6, -1), "sum")
        if split:
            update((0, split), self.trace_buffer)  # reads only face sums already complete
        self.exchange.finish(handle)
        update((split, count), self.trace_buffer)

    def rhs(self, u, t, out):
        self._with_exchange(u, lambda elements, sums: self._rhs(
            u, sums, self.device_geometry, out, self.epsilon, self.mu, self.alpha, elements))
        return out

    def stage(self, u, residual, t, a, b, dt):
        if self._fused_stage is None:
            return super().stage(u, residual, t, a, b, dt)
        self._with_exchange(u, lambda elements, sums: self._fused_stage(
            u, residual, sums, self.device_geometry, self.epsilon, self.mu, self.alpha, a, b, dt, elements))

    # Set-up and diagnostics ---------------------------------------------------------------
    def allocate_state(self):
        return self.backend.zeros((6, self.num_elements) + (self.order + 1,) * 3)

    def evaluate_fields(self, expressions: dict, t: float) -> np.ndarray:
        """Host array (6, E, n, n, n) of the named expressions at time t (missing ones zero)."""
        x, y, z = self.geometry.coords
        values = np.zeros((6,) + x.shape)
        for c, name in enumerate(self.field_names):
            expr = expressions.get(name)
            if expr is not None:
                values[c] = expr.evaluate(np, x=x, y=y, z=z, t=np.float64(t))
        return values

    def energy(self, u) -> float:
        """Discrete electromagnetic energy 1/2 sum M (eps |E|^2 + mu |H|^2) on this rank."""
        xp, mass = self.backend.xp, self.device_geometry["mass"]
        e2 = xp.sum(mass * xp.sum(u[0:3] ** 2, axis=0), dtype=np.float64)
        h2 = xp.sum(mass * xp.sum(u[3:6] ** 2, axis=0), dtype=np.float64)
        return 0.5 * float(self.epsilon * e2 + self.mu * h2)

    def error_sums(self, u, exact_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per field: sum of M (u - exact)^2 and max |u - exact| on this rank (host arrays)."""
        diff = self.backend.to_host(u).astype(np.float64) - exact_values
        mass = self.geometry.mass
        squares = np.array([np.sum(mass * diff[c] ** 2) for c in range(6)])
        maxima = np.abs(diff).reshape(6, -1).max(axis=1)
        return squares, maxima

    def flops_per_step(self, stages: int = 5) -> float:
        return flops_per_step(self.order, self.points, stages)
