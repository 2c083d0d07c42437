"""Waveguide ports on the mesh (docs/electromagnetics.md, "Ports and S-parameters"): each
port's planes located on element faces and checked, its mode on them (port_modes.py), and the
mode's launch as a total-field/scattered-field plane (tfsf.py; with [discretization]
volume_form = "galerkin" the exchanged sums corrected, tfsf_galerkin.py), Meep's eigenmode source.

The launch: the total-field region is the half of the mesh on the device side of ``source``
(the whole cross-section), and the incident field on its surface is

    E_inc = e_t(x) w(t),   H_inc = h_t(x) w(t) / Z(f0),   h_t = d x e_t,

d the unit vector into the device, Z the mode's wave impedance at the pulse's centre f0
(ports.pulse), w that modulated Gaussian; no delays (the surface is one plane). At f0 the
correction launches the mode along d only; elsewhere a small share goes backwards, into the
[pml] layer behind the source. The term builder (system.TERM_BUILDERS) also records every
port's measurement plane (``system.port_planes``) for the decomposition (runner/ports.py).
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from lobatto.config.dft import plane_name
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, rank_and_size
from lobatto.monitors.planes import face_planes, nearest_planes, on_plane, plane_faces, plane_tolerance
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell.port_mode_solver import solved_modes
from lobatto.systems.maxwell.port_modes import (MODES, cutoff_frequency, face_weights, impedance, mode_kind,
                                                transverse_h)
from lobatto.systems.maxwell.ports import check_ports, driven, ports_of, pulse
from lobatto.systems.maxwell.region_surface import check_background, surface_signs
from lobatto.systems.maxwell.tfsf import TotalFieldScatteredField
from lobatto.systems.maxwell.tfsf_galerkin import GalerkinTotalFieldScatteredField
from lobatto.systems.maxwell.waveforms import waveform_array

@dataclass
class PortPlane:
    """A port's plane over all ranks: every face's points (3, K, n, n), quadrature weights
    (K, n, n), element ids and faces (K,) in (id, face) order, and the mode (k_c, e_t) there."""

    name: str
    coords: np.ndarray
    weights: np.ndarray
    ids: np.ndarray
    faces: np.ndarray
    k_c: float
    e_t: np.ndarray


def locate(system, port, what: str, value: float, comm, where: str) -> np.ndarray:
    """Collective: (E, 6) this rank's faces of the port's plane ``what`` (one side each), after
    checking that it lies on element faces, outside any [pml] layer, in the background medium."""
    table = f"[port.{port.name}] {what}"
    planes, tol = face_planes(system, port.axis, comm), plane_tolerance(system, comm)
    if not np.any(np.abs(planes - value) <= tol):
        raise InputError(f"{where}: {table} \"{plane_name(port.axis, value)}\" lies on no element face (port planes "
                         f"are element faces across the guide); the nearest face planes: "
                         f"{nearest_planes(system, port.axis, value, comm)}")
    chosen, _ = plane_faces(system, port.axis, value, comm)
    touching = on_plane(face_values(np, system.geometry.coords, system.order), port.axis, value, tol).any(axis=1)
    layers = [term for term in system.terms if term.name == "pml"]
    inside = sum(int(np.count_nonzero(touching[term.elements])) for term in layers if term.count)
    if allreduce(comm, inside):
        raise InputError(f"{where}: {table} \"{plane_name(port.axis, value)}\" touches the [pml] layer: a port plane "
                         "lies across the guide between the layers (is it across the guide's axis?)")
    element, face = np.nonzero(chosen)
    check_background(system, element, face, f"{table} \"{plane_name(port.axis, value)}\"", where, comm)
    check_wall_kinds(system, port, touching, f"{table} \"{plane_name(port.axis, value)}\"", where, comm)
    return chosen


def check_wall_kinds(system, port, touching: np.ndarray, what: str, where: str, comm) -> None:
    """Collective: the guide's walls at a port plane are PEC, as every mode here assumes (the
    rectangle's sides are checked from the case; this sees a file mesh's walls too): each
    boundary face of an element touching the plane whose normal is mostly across the axis."""
    kinds = system.boundary_kind_of(system.mesh)
    normal = np.abs(system.face_normals[port.axis].mean(axis=(-2, -1)))  # (E, 6)
    wall = touching[:, None] & (system.mesh.boundary_kind >= 0) & (normal < 0.5)
    pec = kinds.index("pec") if "pec" in kinds else -2
    rows, faces = np.nonzero(wall & (system.mesh.boundary_kind != pec))
    # the lowest element id with such a face and its kind, the same on every rank: id * 64 + kind
    code = system.mesh.element_ids[rows].astype(np.int64) * 64 + system.mesh.boundary_kind[rows, faces]
    none = np.iinfo(np.int64).max
    first = int(allreduce(comm, np.array([code.min() if code.size else none]), "min")[0])
    if first != none:
        raise InputError(f"{where}: {what}: the guide's wall at element {first // 64} is {kinds[first % 64]}, not pec: "
                         "port modes are those of a guide with PEC walls")


def gathered(system, chosen: np.ndarray, comm) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Collective: (ids (K,), faces (K,), coords (3, K, n, n)) of the faces ``chosen`` on all
    ranks, in (element id, face) order, on every rank."""
    element, face = np.nonzero(chosen)
    coords = face_values(np, system.geometry.coords, system.order)[:, element, face]
    mine = (system.mesh.element_ids[element], face, coords)
    parts = [mine] if comm is None or comm.Get_size() == 1 else comm.allgather(mine)
    ids = np.concatenate([p[0] for p in parts])
    faces = np.concatenate([p[1] for p in parts])
    points = np.concatenate([p[2] for p in parts], axis=1)
    order = np.lexsort((faces, ids))
    return ids[order], faces[order], points[:, order]


def port_mode(port, coords: np.ndarray, where: str) -> tuple[float, np.ndarray]:
    """(k_c, e_t) of the port's mode on a plane's gathered points."""
    if port.shape not in MODES:
        raise InputError(f"{where}: [port.{port.name}] shape = \"{port.shape}\" is not available in this build "
                         f"(shapes: {', '.join(MODES)})")
    return MODES[port.shape](port.mode, coords, port.axis, f"{where}: [port.{port.name}]")


def port_plane(system, port, comm, where: str) -> PortPlane:
    """Collective: the port's measurement plane and its mode."""
    ids, faces, coords = gathered(system, locate(system, port, "plane", port.plane, comm, where), comm)
    k_c, e_t = port_mode(port, coords, where)
    return PortPlane(port.name, coords, face_weights(coords), ids, faces, k_c, e_t)


def values_at(points: np.ndarray, coords: np.ndarray, values: np.ndarray) -> np.ndarray:
    """values (3, K, n, n) given at the face points ``coords`` (3, K, n, n), at the face points
    ``points`` (3, M, n, n) of the same faces (from either side: the points in another order):
    each face by its nearest centre, each point by its nearest point on that face."""
    m, n = points.shape[1], points.shape[-1]
    if m == 0:
        return np.zeros_like(points)
    centres, mine = coords.mean(axis=(-2, -1)).T, points.mean(axis=(-2, -1)).T  # (K, 3), (M, 3)
    nearest = np.array([int(np.argmin(np.sum((centres - c) ** 2, axis=1))) for c in mine])
    there = coords[:, nearest].reshape(3, m, n * n)
    here = points.reshape(3, m, n * n)
    distance = np.sum((here[:, :, :, None] - there[:, :, None, :]) ** 2, axis=0)  # (M, n^2, n^2)
    pick = np.argmin(distance, axis=2)
    out = np.take_along_axis(values[:, nearest].reshape(3, m, n * n), pick[None], axis=2)
    return out.reshape(points.shape)


class ModeWave:
    """The incident field of a port's launch (tfsf.TotalFieldScatteredField's wave)."""

    waveform = "modulated_gaussian"

    def __init__(self, system, port, k_c: float, coords: np.ndarray, e_t: np.ndarray, params: dict):
        self.port, self.name, self.k_c = port, port.name, k_c
        self.params = dict(params)
        self.kind = mode_kind(port.mode)
        self.impedance_f0 = float(impedance(self.kind, k_c, params["frequency"], system.epsilon, system.mu))
        self._system, self._coords, self._e = system, coords, e_t
        self.amplitude = float(np.max(np.linalg.norm(e_t, axis=0)))  # E_inc's largest magnitude (injection.py)

    @property
    def table(self) -> str:
        return f"port.{self.name}"

    @property
    def term_name(self) -> str:
        return f"port.{self.name}"

    def face_fields(self, normals, element, face):
        """(e_t, d x e_t / Z(f0)) / amplitude at the surface's face points."""
        points = face_values(np, self._system.geometry.coords, self._system.order)[:, element, face]
        e = values_at(points, self._coords, self._e) / self.amplitude
        h = transverse_h(e, self.port.axis, self.port.sign) / self.impedance_f0
        return e, h

    def delay(self, x) -> np.ndarray:
        return np.zeros(np.asarray(x).shape[1:])

    def profile(self, xp, tau):
        return self.amplitude * waveform_array(xp, self.waveform, self.params, tau)

    def describe(self) -> dict:
        return {"type": "port mode (total-field/scattered-field plane)", "plane": self.port.plane_name, "source": plane_name(self.port.axis, self.port.source),
                "direction": self.port.direction, "shape": self.port.shape, "mode": self.port.mode,
                "cutoff_wavenumber": self.k_c, "impedance_at_f0": self.impedance_f0, "waveform": self.waveform,
                **self.params}


def total_field_side(system, port, comm, where: str) -> np.ndarray:
    """Collective: (E,) True on this rank's elements on the device side of the port's source
    plane; an element the plane cuts is an error naming it."""
    x = system.geometry.coords[port.axis].reshape(system.num_elements, -1)
    tol = plane_tolerance(system, comm)
    ahead = np.all((x - port.source) * port.sign >= -tol, axis=1)
    behind = np.all((x - port.source) * port.sign <= tol, axis=1)
    cut = system.mesh.element_ids[~ahead & ~behind]
    none = np.iinfo(np.int64).max
    bad = int(allreduce(comm, np.array([cut.min() if cut.size else none]), "min")[0])
    if bad != none:
        raise InputError(f"{where}: [port.{port.name}] source \"{plane_name(port.axis, port.source)}\" cuts element "
                         f"{bad}: it must lie on element faces across the whole guide")
    return ahead


def launch(system, port, k_c_plane: float, params: dict, comm, where: str):
    """Collective: the TF/SF term launching the port's mode from its source plane (the
    Galerkin form's, tfsf_galerkin.py, with [discretization] volume_form = "galerkin")."""
    chosen = locate(system, port, "source", port.source, comm, where)
    _, _, coords = gathered(system, chosen, comm)
    k_c, e_t = port_mode(port, coords, where)
    if abs(k_c - k_c_plane) > 1e-6 * max(k_c, k_c_plane):
        raise InputError(f"{where}: [port.{port.name}] the guide's cross-section differs between source and plane "
                         f"(cutoff wavenumbers {k_c:.6g} and {k_c_plane:.6g}): launch and measure in the same guide")
    inside = total_field_side(system, port, comm, where)
    sign = surface_signs(system, inside)
    element, face = np.nonzero(sign)
    tol = 1e3 * plane_tolerance(system, comm)  # (collective: before any rank-local branch)
    points = face_values(np, system.geometry.coords, system.order)[port.axis, element, face]
    if allreduce(comm, int(np.any(np.abs(points - port.source) > tol))):
        raise InputError(f"{where}: [port.{port.name}] the device side of source \"{plane_name(port.axis, port.source)}"
                         "\" meets the rest of the mesh elsewhere than on that plane: the source must cut the whole "
                         "mesh across the guide")
    wave = ModeWave(system, port, k_c, coords, e_t, params)
    if system.galerkin is not None:  # the sums corrected before the Galerkin kernels (tfsf_galerkin.py)
        return GalerkinTotalFieldScatteredField(system, wave, inside, comm, where)
    return TotalFieldScatteredField(system, wave, inside, comm, where)


def check_walls(case, port) -> None:
    """A box mesh's sides along the guide must be PEC walls (not periodic, absorbing or PMC):
    every shape's modes are those of a guide with PEC walls."""
    mesh = case.mesh
    if mesh.from_file:  # (check_wall_kinds sees a file mesh's walls when the run is set up)
        return
    for axis in (a for a in range(3) if a != port.axis):
        for side in (f"{'xyz'[axis]}min", f"{'xyz'[axis]}max"):
            kind = mesh.boundaries.get(side)
            if kind != "pec":
                raise InputError(f"{case.source}: [port.{port.name}] shape = \"{port.shape}\" is a guide with PEC "
                                 f"walls, but the mesh's side {side} is {kind}: make the sides along the guide pec")


def next_cutoff(plane: PortPlane, axis: int) -> float | None:
    """The lowest cutoff wavenumber above the port mode's among the plane's TE and TM modes (the
    2-D eigen-solve on its faces: any shape), None where the plane holds too few points."""
    cutoffs = []
    for kind, count in (("TE", 4), ("TM", 2)):
        try:
            cutoffs += [k for k, _ in solved_modes(plane.coords, axis, kind, count)]
        except InputError:  # fewer points than modes asked: a coarse plane; the port's own checks stand
            pass
    above = [k for k in cutoffs if k > plane.k_c * (1 + 1e-6)]
    return min(above) if above else None


def warn_multimode(port, plane: PortPlane, spec, system, comm) -> None:
    """One line on rank 0 where the band reaches a second mode's cutoff: power into that mode
    is not in S (it shows as loss), which a user would otherwise not be told."""
    k_next = next_cutoff(plane, port.axis)  # (every rank alike: the gathered plane)
    if k_next is None or rank_and_size(comm)[0] != 0:
        return
    f_next = cutoff_frequency(k_next, system.epsilon, system.mu)
    if max(spec.frequencies) > f_next:
        print(f"lobatto: warning: [port.{port.name}] a second mode propagates above f = {f_next:.4g} (the plane's "
              f"mode solve), inside the "
              f"[ports] band (up to {max(spec.frequencies):.6g}): S holds the {port.mode} waves only, so power "
              "converted into that mode shows as loss", flush=True)


def check_resolved(port, plane, spec, system, where: str) -> None:
    """InputError where the band's shortest wavelength spans fewer than two of the plane's point
    spacings: the mesh cannot carry it, and a run would end with S ~ 0 and exit 0. It is how a
    band in GHz on a mesh in metres or mm (lobatto is unit-free) shows; the plane is every rank's."""
    count, n = plane.coords.shape[1], plane.coords.shape[-1]
    spacing = math.sqrt(float(np.sum(plane.weights)) / (count * max(n - 1, 1) ** 2))
    shortest = 1.0 / (max(spec.frequencies) * math.sqrt(float(system.epsilon) * float(system.mu)))
    if shortest < 2.0 * spacing:
        raise InputError(f"{where}: [ports] the highest frequency {max(spec.frequencies):.6g} has a wavelength of "
                         f"{shortest:.3g}, under two of [port.{port.name}]'s point spacings ({spacing:.3g}): the mesh "
                         "cannot carry it. Frequencies are cycles per unit time of the mesh's length unit with c = 1 "
                         "(docs/electromagnetics.md, \"Units\"): f = a / wavelength, e.g. 6 GHz on a mesh in mm is "
                         "6e9 * 1e-3 / 299792458 = 0.02")


def build_ports(case, system, comm=None) -> list:
    """TERM_BUILDERS entry: every port's plane and mode (``system.port_planes``) and a launch
    term for each driven port (one per run: runner/ports.py drives them in turn)."""
    ports, spec = ports_of(case)
    if not ports and spec is None:
        return []
    check_ports(case)
    where = case.source
    system.port_planes = {}
    names = driven(case)
    for port in ports:
        check_walls(case, port)
        plane = port_plane(system, port, comm, where)
        if port.source is not None and port.name not in names:
            # a source driven only in a later run: refused now, before this run is spent (collective)
            locate(system, port, "source", port.source, comm, where)
        cutoff = cutoff_frequency(plane.k_c, system.epsilon, system.mu)
        if not max(spec.frequencies) > cutoff:
            raise InputError(f"{where}: [port.{port.name}] mode {port.mode} is below its cutoff {cutoff:.6g} at every "
                             f"[ports] frequency (the highest: {max(spec.frequencies):.6g}): it does not propagate")
        check_resolved(port, plane, spec, system, where)
        system.port_planes[port.name] = plane
        warn_multimode(port, plane, spec, system, comm)
    cutoffs = [cutoff_frequency(system.port_planes[n].k_c, system.epsilon, system.mu) for n in names]
    params = pulse(spec.frequencies, cutoffs)
    # the pulse mostly launched (its envelope at e^-4.5 ~ 1 % after its centre): a shorter run's
    # transforms hold a part of the incident spectrum only, and its S-parameters nothing sound
    launched = params["t0"] + 3.0 * params["width"]
    if not case.time.t_end > launched:
        raise InputError(f"{where}: [time] t_end = {case.time.t_end:g} ends before the ports' pulse has been launched "
                         f"(it is centred at t = {params['t0']:.4g} with width {params['width']:.4g} for the band of "
                         f"[ports]): run well past t = {launched:.4g}, or use [time] until_decayed with a long t_end")
    return [launch(system, next(p for p in ports if p.name == n), system.port_planes[n].k_c, params, comm, where)
            for n in names]
