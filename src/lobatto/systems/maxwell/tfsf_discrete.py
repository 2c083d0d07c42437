"""TF/SF with the discrete incident wave (``[source.<name>] incident_field = "discrete"``).

The analytic variant (tfsf.py) corrects both sides of the surface with the analytic wave.
Downstream of the total-field region that leaves, in the scattered-field region, the
discretisation error of the wave that crossed it (the scattered-field element reads the
total-field trace, which carries the discrete wave, minus the analytic one). Here the
scattered-field side is corrected with the discrete wave itself, so without a scatterer the
scattered-field region holds round-off, upstream and downstream, for the whole run.

Alongside the run, an auxiliary state v (6 fields) on the total-field elements is the
scatterer-free discrete wave:

    dv/dt = L_bg(v) + C_TF          (total-field elements; v = 0 elsewhere)

with L_bg the core operator in the uniform background (the [physics] eps, mu: no medium,
no sources, no other terms; MaxwellSystem.background_rhs) applied to v extended by zero, and
C_TF the analytic correction of the total-field side (tfsf.py). Without a scatterer the
total-field elements of the run see exactly this (their scattered-field neighbours hold 0),
so they equal v to round-off. The scattered-field elements that touch the surface get

    S = -L_bg(v)   (there, where v = 0: the surface flux of v's total-field trace)

which cancels what they receive from their total-field neighbours when there is no
scatterer. The total-field side keeps the analytic correction C_TF.

The term's elements are the total-field elements and the scattered-field elements that touch
the surface (v stays 0 on the latter). v steps with the 2N-storage stage (terms.py), is
checkpointed (``history``) and so needs lsrk45. Cost: one more evaluation of the core
operator over all elements per stage, with its face exchange (collective: every rank runs
it every stage), and two full-size 6-field arrays. On CUDA the rest of the stage runs in
kernels (tfsf_cuda.DiscreteIncidentStage, SurfaceAdd); ``rates`` is the reference.
"""

from __future__ import annotations

import numpy as np

from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import element_shape
from lobatto.systems.maxwell.terms import StageTerm
from lobatto.systems.maxwell.terms_cpu import term_kernels
from lobatto.systems.maxwell.tfsf import TotalFieldScatteredField, backend_host


class DiscreteIncidentTFSF(StageTerm):
    """One plane wave whose scattered-field side is corrected with its discrete wave."""

    time_dependent = True
    energy_bounded = False  # it brings the incident wave's energy in
    aux_count = 6
    aux_names = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")  # of the discrete incident wave

    def __init__(self, system, wave, inside: np.ndarray, comm=None, where: str = "case"):
        # the analytic term: the surface, its checks and the total-field side's correction
        # (its array path, ``rates``; it is not added to the system)
        self.analytic = TotalFieldScatteredField(system, wave, inside, comm, where)
        self.wave, self.name = wave, self.analytic.name
        inside = np.asarray(inside, dtype=bool)
        surface = self.analytic.elements
        scattered_surface = surface[~inside[surface]]
        self.setup_storage(system, np.union1d(np.flatnonzero(inside), scattered_surface))
        self.total_field_elements = int(np.count_nonzero(inside))
        backend = system.backend
        on_total = inside[self.elements]

        def index(values):
            return backend.asarray(np.asarray(values, dtype=np.int64), dtype=np.int64)

        # positions in this term's list, and the element ids they stand for
        self._total_at, self._total = index(np.flatnonzero(on_total)), index(self.elements[on_total])
        self._scattered_at, self._scattered = index(np.flatnonzero(~on_total)), index(self.elements[~on_total])
        # the analytic term's total-field elements: their positions there and here
        mine = inside[surface]
        self._analytic_from = index(np.flatnonzero(mine))
        self._analytic_to = index(np.searchsorted(self.elements, surface[mine]))
        shape = (6, system.num_elements) + element_shape(system.mesh.dim, system.order)
        self._v = backend.zeros(shape)  # v on every element: 0 outside the total-field region
        self._lv = backend.zeros(shape)  # L_bg(v)
        self.kernels = None
        if backend.name == "cuda" and self.count:
            self.setup_kernels(system, inside, on_total)
        # on the CPU: the 2N-storage update of u and v in one compiled pass (terms_cpu.py)
        self.compiled = term_kernels(system) if self.count else None

    def setup_kernels(self, system, inside, on_total) -> None:
        """CUDA: the stage in kernels (tfsf_cuda.DiscreteIncidentStage) and the surface's
        analytic correction by two SurfaceAdd kernels, one on u and one on v (compact), over
        the surface faces of the total-field elements; the array path below is the reference."""
        from lobatto.systems.maxwell.tfsf_cuda import DiscreteIncidentStage, SurfaceAdd

        analytic, wave, order = self.analytic, self.wave, self.system.order
        self.kernels = DiscreteIncidentStage(system.backend, order, self.elements, on_total, dim=system.mesh.dim)
        element, face = analytic.surface_faces
        mine = inside[element]
        gain = np.concatenate([backend_host(system, analytic._gain_e), backend_host(system, analytic._gain_h)])[:, mine]
        delay = backend_host(system, analytic._delay)[mine]

        def surface(ids):
            return SurfaceAdd(system.backend, order, ids, face[mine], gain, delay, wave.waveform, wave.params,
                              wave.amplitude, dim=system.mesh.dim)

        self.surface_u = surface(element[mine])
        self.surface_v = surface(np.searchsorted(self.elements, element[mine]))
        self.rate = self.aux_rate = None  # the kernels need neither
        self.writes_traces = True  # the fused path passes its trace buffer to finish (terms.py)

    def prepare(self, u, t) -> None:
        if self.kernels is not None:
            self.kernels.spread(self.aux, self._v)
        elif self.count:
            self._v[:, self._total] = self.aux[:, self._total_at]
        self.system.background_rhs(self._v, self._lv)  # collective: on every rank, every stage
        if self.kernels is not None:
            self._stage_time = t
        else:
            super().prepare(u, t)

    def finish(self, u, residual, a, b, dt, traces=None) -> None:
        if self.kernels is None and self.compiled is not None:
            return self.compiled.finish(u, residual, self.rate, self.aux, self.aux_residual, self.aux_rate,
                                        self.elements, 6, a, b, dt)
        if self.kernels is None:
            return super().finish(u, residual, a, b, dt)
        normals = self.system.device_geometry["normals"] if traces is not None else None
        self.kernels.finish(self._lv, u, residual, self.aux, self.aux_residual, a, b, dt, traces, normals)
        t = self._stage_time
        self.surface_u(u, residual, t, a, b, dt, traces, normals)
        self.surface_v(self.aux, self.aux_residual, t, a, b, dt)

    def rates(self, u, t, s_out, r_out) -> None:
        lv = self._lv
        r_out[...] = 0
        r_out[:, self._total_at] = lv[:, self._total]
        s_out[...] = 0
        s_out[:, self._scattered_at] = -lv[:, self._scattered]
        analytic = self.analytic
        if analytic.count:
            analytic.rates(u, t, analytic.rate, None)
            correction = analytic.rate[:, self._analytic_from]
            s_out[:, self._analytic_to] = correction
            r_out[:, self._analytic_to] += correction

    def describe(self, comm=None) -> dict:
        out = self.analytic.describe(comm)
        out.update(incident_field="discrete", elements=int(allreduce(comm, self.count)), auxiliary_fields=self.aux_count)
        return out
