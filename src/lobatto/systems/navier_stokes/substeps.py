"""Operator-integration-factor sub-stepping (OIFS, the method of characteristics of Maday,
Patera and Rønquist, as Nek5000 and nekRS): the advection term of a BDFk step integrated by
RK4 sub-steps instead of extrapolated, so that a step may go at a CFL number of a few.

BDFk approximates du/dt(t^{n+1}) by sum_j bdf_j u^{n+1-j} / dt. With sub-stepping each lagged
field is replaced by its value carried along the characteristics of the flow to t^{n+1}: the
solution at t^{n+1} of

    dw/ds = -B^-1 QQ^T C(U(s), w),   w(t^{n+1-j}) = u^{n+1-j}

(C the dealiased weak convective term, QQ^T the direct-stiffness sum, B the assembled mass,
as Nek does), so that the advection term leaves the step's forcing. The operator is linear in
w, so one integration serves every lagged field (Nek's nested form): w starts as
bdf_k u^{n+1-k} at t^{n+1-k}; at each later time level t^{n+1-j} it gains bdf_j u^{n+1-j};
at t^{n+1} it is sum_{j>=1} bdf_j u~^{n+1-j}. Each of the k intervals takes ``substeps``
classical RK4 sub-steps, so a step costs 4 * substeps * k convective evaluations per field
set (the velocity; the passive scalars, when there are some, as many again).

The advecting velocity U(s) is the Lagrange interpolant in time (extrapolant beyond t^n) of
the stored u^n, ..., u^{n+1-k} at their own times (variable steps work). It enters only as the
fine-grid contravariant velocity of ``Advection.contravariant``, which is linear in u: the
contravariant field of each stored velocity is made once, when it is stored, and the one of
U(s) is their combination with the interpolation weights (k - 1 multiply-adds of fine fields,
once per distinct stage time), so a stage costs one ``Advection.convective_with``, one
direct-stiffness sum and a few vector updates. Buffers are allocated once per field count.
"""

from __future__ import annotations

import numpy as np


def lagrange_weights(nodes, s: float) -> np.ndarray:
    """(len(nodes),) the Lagrange basis on ``nodes`` evaluated at s (interpolation or extrapolation)."""
    nodes = [float(x) for x in nodes]
    out = np.ones(len(nodes))
    for i, xi in enumerate(nodes):
        for m, xm in enumerate(nodes):
            if m != i:
                out[i] *= (s - xm) / (xi - xm)
    return out


class SubStepper:
    """The sub-stepped BDF sum of one flow (see the module docstring).

        sub = SubStepper(advection, assembly, inverse_assembled_mass, backend, substeps, levels=k)
        sub.push(u_n)                          # each step, u^n's contravariant velocity stored
        sub.plan(dt, previous_dts, k)          # the step's stage times and weights
        total = sub.advected_sum(lagged, bdf)  # sum_{j>=1} bdf_j u~^{n+1-j}, lagged newest first

    ``levels``: the most stored velocities (the integrator's order). ``reset(velocities,
    pushes)`` remakes the stored contravariant velocities (after a restart).
    """

    def __init__(self, advection, assembly, inverse_assembled_mass, backend, substeps: int, levels: int,
                 relaxation=None):
        self.advection, self.assembly, self.backend = advection, assembly, backend
        self.relaxation = relaxation
        self.substeps, self.levels = int(substeps), int(levels)
        xp = backend.xp
        self.negative_inverse_mass = -inverse_assembled_mass
        elements = inverse_assembled_mass.shape[0]
        self.fine_shape = (advection.dim, elements) + advection.fine_shape  # (2, E, 1, M, M) in 2-D
        # the stored contravariant velocities, one row per slot; order[j] is the slot of u^{n-j}
        self.stack = xp.zeros((self.levels, int(np.prod(self.fine_shape))), dtype=advection.dtype)
        self.order: list[int] = []
        self.pushes = 0
        self.stage_velocity = xp.empty(self.fine_shape, dtype=advection.dtype)
        self.term_velocity = xp.empty(self.fine_shape, dtype=advection.dtype) if self.levels > 1 else None
        self.buffers: dict = {}  # field count -> (w, stage, sum, derivative)
        self.weights = None
        self.evaluations = 0  # convective evaluations so far (the cost, for tests and reports)

    # Stored velocities -------------------------------------------------------------------
    def push(self, velocity) -> None:
        """u^n (3, E, n, n, n): its contravariant velocity into the oldest slot, now the newest.
        The slots go round in turn (push p uses slot p mod levels), so that a restarted run
        combines them in the same order as the uninterrupted one (the same bits)."""
        slot = self.pushes % self.levels
        self.pushes += 1
        self.advection.contravariant(velocity, out=self.stack[slot].reshape(self.fine_shape))
        self.order = [slot] + [j for j in self.order if j != slot][:self.levels - 1]

    def reset(self, velocities, pushes: int) -> None:
        """Remake the stored contravariant velocities from ``velocities`` (newest first), the
        newest being push number ``pushes`` (the steps taken: one push per step)."""
        stored = list(velocities)[:self.levels]
        self.order, self.pushes = [], pushes - len(stored)
        for velocity in reversed(stored):
            self.push(velocity)

    # One step -----------------------------------------------------------------------------
    def plan(self, dt: float, previous_dts, k: int) -> None:
        """The stage times of the step t^n -> t^n + dt of order k (previous_dts: the earlier step
        sizes, newest first) and the weights of U(s) at each; times relative to t^{n+1}."""
        if len(self.order) < k:
            raise ValueError(f"sub-stepping needs {k} stored velocities, has {len(self.order)}")
        steps = [float(dt)] + [float(d) for d in previous_dts[:k - 1]]
        nodes = [-sum(steps[:j]) for j in range(1, k + 1)]  # times of u^n, u^{n-1}, ... (tau_1 .. tau_k)
        self.k, self.nodes = k, nodes
        s = self.substeps
        ends = [0.0] + nodes  # ends[j] = tau_j
        times = []
        for j in range(k, 0, -1):  # the interval from tau_j to tau_{j-1}, in 2 s half sub-steps
            h = (ends[j - 1] - ends[j]) / s
            times.extend(ends[j] + i * h / 2 for i in range(2 * s))
        times.append(0.0)
        self.times = times
        self.weights = np.array([lagrange_weights(nodes, time) for time in times])  # [stage, j] (host)
        self.at = None  # the stage whose U(s) is in stage_velocity

    def velocity_at(self, p: int):
        """The contravariant U(s) at stage time number p of the plan: sum_j l_j(s) U^{n-j}, in
        the order of j (elementwise operations: the same bits on any partition and restart)."""
        if self.k == 1:  # U = u^n: the stored field itself
            return self.stack[self.order[0]].reshape(self.fine_shape)
        if self.at != p:
            xp = self.backend.xp
            out, term = self.stage_velocity, self.term_velocity
            for j, slot in enumerate(self.order[:self.k]):
                stored = self.stack[slot].reshape(self.fine_shape)
                weight = float(self.weights[p, j])
                if j == 0:
                    xp.multiply(stored, weight, out=out)
                else:
                    xp.multiply(stored, weight, out=term)
                    out += term
            self.at = p
        return self.stage_velocity

    def advected_sum(self, lagged, bdf, relax: bool = True):
        """sum_{j=1..k} bdf[j] u~^{n+1-j}, each lagged field (c, E, n, n, n), newest first,
        carried to t^{n+1}; a buffer of this object, valid until the next call. ``relax``:
        with the filter's relaxation (the velocity; not the passive scalars, never filtered)."""
        k = self.k
        w, stage, _, _ = self._buffers(lagged[0].shape)
        xp = self.backend.xp
        xp.multiply(lagged[k - 1], bdf[k], out=w)
        for j in range(k, 0, -1):
            self._integrate(w, j, relax)
            if j > 1:
                xp.multiply(lagged[j - 2], bdf[j - 1], out=stage)
                w += stage
        return w

    def carry(self, field, j: int, relax: bool = True):
        """One field (c, E, n, n, n) carried from t^{n+1-j} to t^{n+1} (a copy; for tests)."""
        w = self._buffers(field.shape)[0]
        w[...] = field
        for level in range(j, 0, -1):
            self._integrate(w, level, relax)
        return w.copy()

    # RK4 -----------------------------------------------------------------------------------
    def _buffers(self, shape):
        key = tuple(shape)
        if key not in self.buffers:
            xp = self.backend.xp
            self.buffers[key] = tuple(xp.empty(key, dtype=self.advection.dtype) for _ in range(4))
        return self.buffers[key]

    def _rate(self, p, w, out, relax):
        """out = -B^-1 QQ^T [C(U(s_p), w) + R(w)], R the filter's relaxation (weak) if any."""
        self.advection.convective_with(self.velocity_at(p), w, out=out)
        if relax and self.relaxation is not None:
            out += self.relaxation(w)
        self.assembly.dssum(out)
        out *= self.negative_inverse_mass
        self.evaluations += 1
        return out

    def _integrate(self, w, j: int, relax: bool) -> None:
        """w from tau_j to tau_{j-1} in place: ``substeps`` classical RK4 sub-steps."""
        xp = self.backend.xp
        _, stage, total, rate = self._buffers(w.shape)
        s = self.substeps
        base = (self.k - j) * 2 * s
        h = ((0.0 if j == 1 else self.nodes[j - 2]) - self.nodes[j - 1]) / s
        for m in range(s):
            p = base + 2 * m
            self._rate(p, w, rate, relax)  # k1
            total[...] = rate
            xp.multiply(rate, h / 2, out=stage)
            stage += w
            self._rate(p + 1, stage, rate, relax)  # k2
            rate *= 2.0
            total += rate
            xp.multiply(rate, h / 4, out=stage)
            stage += w
            self._rate(p + 1, stage, rate, relax)  # k3
            rate *= 2.0
            total += rate
            xp.multiply(rate, h / 2, out=stage)
            stage += w
            self._rate(p + 2, stage, rate, relax)  # k4
            total += rate
            total *= h / 6
            w += total
