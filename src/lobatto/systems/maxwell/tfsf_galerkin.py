"""Total-field/scattered-field plane waves with the Galerkin volume form (galerkin.py).

The collocated forms' correction (tfsf.py) is a flux correction lifted by their lumped face
mass, which is not this form's lift (V^T w sJ at Q x Q Gauss points, then M_W^-1). But the
Galerkin flux is linear in the jump [u] = own - neighbour = 2 own - sums at the face's GLL
nodes (sums = own + neighbour from the exchange, WeightAdjustedOperator.face_load), and at a
face of the TF/SF surface the neighbour holds the other formulation:

    inside  (neighbour holds u_s = u_t - u_inc):   its true value is (sums - own) + u_inc
    outside (neighbour holds u_t = u_s + u_inc):   its true value is (sums - own) - u_inc

(tfsf.py's convention, s = +1 inside, -1 outside). So the correction is sums += s u_inc at
the surface's GLL face nodes, at the stage's time, after the exchange and before the kernel
(galerkin.correct_sums): the kernels (array code, C, CUDA) then lift it themselves, exactly
as they lift the rest of the flux. It costs one waveform evaluation per surface face node a
stage (array code on the backend; on CUDA a few small CuPy kernels), with no extra pass over
the elements, and each rank corrects its own faces' sums (no exchange).

The stage time: prepare(u, t) keeps it for the stage and finish drops it; the rhs path
(Butcher schemes) sets it around L (MaxwellSystem.rhs, at_time). Outside those, the sums are
left alone, so L stays linear for the step checks' power iterations. The Galerkin form has no
fused whole-step path (no device clock), so t is the host's. Only the analytic incident field:
the discrete one (tfsf_discrete.py) steps the collocated operator alongside (plane_waves.py
refuses it with this form). The incident field is any of tfsf.TotalFieldScatteredField's
interface (face_fields, delay, profile): a plane wave (plane_waves.py) or a port's mode
(port_launch.ModeWave, launched from its source plane).
"""

from __future__ import annotations

import numpy as np

from lobatto.machine.parallel import allreduce
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell import galerkin
from lobatto.systems.maxwell.terms import StageTerm
from lobatto.systems.maxwell.tfsf import surface_of


class GalerkinTotalFieldScatteredField(StageTerm):
    """The Galerkin form's TF/SF correction of one incident field (tfsf.PlaneWave, or a port's
    port_launch.ModeWave): the exchanged sums at its surface's face nodes gain s u_inc during
    a stage or an rhs."""

    time_dependent = True
    energy_bounded = False  # it brings the incident wave's energy in
    changes_fields = False  # u changes through the sums, in the Galerkin kernels: no S of its own
    corrects_sums = True  # galerkin.correct_sums calls correct(sums)

    def __init__(self, system, wave, inside: np.ndarray, comm=None, where: str = "case"):
        self.wave, self.name = wave, wave.term_name
        sign, element, face = surface_of(self, system, wave, inside, comm, where)
        self._time = None  # the stage's (or rhs's) time while one runs
        galerkin.correct_sums(system)
        if not self.count:  # a rank without surface faces: nothing to correct
            return
        xp, order = system.backend.xp, system.order
        p, h = wave.face_fields(system.face_normals[:, element, face], element, face)  # (3, K, n, n) per unit w
        s = sign[element, face][:, None, None].astype(float)
        self._gain = system.backend.asarray(np.concatenate([s * p, s * h]))  # the backend's precision
        self._delay = xp.asarray(wave.delay(face_values(np, system.geometry.coords, order)[:, element, face]))
        self._at = (xp.asarray(element), xp.asarray(face))

    def setup_storage(self, system, elements) -> None:
        super().setup_storage(system, elements)
        self.rate = None  # no S of its own (changes_fields): no (6, m, n, n, n) array

    def at_time(self, t) -> None:
        """Correct the sums at time t from now on (None: no more)."""
        self._time = t

    def correct(self, sums) -> None:
        """sums (6, E, faces, n, n) += s u_inc at the surface's face nodes."""
        if self._time is None or not self.count:
            return
        w = self.wave.profile(self.backend.xp, self._time - self._delay)  # (K, n, n)
        element, face = self._at
        sums[:, element, face] += self._gain * w

    def prepare(self, u, t) -> None:
        self.at_time(t)

    def finish(self, u, residual, a, b, dt, traces=None) -> None:
        self.at_time(None)

    def add_to_rhs(self, u, t, out) -> None:
        pass  # MaxwellSystem.rhs set the time around L, which took the correction

    def describe(self, comm=None) -> dict:
        wave = self.wave.describe()
        kind = wave.pop("type", "plane_wave (total-field/scattered-field)")  # a port's mode says what it is
        return {"type": f"{kind[:-1]}, Galerkin form)" if kind.endswith(")") else f"{kind} (Galerkin form)", **wave,
                "total_field_elements": int(allreduce(comm, self.total_field_elements)),
                "surface_faces": int(allreduce(comm, self.faces_here)),
                "elements": int(allreduce(comm, self.count))}
