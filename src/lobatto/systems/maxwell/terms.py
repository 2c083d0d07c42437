"""Terms added to the Maxwell operator on some elements, around the (tuned) stage kernel.

    du/dt = L(u) + S(u, q, t)          dq/dt = R(u, q, t)      (on the term's elements)

L is the core SEDG operator (fused or tuned kernels, untouched); S is a term's contribution
on its elements only (dispersive polarisation currents, PML corrections, TF/SF flux
corrections) and q its auxiliary fields, kept compactly over those elements, so a term costs
in proportion to its element count. A 2N-storage stage (residual = a residual + dt L(u);
u += b residual) is linear in the rate, so a term computes S and R from the stage's input
state before the kernel (``prepare``) and adds them after it (``finish``):

    residual += dt S;  u += b dt S          q_res = a q_res + dt R;  q += b q_res

The whole-step CUDA path (fused.py) writes the traces of the updated u inside its kernel;
after a term changes u on its elements those elements' traces are rewritten
(``MaxwellSystem.refresh_traces``). Terms with auxiliary fields need a 2N-storage
integrator (lsrk45); stateless ones (TF/SF, sources) also add S in ``rhs`` for the other schemes.
On the fused path ``system.stage_clock`` is a device array (1,) holding the stage's time while
the terms of a stage run (None elsewhere); a term whose S depends on t and that reads it there
says ``reads_clock = True``, which lets a step be recorded as a CUDA graph (fused.py).

A subclass sets ``name``, ``elements`` (host ids on this rank), ``aux_count`` and implements
``rates(u, t, s_out, r_out)``: S into ``s_out`` (6, m, n, n, n) and R into ``r_out``
(aux_count, m, n, n, n), both for the compact element list.
"""

from __future__ import annotations

import numpy as np

from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import element_shape


def element_index(elements: np.ndarray, xp):
    """A slice where the elements are contiguous (views, no gather), else a device index."""
    elements = np.asarray(elements, dtype=np.int64)
    if elements.size and np.array_equal(elements, np.arange(elements[0], elements[0] + elements.size)):
        return slice(int(elements[0]), int(elements[0]) + elements.size)
    return xp.asarray(elements)


class StageTerm:
    """One term on a subset of elements; see the module docstring for the contract."""

    name = "term"
    aux_count = 0  # auxiliary fields per point
    aux_names: tuple = ()  # their names, for checkpoints and outputs
    changes_fields = True  # False: S is always zero (only q evolves), u is left alone
    # True where finish(..., traces) rewrites the traces of the points it changes (its CUDA
    # kernels do, on the fused path); otherwise the system rewrites its elements' traces
    writes_traces = False
    # True where fold() exists (its CUDA kernels): on the fused path, a stage whose a is not 0
    # calls fold before the stage kernel instead of prepare and finish around it
    folds = False
    # True where the term's fused-path calls read the stage time from system.stage_clock
    reads_clock = False

    def setup_storage(self, system, elements) -> None:
        backend = system.backend
        self.system, self.backend = system, backend
        self.elements = np.asarray(elements, dtype=np.int64)
        self.index = element_index(self.elements, backend.xp)
        self.device_elements = backend.asarray(self.elements, dtype=np.int64)  # for the CUDA kernels
        shape = (self.elements.size,) + element_shape(system.mesh.dim, system.order)
        m = self.elements.size
        self.rate = backend.zeros((6,) + shape) if m else None
        self.aux = backend.zeros((self.aux_count,) + shape) if m and self.aux_count else None
        self.aux_rate = backend.zeros((self.aux_count,) + shape) if m and self.aux_count else None
        self.aux_residual = backend.zeros((self.aux_count,) + shape) if m and self.aux_count else None

    @property
    def count(self) -> int:
        return int(self.elements.size)

    def take(self, array):
        """array[:, elements] (a view where contiguous)."""
        return array[:, self.index]

    # the contract ---------------------------------------------------------------------
    def rates(self, u, t, s_out, r_out) -> None:
        raise NotImplementedError

    def prepare(self, u, t) -> None:
        if self.count:
            self.rates(u, t, self.rate, self.aux_rate)

    def finish(self, u, residual, a, b, dt) -> None:
        if not self.count:
            return
        if self.changes_fields:
            s = self.rate
            s *= dt
            residual[:, self.index] += s
            s *= b
            u[:, self.index] += s
        if self.aux is not None:
            self.aux_residual *= a
            self.aux_residual += dt * self.aux_rate
            self.aux += b * self.aux_residual

    def fold(self, u, residual, t, a, b, dt) -> None:
        """Before a stage kernel that computes residual = a residual + dt L(u) with a != 0:
        residual += (dt / a) S(u, t), and the auxiliary fields' stage (they are not read by
        the kernel). The kernel then adds dt S with dt L, and u needs no second pass."""
        raise NotImplementedError

    def limit_time_step(self, dt: float, cfl: float) -> float:
        """The step to take instead of ``dt`` (the wave's step at ``cfl``) with this term;
        the same on every rank. Most terms leave it alone."""
        return dt

    def add_to_rhs(self, u, t, out) -> None:
        """For Butcher schemes: only stateless terms (checked when the stepper is built)."""
        if self.count:
            self.rates(u, t, self.rate, self.aux_rate)
            out[:, self.index] += self.rate

    # checkpoints and diagnostics ------------------------------------------------------
    def history(self) -> dict:
        """The auxiliary fields as (aux_count, E, n, n, n) over all this rank's elements
        (zero elsewhere), so that a restart may use other rank counts."""
        if not self.aux_count:
            return {}
        points = element_shape(self.system.mesh.dim, self.system.order)
        full = np.zeros((self.aux_count, self.system.num_elements) + points)
        if self.count:
            full[:, self.elements] = self.backend.to_host(self.aux)
        return {f"{self.name}/aux": full}

    def restore_history(self, history: dict) -> None:
        key = f"{self.name}/aux"
        if not self.aux_count:
            return
        if key not in history:
            raise ValueError(f"the checkpoint lacks {key}")
        if self.count:
            self.aux[...] = self.backend.asarray(np.asarray(history[key])[:, self.elements])
            self.aux_residual[...] = 0

    def energy(self) -> float:
        """Energy held by the auxiliary fields on this rank (0 where the term defines none)."""
        return 0.0

    def describe(self, comm=None) -> dict:
        return {"elements": int(allreduce(comm, self.count)), "auxiliary_fields": int(self.aux_count)}
