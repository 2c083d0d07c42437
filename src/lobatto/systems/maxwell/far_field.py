"""The near-to-far-field transformation: ``[output.far_field]`` (docs/electromagnetics.md, "Far
fields and cross sections").

While the run steps, the fields on a closed surface of element faces (the boundary of a box
whose sides lie on element faces, or of a volume region) are transformed at chosen
frequencies by the running DFT of monitors/dft.py, F(f) = integral of u e^(-2 pi i f t) dt,
so F is a phasor of the e^(+i omega t) convention. At the end rank 0 gathers them and applies the
equivalence principle: J = n x H, M = -n x E on the surface (n outward) radiate, in the
background medium (k = omega sqrt(eps mu), eta = sqrt(mu/eps)), the far field

    r e^(ikr) E_theta = -ik/(4 pi) (L_phi + eta N_theta)
    r e^(ikr) E_phi   =  ik/(4 pi) (L_theta - eta N_phi)
    N = sum_surface J e^(ik r.x') w sJ,   L = the same with M

(Balanis, Advanced Engineering Electromagnetics, sec. 6.7, 12.9), integrated with the GLL
weights and the surface Jacobian. The face values are those of the element inside the
surface. Cross sections use the incident plane wave's transform at the phase origin, summed
by the same rule at the same steps, and I_inc = |E_inc|^2 / (2 eta):

    sigma_rcs(theta, phi) = 4 pi |r E|^2 / |E_inc|^2
    sigma_scat = (1/(2 eta)) integral |r E|^2 dOmega / I_inc    (Gauss-Legendre x uniform in phi)
    sigma_abs  = -1/2 Re integral (E x H*) . n dS / I_inc       (a surface in the total field)

and the outward Poynting flux 1/2 Re integral (E x H*) . n of each surface per frequency.

On a 2-D mesh (z-invariant fields, per unit depth) the surface is a closed contour of element
edges, N and L are integrals along it per unit depth, and the far field lies in the xy plane
(theta = 90 degrees, E_theta = -E_z): the 2-D Green's function -(i/4) H0^(2)(k rho) ~
-(i/4) sqrt(2/(pi k rho)) e^(i pi/4) e^(-ik rho) turns the 3-D factor ik/(4 pi) e^(-ikr)/r into
e^(i pi/4) sqrt(k/(8 pi)) e^(-ik rho)/sqrt(rho), so

    sqrt(rho) e^(ik rho) E_theta = -e^(i pi/4) sqrt(k/(8 pi)) (L_phi + eta N_theta)
    sqrt(rho) e^(ik rho) E_phi   =  e^(i pi/4) sqrt(k/(8 pi)) (L_theta - eta N_phi)
    sigma_2D(phi) = 2 pi |sqrt(rho) E|^2 / |E_inc|^2          (the scattering width)
    sigma_scat = (1/(2 eta)) integral_0^2pi |sqrt(rho) E|^2 dphi / I_inc   (a width too)
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, rank_and_size
from lobatto.mesh.topology import face_slice
from lobatto.monitors import register_monitor
from lobatto.monitors.dft import DftMonitor, check_parts_memory
from lobatto.monitors.planes import face_weights
from lobatto.systems.maxwell.far_field_table import FAR_FIELD
from lobatto.systems.maxwell.region_surface import check_background, elements_in_box, elements_in_region, surface_signs

SUFFIX = "_farfield"
#: host bytes on rank 0 per direction (theta x phi) and frequency kept to the end (E_theta and
#: E_phi, complex, as lists and as arrays; the radar cross section), and per direction while
#: one frequency is transformed (angles, unit vectors, phases of a chunk, the two components)
DIRECTION_BYTES = 48
DIRECTION_WORK_BYTES = 136
FIELDS = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")
WHERE = "[output.far_field]"


def file_name(name: str) -> str:
    return f"{name}{SUFFIX}.h5"


# The transformation (host, NumPy) ---------------------------------------------------------
def spherical_units(theta: np.ndarray, phi: np.ndarray):
    """r, theta and phi unit vectors (..., 3) for angles in radians."""
    st, ct, sp, cp = np.sin(theta), np.cos(theta), np.sin(phi), np.cos(phi)
    r = np.stack([st * cp, st * sp, ct], axis=-1)
    t = np.stack([ct * cp, ct * sp, -st], axis=-1)
    p = np.stack([-sp, cp, 0 * theta], axis=-1)
    return r, t, p


def far_field(e, h, normals, weights, points, k: float, eta: float, theta, phi, chunk: int = 256,
              scale: complex | None = None):
    """(r e^(ikr) E_theta, r e^(ikr) E_phi) at the directions (theta, phi) (radians, same
    shape) from phasors e, h (3, P) at surface points (3, P) relative to the phase origin,
    outward normals (3, P) and quadrature weights (P,). ``scale``: the Green's function's
    factor, ik/(4 pi) (3-D; far_field_2d gives the 2-D one)."""
    scale = 1j * k / (4 * np.pi) if scale is None else scale
    j = np.cross(normals, h, axis=0) * weights
    m = -np.cross(normals, e, axis=0) * weights
    theta, phi = np.broadcast_arrays(np.asarray(theta, float), np.asarray(phi, float))
    r, t, p = (v.reshape(-1, 3) for v in spherical_units(theta.ravel(), phi.ravel()))
    e_theta = np.empty(r.shape[0], complex)
    e_phi = np.empty(r.shape[0], complex)
    for start in range(0, r.shape[0], chunk):
        part = slice(start, start + chunk)
        phase = np.exp(1j * k * (r[part] @ points))  # (D, P)
        n_vec, l_vec = phase @ j.T, phase @ m.T  # (D, 3)
        dot = lambda a, b: np.sum(a * b, axis=1)  # noqa: E731
        e_theta[part] = -scale * (dot(l_vec, p[part]) + eta * dot(n_vec, t[part]))
        e_phi[part] = scale * (dot(l_vec, t[part]) - eta * dot(n_vec, p[part]))
    return e_theta.reshape(theta.shape), e_phi.reshape(theta.shape)


def far_field_2d(e, h, normals, weights, points, k: float, eta: float, phi, chunk: int = 256):
    """(sqrt(rho) e^(ik rho) E_theta, sqrt(rho) e^(ik rho) E_phi) in the xy plane at the
    azimuths ``phi`` (radians) from phasors on a closed contour of a 2-D mesh (far_field's
    arguments; ``weights`` per unit depth). E_z = -E_theta (TM), E_phi is TE's."""
    phi = np.asarray(phi, float)
    scale = np.exp(0.25j * np.pi) * math.sqrt(k / (8 * np.pi))
    return far_field(e, h, normals, weights, points, k, eta, 0.5 * np.pi + 0 * phi, phi, chunk, scale)


def radiated_power_2d(e, h, normals, weights, points, k: float, eta: float) -> float:
    """(1/(2 eta)) integral over phi of |sqrt(rho) E|^2: the power per unit depth radiated
    (the trapezoid rule, exact for the band-limited |sqrt(rho) E|^2 with enough azimuths)."""
    radius = float(np.sqrt(np.max(np.sum(points**2, axis=0)))) if points.size else 0.0
    count = 2 * max(24, int(math.ceil(k * radius)) + 16)
    phi = np.arange(2 * count) * (np.pi / count)
    e_theta, e_phi = far_field_2d(e, h, normals, weights, points, k, eta, phi)
    return float(np.sum(np.abs(e_theta) ** 2 + np.abs(e_phi) ** 2) * (np.pi / count) / (2 * eta))


def radiated_power(e, h, normals, weights, points, k: float, eta: float) -> float:
    """(1/(2 eta)) integral over the sphere of |r E|^2: Gauss-Legendre in cos(theta), uniform
    in phi, with enough points for the surface's electrical size (|rE|^2 is band-limited to
    about twice k times the largest radius)."""
    radius = float(np.sqrt(np.max(np.sum(points**2, axis=0)))) if points.size else 0.0
    count = max(24, int(math.ceil(k * radius)) + 16)
    x, w = np.polynomial.legendre.leggauss(count)
    phi = np.arange(2 * count) * (np.pi / count)
    theta = np.arccos(x)[:, None] + 0 * phi
    e_theta, e_phi = far_field(e, h, normals, weights, points, k, eta, theta, phi + 0 * theta)
    density = np.abs(e_theta) ** 2 + np.abs(e_phi) ** 2
    return float(np.sum(w[:, None] * density) * (np.pi / count) / (2 * eta))


def surface_flux(e, h, normals, weights) -> float:
    """1/2 Re integral (E x H*) . n dS: the time-averaged power of the phasors leaving."""
    return float(0.5 * np.real(np.sum(np.sum(np.cross(e, np.conj(h), axis=0) * normals, axis=0) * weights)))


# The monitor (every rank) ------------------------------------------------------------------
class FarFieldMonitor(DftMonitor):
    """The running transforms on the closed surfaces (dft.py's accumulation, every step) and,
    at the end, the far field and cross sections on rank 0."""

    section = "far_field"
    table = FAR_FIELD  # its keys and reader (far_field_table.py): the case reader takes them from the registry

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        """memory_items.MemoryItem of the directions (rank 0's host, known from the case); the
        surfaces' transforms are counted once their faces are found (check_parts_memory)."""
        from lobatto.machine.memory_items import MemoryItem

        count, directions = len(section.frequencies), len(section.theta) * len(section.phi)
        return [MemoryItem(f"{WHERE} {len(section.theta):,} x {len(section.phi):,} directions (theta x phi) at "
                           f"{count:,} frequenc{'y' if count == 1 else 'ies'}", host=float(directions) * (DIRECTION_BYTES * count
                                                                              + DIRECTION_WORK_BYTES),
                           advice=f"use fewer {WHERE} theta and phi angles or frequencies")]

    @classmethod
    def from_case(cls, case, section, system, comm=None) -> FarFieldMonitor:
        """Its errors name the case's file (``case.source``)."""
        monitor = cls(section, system, comm, case.source)
        monitor.output_name = case.output.name
        return monitor

    def __init__(self, section, system, comm=None, where: str = "case"):
        self.settings, self.system, self.comm = section, system, comm
        if tuple(system.field_names[:6]) != FIELDS or not hasattr(system, "epsilon"):
            raise InputError(f"{where}: {WHERE} needs the electromagnetic fields {', '.join(FIELDS)} "
                             f"(equations = \"{system.name}\" does not have them)")
        self.dim = system.mesh.dim  # 2: a closed contour of edges, the 2-D Green's function
        # (the default theta list is let through: an effective configuration lists it)
        if self.dim == 2 and tuple(section.theta) not in ((90.0,), tuple(FAR_FIELD["theta"].default)):
            raise InputError(f"{where}: {WHERE} theta: the mesh is 2-D, its far field lies in the xy plane "
                             "(theta = 90 degrees): give phi only")
        #: the polar angles (degrees): the case's, or 90 only in 2-D; and the width's name
        self.theta = (90.0,) if self.dim == 2 else tuple(section.theta)
        self.width_key = "rcs" if self.dim == 3 else "scattering_width"
        self.omega = 2 * np.pi * np.asarray(section.frequencies, dtype=np.float64)
        self.region_fields = list(range(6))
        self.epsilon, self.mu = float(system.epsilon), float(system.mu)
        self._check_resolved(system, comm, where)
        self.parts, self.faces = [], {}
        w = face_weights(system.order, self.dim)
        xp = system.backend.xp
        surfaces = [("scattering", section.surface)] + ([("absorption", section.absorption)]
                                                         if section.absorption is not None else [])
        for label, surface in surfaces:
            what = f"{WHERE} {'absorption_' if label == 'absorption' else ''}"
            if surface.region is not None:
                inside = elements_in_region(system, surface.region, what.strip(), where)
            elif len(surface.lower) == 2 and self.dim == 3:
                raise InputError(f"{where}: {what}lower = {list(surface.lower)}: the mesh is 3-D: give [x, y, z]")
            else:
                inside = elements_in_box(system, surface.lower, surface.upper, comm, what + "box", where)
            sign = surface_signs(system, inside)
            element, face = np.nonzero(sign > 0)  # the faces of the inside elements, normals outward
            self.faces[label] = int(allreduce(comm, int(element.size)))
            if self.faces[label] == 0:
                raise InputError(f"{where}: {what.strip()} {surface.describe()} is not a closed surface of element "
                                 "faces in the mesh (it holds no element, or every element)")
            if label == "scattering":  # the far field radiates in the background; a flux needs no medium
                check_background(system, element, face, f"{what.strip()} {surface.describe()}", where, comm)
            for f in range(system.mesh.num_faces):
                chosen = element[face == f]
                if chosen.size:
                    self.parts.append(("surface", label, f, chosen, xp.asarray(chosen),
                                       system.geometry.normals[:, chosen, f],
                                       system.geometry.surface_jacobian[chosen, f] * w))
        check_parts_memory(self.parts, len(self.omega), 6, 6, system, WHERE, comm)
        self.origin = np.array(section.origin if section.origin is not None else self._centre(), dtype=float)
        self.wave = self._incident(system, section.incident, where)
        self.incident = np.zeros(len(self.omega), complex)  # the plane wave's transform at the origin
        self._last_incident = None
        self.sums = [None] * len(self.parts)
        self.previous = None
        self.first_time = self.last_time = None
        self.samples = 0

    def _check_resolved(self, system, comm, where) -> None:
        """Every frequency's wavelength must span two of the mesh's smallest GLL spacings: above
        that the fields carry nothing at that frequency, and the far field's quadrature (about
        k times the surface's radius points per direction) grows without bound. Collective."""
        spacing = float(allreduce(comm, float(system.geometry.min_spacing), "min"))
        speed = 1.0 / math.sqrt(self.epsilon * self.mu)
        highest = speed / (2 * spacing)  # two spacings per wavelength
        too_high = [f for f in self.settings.frequencies if f > highest]
        if too_high:
            raise InputError(f"{where}: {WHERE} frequencies: f = {max(too_high):.6g} is above {highest:.6g}, the "
                             f"highest the mesh resolves (a wavelength of two GLL spacings, {spacing:.4g}, at c = "
                             f"{speed:.4g}); lower it (or refine the mesh)")

    def _centre(self) -> np.ndarray:
        """The centre of the scattering surface's bounding box (collective)."""
        order, lo, hi = self.system.order, np.full(3, np.inf), np.full(3, -np.inf)
        for _, label, face, chosen, *_ in self.parts:
            if label == "scattering":
                x = self.system.geometry.coords[:, chosen][face_slice(face, order)].reshape(3, -1)
                lo, hi = np.minimum(lo, x.min(axis=1)), np.maximum(hi, x.max(axis=1))
        return 0.5 * (allreduce(self.comm, lo, "min") + allreduce(self.comm, hi, "max"))

    @staticmethod
    def _incident(system, name, where):
        """The plane wave that normalises the cross sections: the one named, else the only one."""
        waves = {term.wave.name: term.wave for term in getattr(system, "terms", ()) if hasattr(term, "wave")}
        if name is None:
            return next(iter(waves.values())) if len(waves) == 1 else None
        if name not in waves:
            raise InputError(f"{where}: {WHERE} incident = '{name}': no [source.{name}] of type \"plane_wave\" "
                             f"(plane waves: {', '.join(waves) or 'none'})")
        return waves[name]

    def accumulate(self, u, t: float) -> None:
        super().accumulate(u, t)
        if self.wave is not None:
            value = float(self.wave.profile(np, t - self.wave.delay(self.origin)))
            phased = value * np.exp(-1j * self.omega * t)
            if self._last_incident is not None:
                t0, before = self._last_incident
                self.incident += 0.5 * (t - t0) * (before + phased)
            self._last_incident = (t, phased)

    # Results ---------------------------------------------------------------------------
    def gathered(self) -> dict | None:
        """Collective: {label: (e (F, 3, P), h (F, 3, P), normals (3, P), weights (P,), points
        (3, P) relative to the origin)} on rank 0, None elsewhere."""
        backend, order, count = self.system.backend, self.system.order, len(self.omega)
        mine: dict = {}
        for (_, label, face, chosen, _, normals, weights), total in zip(self.parts, self.sums):
            if total is None:
                total = np.zeros((count, 6, chosen.size) + weights.shape[1:], complex)
            values = np.asarray(backend.to_host(total)).astype(complex).reshape(count, 6, -1)
            x = self.system.geometry.coords[:, chosen][face_slice(face, order)].reshape(3, -1)
            entry = mine.setdefault(label, [])
            entry.append((values, normals.reshape(3, -1), weights.reshape(-1), x - self.origin[:, None]))
        rank, size = rank_and_size(self.comm)
        parts = [mine] if self.comm is None or size == 1 else self.comm.gather(mine, root=0)
        if rank != 0:
            return None
        out = {}
        for label in self.faces:
            pieces = [piece for part in parts for piece in part.get(label, [])]
            values = np.concatenate([p[0] for p in pieces], axis=2)
            out[label] = (values[:, 0:3], values[:, 3:6], *(np.concatenate([p[i] for p in pieces], axis=-1)
                                                              for i in (1, 2, 3)))
        return out

    def results(self) -> dict | None:
        """Collective: the far field, powers and cross sections per frequency (rank 0)."""
        surfaces = self.gathered()
        if surfaces is None:
            return None
        section, eta = self.settings, math.sqrt(self.mu / self.epsilon)
        theta = np.radians(np.asarray(self.theta))[:, None]
        phi = np.radians(np.asarray(section.phi))[None, :] + 0 * theta
        theta = theta + 0 * phi
        e, h, normals, weights, points = surfaces["scattering"]
        out = {"E_theta": [], "E_phi": [], "far_field_power": [], "flux": {label: [] for label in surfaces}}
        for i, omega in enumerate(self.omega):
            k = omega * math.sqrt(self.epsilon * self.mu)
            if self.dim == 2:  # the xy plane, sqrt(rho) E: the 2-D Green's function
                e_theta, e_phi = far_field_2d(e[i], h[i], normals, weights, points, k, eta, phi)
                power = radiated_power_2d(e[i], h[i], normals, weights, points, k, eta)
            else:
                e_theta, e_phi = far_field(e[i], h[i], normals, weights, points, k, eta, theta, phi)
                power = radiated_power(e[i], h[i], normals, weights, points, k, eta)
            out["E_theta"].append(e_theta)
            out["E_phi"].append(e_phi)
            out["far_field_power"].append(power)
            for label, (e_s, h_s, n_s, w_s, _) in surfaces.items():
                out["flux"][label].append(surface_flux(e_s[i], h_s[i], n_s, w_s))
        out = {key: np.array(value) if key != "flux" else {k: np.array(v) for k, v in value.items()}
               for key, value in out.items()}
        if self.wave is not None:
            intensity = np.abs(self.incident) ** 2 / (2 * eta)
            out["incident_spectrum"] = self.incident
            # 3-D: the radar cross section 4 pi |r E|^2; 2-D: the scattering width 2 pi |sqrt(rho) E|^2
            out[self.width_key] = (4 if self.dim == 3 else 2) * np.pi * (
                np.abs(out["E_theta"]) ** 2 + np.abs(out["E_phi"]) ** 2) / (np.abs(self.incident) ** 2)[:, None, None]
            cross = {"scattering": out["far_field_power"] / intensity,
                     "scattering_from_flux": out["flux"]["scattering"] / intensity}
            if "absorption" in surfaces:
                cross["absorption"] = -out["flux"]["absorption"] / intensity
                cross["extinction"] = cross["scattering"] + cross["absorption"]
            out["cross_sections"] = cross
        return out

    def write(self, directory, name: str, attrs: dict) -> Path | None:
        """Collective: ``NAME_farfield.h5`` written by rank 0 (atomically)."""
        from lobatto.io.atomic import h5_output

        results = self.results()
        if results is None:
            return None
        path = Path(directory) / file_name(name)
        with h5_output(path, attrs) as f:
            f.attrs.update(samples=self.samples, origin=self.origin,
                           epsilon=self.epsilon, mu=self.mu, incident=self.wave.name if self.wave else "",
                           surface=self.settings.surface.describe(), surface_faces=self.faces["scattering"],
                           t_first=float(self.first_time or 0.0), t_last=float(self.last_time or 0.0))
            f["frequencies"] = np.asarray(self.settings.frequencies, dtype=np.float64)
            f.attrs["dimension"] = self.dim
            f["theta"], f["phi"] = np.asarray(self.theta), np.asarray(self.settings.phi)
            f["E_theta"], f["E_phi"] = results["E_theta"], results["E_phi"]
            if self.dim == 2:  # sqrt(rho) e^(ik rho) E_z of TM (E_theta is -E_z at theta = 90)
                f["E_z"] = -results["E_theta"]
            f["power/far_field"] = results["far_field_power"]
            for label, flux in results["flux"].items():
                f[f"power/{label}_surface_flux"] = flux
            if self.width_key in results:
                f[self.width_key] = results[self.width_key]
                f["incident_spectrum"] = results["incident_spectrum"]
                for key, value in results["cross_sections"].items():
                    f[f"cross_sections/{key}"] = value
        return path

    def describe(self) -> dict:
        return {"far_field": {"file": file_name(self.output_name), "frequencies": list(self.settings.frequencies),
                              "steps": self.samples, "surface_faces": self.faces,
                              "incident": self.wave.name if self.wave else None}}


register_monitor("far_field", FarFieldMonitor)  # [output.far_field], built by the run's MonitorSet
