"""Total-field/scattered-field plane-wave injection (``[source.<name>] type = "plane_wave"``).

The mesh is split by a closed surface of element faces: inside it (a box [lower, upper]
whose sides lie on element faces, or a named volume region of an imported mesh) the state
is the total field, outside it the scattered field. At a face of that surface each side
receives the neighbour's trace in the other formulation, so the exchanged sums
S_E = -n x [E], S_H = -n x [H] ([q] = q- - q+) lack the incident field's jump:

    inside  (neighbour holds E_s = E_t - E_inc):   true S = S + n x E_inc
    outside (neighbour holds E_t = E_s + E_inc):   true S = S - n x E_inc

(n the element's own outward normal). The surface terms are linear in the sums, so the
correction is lift * F(s n x E_inc, s n x H_inc) at those face points (s = +1 inside,
-1 outside; F the uniform flux of fluxes.py), a StageTerm without auxiliary fields on the
elements that touch the surface. Per face point it is w(tau) times a fixed vector, so a
stage costs one waveform evaluation per surface point.

The incident wave, in the background medium (the [physics] epsilon, mu; the surface must
lie where the medium is that one, checked at its points), with c = 1/sqrt(eps mu),
Z = sqrt(mu/eps):

    E_inc = amplitude * p * w(tau),   H_inc = k x E_inc / Z,   tau = t - k . (x - origin) / c

with k the unit direction, p the unit polarisation (perpendicular to k) and w a waveform of
waveforms.py (the wave passes ``origin`` at tau = t; a continuous wave is zero for tau < 0).
The surface's elements, faces and signs are region_surface.py's; plane_waves.py builds the
terms (this one, or tfsf_discrete.py's with the discrete incident field).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from lobatto.config.physics import Key
from lobatto.config.ranges import COORDINATES, box_length, check_vector, unit_vector
from lobatto.config.toolkit import Table, choice, key_value
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import face_shape
from lobatto.systems.dg import add_to_faces, face_values
from lobatto.systems.maxwell.region_surface import (check_background, elements_in_box, elements_in_region,
                                                   surface_signs)
from lobatto.systems.maxwell.terms import StageTerm
from lobatto.systems.maxwell.terms_cpu import term_kernels
from lobatto.systems.maxwell.waveforms import AMPLITUDE, DIRECTION, WAVEFORM_KEYS, WAVEFORMS, waveform_array

#: what corrects the scattered-field side of the surface: the analytic wave, or the discrete
#: scatterer-free wave stepped alongside on the total-field elements (tfsf_discrete.py)
INCIDENT_FIELDS = ("analytic", "discrete")
#: the keys of a [source.<name>] of type "plane_wave"; its waveform takes some of WAVEFORM_KEYS
PLANE_WAVE = Table("source.<name>", (
    Key("type", "choice", None, "what the source is", choices=("plane_wave",), required=True),
    Key("direction", "vector", None, "the unit vector k the wave travels along, a list of 3 numbers", required=True,
        range=DIRECTION),
    Key("polarization", "vector", None, "the direction of E, perpendicular to direction, a list of 3 numbers",
        required=True, range=DIRECTION),
    AMPLITUDE,
    Key("origin", "vector", [0.0, 0.0, 0.0], "where the wave's time argument is t", range=COORDINATES),
    Key("lower", "vector", None, "lower corner of the total-field box", range=COORDINATES),
    Key("upper", "vector", None, "upper corner of the total-field box", range=COORDINATES),
    Key("region", "string", None, "a volume region of the mesh as the total-field region"),
    Key("waveform", "choice", None, "w", choices=tuple(WAVEFORMS), required=True),
    Key("incident_field", "choice", "analytic", "what corrects the scattered-field side", choices=INCIDENT_FIELDS),
) + tuple(WAVEFORM_KEYS.values()))
PLANE_WAVE_KEYS = PLANE_WAVE.key_names[:-len(WAVEFORM_KEYS)]
NONE = np.iinfo(np.int64).max


# Case file ------------------------------------------------------------------------------
def parse_plane_wave(ctx, where: str, table: Mapping[str, Any]) -> dict:
    """The checked values of a ``[source.<name>] type = "plane_wave"`` table."""
    waveforms = ", ".join(f'"{w}"' for w in WAVEFORMS)
    if "waveform" not in table:
        raise ctx.error(f"[{where}] waveform is required: one of {waveforms}")
    waveform = choice(ctx, where, table, "waveform", PLANE_WAVE["waveform"].choices, None)
    takes = WAVEFORMS[waveform]
    for key in WAVEFORM_KEYS:
        if key in table and key not in takes:
            raise ctx.error(f"[{where}] {key} does not apply to waveform \"{waveform}\" (it takes {', '.join(takes)})")
    PLANE_WAVE.check(ctx, table, where, only=PLANE_WAVE_KEYS + takes)
    for key in ("direction", "polarization") + takes:
        if key not in table:
            raise ctx.error(f"[{where}] {key} is required ({PLANE_WAVE[key].doc})")
    values = {k: check_vector(ctx, where, k, table[k], PLANE_WAVE[k].range) for k in ("direction", "polarization")}
    units = {key: unit_vector(values[key]) for key in ("direction", "polarization")}
    for key, v in units.items():
        if v is None:
            raise ctx.bad(where, key, "a nonzero vector", list(values[key]))
    k, p = (np.array(units[key]) for key in ("direction", "polarization"))
    if abs(k @ p) > 1e-9:
        raise ctx.bad(where, "polarization", f"perpendicular to direction = {list(values['direction'])} "
                      "(E of a plane wave is transverse)", list(values["polarization"]))
    values["amplitude"] = key_value(ctx, where, table, AMPLITUDE)
    origin = table.get("origin", PLANE_WAVE["origin"].default)
    values["origin"] = check_vector(ctx, where, "origin", origin, PLANE_WAVE["origin"].range)
    box = ("lower" in table) + ("upper" in table)
    if box == 1:
        raise ctx.error(f"[{where}] lower and upper go together (the total-field box)")
    if box and "region" in table:
        raise ctx.error(f"[{where}] give either lower/upper (a total-field box) or region, not both")
    if box:
        length = box_length(ctx, where, table)  # [x, y]: a 2-D mesh's rectangle (its z range is not read anyway)
        lower, upper = (check_vector(ctx, where, k, table[k], PLANE_WAVE[k].range, length) for k in ("lower", "upper"))
        if not all(a < b for a, b in zip(lower, upper)):
            raise ctx.bad(where, "upper", "above lower in every coordinate", list(upper))
        values.update(lower=lower, upper=upper)
    elif "region" in table:
        region = table["region"]
        if not isinstance(region, str) or not region:
            raise ctx.bad(where, "region", "the name of a volume region of the mesh", region)
        values["region"] = region
    else:
        raise ctx.error(f"[{where}] says where the total field is: lower = [...] and upper = [...] (a box whose "
                        "sides lie on element faces) or region = \"name\" (a volume region of the mesh)")
    values["waveform"] = waveform
    values.update({key: key_value(ctx, where, table, WAVEFORM_KEYS[key]) for key in takes})
    incident = PLANE_WAVE["incident_field"]
    values["incident_field"] = choice(ctx, where, table, "incident_field", incident.choices, incident.default)
    return values


# The incident wave ----------------------------------------------------------------------
@dataclass(frozen=True)
class PlaneWave:
    """E = amplitude p w(tau), H = k x E / Z, tau = t - k . (x - origin) / c."""

    name: str
    direction: np.ndarray  # unit k
    polarization: np.ndarray  # unit p, perpendicular to k
    amplitude: float
    waveform: str
    params: dict
    origin: np.ndarray
    epsilon: float
    mu: float

    @classmethod
    def from_spec(cls, spec, epsilon: float, mu: float) -> PlaneWave:
        v = spec.values
        k = np.array(unit_vector(v["direction"]))
        p = np.array(unit_vector(v["polarization"]))
        p -= (p @ k) * k  # already perpendicular to 1e-9; make it exactly so
        p /= np.linalg.norm(p)
        return cls(spec.name, k, p, float(v["amplitude"]), v["waveform"], dict(v), np.array(v["origin"], float),
                   float(epsilon), float(mu))

    @property
    def speed(self) -> float:
        return 1.0 / math.sqrt(self.epsilon * self.mu)

    @property
    def impedance(self) -> float:
        return math.sqrt(self.mu / self.epsilon)

    @property
    def table(self) -> str:
        """The case table it comes from, for messages."""
        return f"source.{self.name}"

    @property
    def term_name(self) -> str:
        return f"plane_wave.{self.name}"

    def face_fields(self, normals: np.ndarray, element: np.ndarray, face: np.ndarray):
        """(E_inc, H_inc) per unit amplitude w at the surface's face points (3, K, n, n):
        the wave's polarisation and k x p / Z, the same at every point."""
        p = self.polarization[:, None, None, None] + 0 * normals
        h = self.magnetic_direction[:, None, None, None] / self.impedance + 0 * normals
        return p, h

    @property
    def magnetic_direction(self) -> np.ndarray:
        """H_inc = magnetic_direction * amplitude * w / Z."""
        return np.cross(self.direction, self.polarization)

    def delay(self, x: np.ndarray) -> np.ndarray:
        """k . (x - origin) / c for coordinates x of shape (3, ...) (host arrays)."""
        x = np.asarray(x, dtype=float)
        shift = x - self.origin.reshape((3,) + (1,) * (x.ndim - 1))
        return np.tensordot(self.direction, shift, axes=1) / self.speed

    def profile(self, xp, tau):
        """amplitude * w(tau)."""
        return self.amplitude * waveform_array(xp, self.waveform, self.params, tau)

    def fields(self, xp, x, t: float):
        """(E, H), each (3, ...), at host coordinates x (3, ...) and time t."""
        w = self.profile(xp, t - xp.asarray(self.delay(x)))
        h = self.magnetic_direction / self.impedance
        return (xp.stack([float(c) * w for c in self.polarization]), xp.stack([float(c) * w for c in h]))

    def describe(self) -> dict:
        return {"direction": self.direction.tolist(), "polarization": self.polarization.tolist(),
                "amplitude": self.amplitude, "waveform": self.waveform,
                **{k: self.params[k] for k in WAVEFORMS[self.waveform]}, "origin": self.origin.tolist(),
                "epsilon": self.epsilon, "mu": self.mu}


# The surface ----------------------------------------------------------------------------
def total_field_elements(system, spec, comm=None, where: str = "case") -> np.ndarray:
    """(E,) True on this rank's elements of the plane wave's total-field region (collective)."""
    v, what = spec.values, f"[source.{spec.name}]"
    if "region" in v:
        return elements_in_region(system, v["region"], what, where)
    return elements_in_box(system, v["lower"], v["upper"], comm, f"{what} the total-field box", where)


def surface_of(term, system, wave, inside: np.ndarray, comm=None, where: str = "case"):
    """Set ``term``'s surface (a TF/SF StageTerm of either form: here and tfsf_galerkin.py): its
    faces on this rank, the background check, its elements' storage, the counts. Returns the
    (E, faces) signs (+1 inside, -1 outside, 0 off the surface) and the faces' (element, face)."""
    sign = surface_signs(system, inside)
    if allreduce(comm, int(np.count_nonzero(sign))) == 0:
        raise InputError(f"{where}: [{wave.table}] the total-field region has no face with the "
                         "scattered-field region (it holds no element, or every element)")
    element, face = np.nonzero(sign)
    term.surface_faces = (element, face)  # (K,) each: the surface's faces on this rank
    check_background(system, element, face, f"[{wave.table}] the total-field surface", where, comm)
    term.setup_storage(system, np.unique(element))
    term.faces_here = int(element.size)
    term.total_field_elements = int(np.count_nonzero(inside))
    return sign, element, face


class TotalFieldScatteredField(StageTerm):
    """The flux correction of one plane wave on the elements that touch its surface. The wave
    may be any incident field of the same interface (``face_fields``, ``delay``, ``profile``,
    ``waveform``/``params``/``amplitude``): a port's mode (port_launch.py)."""

    time_dependent = True
    energy_bounded = False  # it brings the incident wave's energy in

    def __init__(self, system, wave: PlaneWave, inside: np.ndarray, comm=None, where: str = "case"):
        self.wave, self.name = wave, wave.term_name
        sign, element, face = surface_of(self, system, wave, inside, comm, where)
        # a rank without surface faces has no kernels (its prepare and finish do nothing)
        self.surface_add = self.compiled = None
        if not self.count:
            return
        xp, geometry, order = system.backend.xp, system.geometry, system.order
        position = np.searchsorted(self.elements, element)
        normals = system.face_normals[:, element, face]  # (3, K, n, n), as the fluxes have them
        # F_E = s/2 (n x H_inc - (alpha/Z) n x (n x E_inc)) lift/eps, F_H = s/2 (-n x E_inc - alpha Z n x (n x H_inc)) lift/mu
        # (Z of the upwind flux: the background medium's, which the surface lies in)
        z, alpha = math.sqrt(system.mu / system.epsilon), system.alpha
        p, h = wave.face_fields(normals, element, face)
        n_p, n_h = np.cross(normals, p, axis=0), np.cross(normals, h, axis=0)
        scale = 0.5 * sign[element, face][:, None, None] * system.face_lift[element, face]
        self._gain_e = xp.asarray((n_h - (alpha / z) * np.cross(normals, n_p, axis=0)) * (scale / system.epsilon))
        self._gain_h = xp.asarray((-n_p - alpha * z * np.cross(normals, n_h, axis=0)) * (scale / system.mu))
        self._delay = xp.asarray(wave.delay(face_values(np, geometry.coords, order)[:, element, face]))
        self._at = (xp.asarray(position), xp.asarray(face))
        self._faces = system.backend.zeros((6, self.count, system.mesh.num_faces) + face_shape(system.mesh.dim, order))
        # on CUDA: one kernel adds S at the volume points the surface touches, with the
        # waveform evaluated in it (tfsf_cuda.SurfaceAdd), instead of array operations over
        # whole elements; on the fused path it also rewrites those points' traces
        if system.backend.name == "cuda":
            from lobatto.systems.maxwell.tfsf_cuda import SurfaceAdd

            gain = np.concatenate([backend_host(system, self._gain_e), backend_host(system, self._gain_h)])
            self.surface_add = SurfaceAdd(system.backend, order, element, face, gain, backend_host(system, self._delay),
                                          wave.waveform, wave.params, wave.amplitude, dim=system.mesh.dim)
            self.writes_traces = self.folds = True  # the fused path's calls (terms.py)
        # on the CPU: a compiled kernel adds S at the surface's face points only (terms_cpu.py)
        self.compiled = term_kernels(system)
        if self.compiled is not None:
            dtype = system.backend.dtype
            self._host_gain = np.ascontiguousarray(np.concatenate([self._gain_e, self._gain_h]), dtype=dtype)
            self._host_faces = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in (element, face))
            self.folds_in_stage = True

    def _surface(self, u, residual, t, scale_residual, scale_u) -> None:
        w = np.ascontiguousarray(self.wave.profile(np, t - self._delay), dtype=self._host_gain.dtype)
        self.compiled.surface(u, residual, self._host_gain, w, *self._host_faces, scale_residual, scale_u)

    @property
    def reads_clock(self) -> bool:
        """On CUDA (every rank alike): its kernel reads the stage time from a device array."""
        return self.backend.name == "cuda"

    def prepare(self, u, t) -> None:
        if self.surface_add is None and self.compiled is None:
            return super().prepare(u, t)
        self._stage_time = self._clock(t)  # S depends on t alone: the kernel evaluates it in finish

    def finish(self, u, residual, a, b, dt, traces=None) -> None:
        if self.compiled is not None:
            if self.count:
                self._surface(u, residual, self._stage_time, dt, b * dt)
            return
        if self.surface_add is None:
            return super().finish(u, residual, a, b, dt)
        if self.count:
            self.surface_add(u, residual, self._stage_time, a, b, dt, traces,
                             self.system.device_geometry["normals"] if traces is not None else None)

    def fold(self, u, residual, t, a, b, dt) -> None:
        if self.compiled is not None:
            if self.count:
                self._surface(None, residual, t, dt / a, 0.0)
        elif self.count:
            self.surface_add(u, residual, self._clock(t), a, b, dt, fold=True)

    def _clock(self, t):
        """The fused path's device clock of the stage time where it runs (terms.py), else t."""
        clock = self.system.stage_clock
        return t if clock is None else clock

    def rates(self, u, t, s_out, r_out) -> None:
        w = self.wave.profile(self.backend.xp, t - self._delay)  # (K, n, n)
        faces, (position, face) = self._faces, self._at
        faces[0:3, position, face] = self._gain_e * w
        faces[3:6, position, face] = self._gain_h * w
        s_out[...] = 0
        add_to_faces(s_out, faces, self.system.order)

    def describe(self, comm=None) -> dict:
        return {"type": "plane_wave (total-field/scattered-field)", **self.wave.describe(),
                "total_field_elements": int(allreduce(comm, self.total_field_elements)),
                "surface_faces": int(allreduce(comm, self.faces_here)),
                "elements": int(allreduce(comm, self.count))}


def backend_host(system, array) -> np.ndarray:
    return np.asarray(system.backend.to_host(array), dtype=np.float64)
