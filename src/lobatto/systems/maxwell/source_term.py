"""The ``[source.<name>]`` currents and dipoles (sources.py) as a StageTerm (terms.py), so that
a case with sources keeps the fused whole-step CUDA path (fused.py) and its graph replay.

S(t) = (-J/eps, -M/mu) depends on t alone, so it holds no auxiliary fields and is linear in
nothing: after a stage kernel ``finish`` adds residual += dt S, u += b dt S on the source's
elements (sources.py's arithmetic, unchanged on the CPU); on the fused path a stage whose a
is not 0 ``fold``s (dt/a) S into the residual before the kernel (terms.py). On CUDA each
dipole is one kernel over its element's points (source_cuda.DipoleAdd) that evaluates the
waveform itself; a current's expressions run as array operations on its elements, whose
traces the system then rewrites (MaxwellSystem.refresh_traces). On the fused path the stage
time is read from the stepper's device clock (``system.stage_clock``), so a step of a case
with sources may be recorded as a CUDA graph and replayed (``reads_clock``).
"""

from __future__ import annotations

import numpy as np

from lobatto.systems.maxwell.terms import StageTerm


class SourceTerm(StageTerm):
    """One rank's sources around the stage kernel; see the module docstring."""

    name = "sources"
    time_dependent = True
    energy_bounded = False  # a source brings energy in: the driver's energy stop is off

    def __init__(self, sources, system):
        backend = system.backend
        self.sources, self.system, self.backend = sources, system, backend
        self.elements, self.index = sources.elements, sources.index
        self.device_elements = backend.asarray(self.elements, dtype=np.int64)
        self.rate = self.aux = self.aux_rate = self.aux_residual = None
        self.dipole_kernels = None  # CUDA: one DipoleAdd per dipole on this rank
        self.reads_clock = backend.name == "cuda"  # the same on every rank (fused.py asks)
        self._time = 0.0
        if backend.name != "cuda":
            return
        from lobatto.systems.maxwell.source_cuda import DipoleAdd

        start = sources.components.start
        self.dipole_kernels = [
            DipoleAdd(backend, system.order, int(self.elements[slot]), start + field,
                      np.asarray(backend.to_host(profile)), values["waveform"], values, dim=system.mesh.dim)
            for values, field, slot, profile in sources.dipoles]
        self.folds = True
        # the dipole kernels rewrite their points' traces; a current's elements need the
        # system's pass (MaxwellSystem.refresh_traces) after its array operations
        self.writes_traces = not sources.currents

    def _clock(self, t):
        """The stage time: the fused path's device clock where it runs, else the number t."""
        clock = getattr(self.system, "stage_clock", None)
        return t if clock is None else clock

    def prepare(self, u, t) -> None:
        self._time = self._clock(t)

    def finish(self, u, residual, a, b, dt, traces=None) -> None:
        if not self.count:
            return
        if self.dipole_kernels is None:  # sources.py's stage, as before the term existed
            self.sources.add_to_stage(u, residual, self._time, b, dt)
            return
        self._currents(u, residual, self._time, dt, b)
        normals = self.system.device_geometry["normals"] if traces is not None else None
        for kernel in self.dipole_kernels:
            kernel(u, residual, self._time, a, b, dt, traces, normals)

    def fold(self, u, residual, t, a, b, dt) -> None:
        if not self.count:
            return
        clock = self._clock(t)
        self._currents(None, residual, clock, dt / a, None)
        for kernel in self.dipole_kernels:
            kernel(u, residual, clock, a, b, dt, fold=True)

    def _currents(self, u, residual, t, scale, b) -> None:
        """residual += scale S_J and (with u) u += b scale S_J for the currents (array code)."""
        if not self.sources.currents:
            return
        rate = self.sources.rate(t, dipoles=False)
        sources = self.sources
        rate *= scale
        residual[sources.components, sources.index] += rate
        if u is not None:
            rate *= b
            u[sources.components, sources.index] += rate

    def rates(self, u, t, s_out, r_out) -> None:  # (unused: prepare/finish/add_to_rhs are its own)
        raise NotImplementedError

    def add_to_rhs(self, u, t, out) -> None:
        self.sources.add_to_rhs(out, t)

    def describe(self, comm=None) -> dict:
        return {}
