"""Total-field/scattered-field plane waves with the Galerkin volume form (galerkin.py).

The collocated forms' correction (tfsf.py) is a flux correction lifted by their lumped face
mass; the Galerkin form lifts its face fluxes with V^T (w sJ) at Q x Q Gauss points and then
M_W^-1, so its correction is built from its own face operator instead. Its flux is linear in
the jump [u] = own - neighbour at the face's GLL nodes (galerkin.WeightAdjustedOperator.face_load:
2 own - sums). At a face of the TF/SF surface the neighbour holds the other formulation:

    inside  (neighbour holds u_s = u_t - u_inc):   true [u] = [u] - u_inc
    outside (neighbour holds u_t = u_s + u_inc):   true [u] = [u] + u_inc

(tfsf.py's convention: s = +1 inside, -1 outside, true [u] = [u] - s u_inc). So the
correction of the rate is S = M_W^-1 jump_load(-s u_inc) on the surface's elements: the
Galerkin form's flux of the incident field's jump at the surface's GLL face nodes, lifted and
inverted element by element (M_W^-1 is local). It equals correcting the neighbour's values in
the exchanged sums, done as a StageTerm after the kernels, so the C and CUDA Galerkin kernels
are unchanged and the term runs as array code on the backend over the surface's elements
(each rank its own faces: no exchange). Only the analytic incident field: the discrete one
(tfsf_discrete.py) steps the collocated operator alongside (plane_waves.py refuses it).
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import face_shape
from lobatto.systems.dg import add_to_faces, face_values
from lobatto.systems.maxwell.region_surface import check_background, surface_signs
from lobatto.systems.maxwell.terms import StageTerm


class GalerkinTotalFieldScatteredField(StageTerm):
    """The Galerkin form's TF/SF correction of one plane wave (tfsf.PlaneWave) on the elements
    that touch its surface (a stateless term: prepare computes S at the stage's time)."""

    time_dependent = True
    energy_bounded = False  # it brings the incident wave's energy in

    def __init__(self, system, wave, inside: np.ndarray, comm=None, where: str = "case"):
        self.wave, self.name = wave, wave.term_name
        sign = surface_signs(system, inside)
        if allreduce(comm, int(np.count_nonzero(sign))) == 0:
            raise InputError(f"{where}: [{wave.table}] the total-field region has no face with the "
                             "scattered-field region (it holds no element, or every element)")
        element, face = np.nonzero(sign)
        self.surface_faces = (element, face)
        check_background(system, element, face, f"[{wave.table}] the total-field surface", where, comm)
        self.setup_storage(system, np.unique(element))
        self.faces_here = int(element.size)
        self.total_field_elements = int(np.count_nonzero(inside))
        if not self.count:  # a rank without surface faces: prepare and finish do nothing
            return
        xp, order, operator = system.backend.xp, system.order, system.galerkin
        position = np.searchsorted(self.elements, element)
        p, h = wave.face_fields(system.face_normals[:, element, face], element, face)  # (3, K, n, n) per unit w
        s = sign[element, face][:, None, None].astype(float)
        # the jump's change per unit amplitude w(tau): -s u_inc at each surface GLL face node
        self._gain = system.backend.asarray(np.concatenate([-s * p, -s * h]))  # the backend's precision
        self._delay = xp.asarray(wave.delay(face_values(np, system.geometry.coords, order)[:, element, face]))
        at = (xp.asarray(element), xp.asarray(face))
        self._normals = operator.normals[:, at[0], at[1]]  # (3, K, Q, Q)
        self._weights = operator.face_weights[at[0], at[1]]  # (K, Q, Q)
        self._at = (xp.asarray(position), at[1])
        self._faces = system.backend.zeros((6, self.count, system.mesh.num_faces) + face_shape(system.mesh.dim, order))

    def rates(self, u, t, s_out, r_out) -> None:
        system, xp = self.system, self.backend.xp
        operator = system.galerkin
        jump = self._gain * self.wave.profile(xp, t - self._delay)
        load_e, load_h = operator.jump_load(xp, jump[0:3], jump[3:6], self._normals, self._weights,
                                            system.epsilon, system.mu, system.alpha)
        faces, (position, face) = self._faces, self._at
        faces[0:3, position, face] = load_e
        faces[3:6, position, face] = load_h
        s_out[...] = 0
        add_to_faces(s_out, faces, system.order)
        s_out[...] = operator.element_inverse_mass(xp, s_out, self.device_elements)

    def describe(self, comm=None) -> dict:
        return {"type": "plane_wave (total-field/scattered-field, Galerkin form)", **self.wave.describe(),
                "total_field_elements": int(allreduce(comm, self.total_field_elements)),
                "surface_faces": int(allreduce(comm, self.faces_here)),
                "elements": int(allreduce(comm, self.count))}
