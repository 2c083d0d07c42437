"""Running Fourier transforms of the fields: ``[output.dft]`` (docs/electromagnetics.md,
"Frequency-domain monitors").

At every step the fields on the named surfaces (all fields: the fluxes need them) and regions
(the chosen fields) are added into F(f) = integral of u(t) e^(-2 pi i f t) dt by the trapezoidal
rule over the steps taken, on the backend's arrays (CuPy on the GPU); with ``taper`` the weight
u(t) w(t) of a window w that falls from 1 to 0 by a half cosine over the record's last share
(taper_weight). At the end rank 0 writes
``NAME_dft.h5``: the transforms with their points, and per frequency the flux of each surface
integrand, 1/2 Re of the integrand's bilinear form of (F, conj F): for a density q(u) quadratic
in the fields (E x H . n, p u . n) that is 1/2 [q(Re F) + q(Im F)]. Nothing here knows a system.

On a 2-D mesh a region's transform is (F, fields, K, 1, n, n), a surface's (F, fields, K, 1, n)
on edges (lines, rectangles, named boundary curves), and a flux is per unit depth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.config.dft import box_name, plane_name
from lobatto.errors import InputError
from lobatto.mesh.topology import element_shape, face_shape, face_slice
from lobatto.machine.parallel import allreduce, collective_errors, launched_local_size, rank_and_size
from lobatto.machine.memory_items import check_allocation
from lobatto.machine.resources import available_host_memory
from lobatto.monitors.base import Monitor
from lobatto.monitors.planes import box_faces, face_weights, plane_coverage, plane_faces
from lobatto.monitors.regions import WHOLE_MESH, region_index, surface_index

SUFFIX = "_dft"
#: complex128 arrays of a part's size alive while a step is added (the sums, the previous
#: step's phased values, the new ones and their sum)
RUNNING_COPIES = 4
#: host copies on rank 0 at the end, of every rank's parts: gathered, concatenated, reordered
GATHERED_COPIES = 3
ADVICE = "use fewer [output.dft] frequencies or fields, or smaller regions and surfaces"
#: the fluxes of a surface: of the run's fields, and with ``normalize`` of the incident run's
#: fields and of the difference (the scattered field), each per integrand and frequency
FLUX_KINDS = ("flux", "flux_incident", "flux_scattered")
#: a normalised flux is NaN where the reference's incident flux is below this share of its
#: largest magnitude (a frequency the source hardly excites: the ratio would be noise)
NORMALIZE_FLOOR = 1e-10


def taper_weight(t: float, t_start: float, t_end: float, taper: float) -> float:
    """The window w(t) of ``taper``: 1 up to t1 = t_end - taper (t_end - t_start), then
    (1 + cos(pi (t - t1) / (t_end - t1))) / 2, 0 from t_end on. A record cut at t_end while
    a wave near a cutoff still rings leaks into the band with its step at the cut; the window
    makes the cut smooth (benchmarks/bloch_slab.py --taper did it after the run)."""
    if taper <= 0.0:
        return 1.0
    t1 = t_end - taper * (t_end - t_start)
    if t <= t1:
        return 1.0
    if t >= t_end:
        return 0.0
    return 0.5 * (1.0 + float(np.cos(np.pi * (t - t1) / (t_end - t1))))


def file_name(name: str) -> str:
    return f"{name}{SUFFIX}.h5"


def transform_item(what: str, frequencies: int, fields: int, points: int, layout, known: bool = True,
                   advice: str = ADVICE):
    """memory_items.MemoryItem of one part's running transform: RUNNING_COPIES complex128 arrays
    (frequencies, fields, points) on the backend, and on the host its copy at the end plus, on
    rank 0, GATHERED_COPIES of every rank's."""
    nbytes = 16.0 * frequencies * fields * points
    return layout.backend_item(f"{what} {frequencies:,} frequenc{'y' if frequencies == 1 else 'ies'} x {fields} fields on {points:,} points",
                               RUNNING_COPIES * nbytes, host=(1 + GATHERED_COPIES * layout.ranks) * nbytes,
                               advice=advice, known=known)


def box_side_faces(layout, name: str) -> int | None:
    """Faces of a box mesh's side ``name`` on the rank with the most (at least its share), or
    None where it is not known before the mesh is built (a file mesh's surface)."""
    from lobatto.mesh.box import SIDE_NAMES

    if layout.box is None or name not in SIDE_NAMES:
        return None
    axis = SIDE_NAMES.index(name) // 2
    faces = int(np.prod(layout.box)) // int(layout.box[axis])
    return min(-(-faces // layout.ranks), layout.elements)


def check_parts_memory(parts, frequencies: int, region_fields: int, all_fields: int, system, what: str,
                       comm=None) -> None:
    """Collective: once the parts are found, before their transforms are allocated, they fit in
    the memory available now (memory_items.check_allocation), on every rank."""
    from lobatto.machine.memory_items import RunLayout

    layout = RunLayout(elements=system.num_elements, total_elements=system.num_elements, order=system.order,
                       fields=all_fields, ranks=1, precision=system.backend.precision, backend=system.backend.name)
    dim, n = system.mesh.dim, system.order + 1
    items = [transform_item(f"{what} {kind} '{name}':", frequencies, region_fields if kind == "region" else all_fields,
                            chosen.size * n ** (dim if kind == "region" else dim - 1), layout)
             for kind, name, _, chosen, *_ in parts if chosen.size]
    with collective_errors(comm):  # a rank that holds more may fail alone
        if items:
            host = available_host_memory()
            check_allocation(items, None if host is None else host // launched_local_size(),
                             system.backend.memory_available(), what)


class DftMonitor(Monitor):
    """The case's running transforms on this rank's part of the mesh, accumulated every step."""

    section = "dft"
    dimensions = (2, 3)  # 2-D: planes are lines of edges (planes.py), fluxes per unit depth
    not_in_checkpoint = "the transforms are not saved in it"
    #: no window, no plane reports: what a subclass that sets its own parts up (without this
    #: class's __init__) keeps
    taper: float = 0.0
    t_end: float | None = None
    coverage: dict | None = None

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        """memory_items.MemoryItem of each region and surface (transform_item); a region other
        than "all" and a file mesh's surface are known only once set up (checked again then)."""
        count, n, items = len(section.frequencies), layout.order + 1, []
        for region in section.regions:
            items.append(transform_item(f"[output.dft] region '{region}':", count, len(section.fields), layout.points,
                                        layout, known=region == WHOLE_MESH))
        for name in section.surfaces:
            faces = box_side_faces(layout, name)
            items.append(transform_item(f"[output.dft] surface '{name}':", count, layout.fields,
                                        (layout.elements if faces is None else faces) * n * n, layout,
                                        known=faces is not None))
        for name in ([plane_name(*p) for p in getattr(section, "planes", ())]
                     + [box_name(*b) for b in getattr(section, "boxes", ())]):  # known once found
            items.append(transform_item(f"[output.dft] surface '{name}':", count, layout.fields,
                                        layout.elements * n * n, layout, known=False))
        return items

    @classmethod
    def from_case(cls, case, section, system, comm=None) -> DftMonitor:
        """Collective: as Monitor.from_case, with the record's end [time] t_end (the taper's)."""
        monitor = cls(section, system, comm, t_end=None if case.time is None else case.time.t_end)
        monitor.output_name = case.output.name
        return monitor

    def __init__(self, section, system, comm=None, t_end: float | None = None):
        self.settings, self.system, self.comm = section, system, comm
        #: the taper's share of the record and the record's end (config/dft.py check_taper_end)
        self.taper, self.t_end = float(getattr(section, "taper", 0.0)), t_end
        if self.taper and t_end is None:
            raise InputError(f"[output.dft] taper = {self.taper:g} needs the record's end: give the monitor t_end")
        mesh, xp = system.mesh, system.backend.xp
        self.omega = 2 * np.pi * np.asarray(section.frequencies, dtype=np.float64)
        self.region_fields = [system.field_names.index(f) for f in section.fields]
        self.parts = []  # (kind, name, face or None, host elements, device elements, normals, weights)
        region_of, region_names = region_index(mesh)
        for region in section.regions:
            if region == WHOLE_MESH:
                chosen = np.arange(mesh.num_elements)
            elif region in region_names:
                chosen = np.nonzero(region_of == region_names.index(region))[0]
            else:
                raise InputError(f"[output.dft] regions: no region '{region}' in the mesh (regions: "
                                 f"{', '.join(dict.fromkeys((WHOLE_MESH,) + tuple(region_names)))})")
            self.parts.append(("region", region, None, chosen, xp.asarray(chosen), None, None))
        group_of, group_names = surface_index(mesh)
        interior = getattr(mesh, "interior_group", None)  # a closed surface inside the mesh, from inside
        for name in section.surfaces:
            on = None
            if name in group_names:
                g = group_names.index(name)
                on = ((mesh.face_neighbour < 0) & (group_of == g)) | (interior == g if interior is not None else False)
            if allreduce(comm, int(on.sum()) if on is not None else 0) == 0:
                raise InputError(f"[output.dft] surfaces: '{name}' has no boundary faces in the mesh, nor faces "
                                 f"around an enclosed part of it (surfaces: {', '.join(group_names) or 'none'}; an "
                                 "open surface inside the mesh: planes)")
            self.add_surface(name, on)
        #: per plane: its faces and area against the mesh's section (planes.py plane_coverage)
        self.coverage = {}
        for axis, value in getattr(section, "planes", ()):  # interior surfaces (monitors/planes.py)
            on, sign = plane_faces(system, axis, value, comm)
            self.coverage[plane_name(axis, value)] = plane_coverage(system, axis, value, on, comm)
            self.add_surface(plane_name(axis, value), on, sign)
        self.warn_partial_planes()
        for lower, upper in getattr(section, "boxes", ()):
            self.add_surface(box_name(lower, upper), *box_faces(system, lower, upper, comm))
        check_parts_memory(self.parts, len(self.omega), len(self.region_fields), len(system.field_names), system,
                           "[output.dft]", comm)
        self.sums = [None] * len(self.parts)
        self.incident = None  # with normalize: the incident run's sums, part by part (set_incident)
        self.previous = None  # (t, [values of each part]) of the last sample
        self.first_time = self.last_time = None
        self.samples = 0

    def warn_partial_planes(self) -> None:
        """A line on rank 0 for each plane that misses part of the mesh's cross-section (a file
        mesh's plane is the faces that happen to lie there): its flux is not the section's."""
        if rank_and_size(self.comm)[0] != 0:
            return
        for name, c in self.coverage.items():
            if c["partial"]:
                print(f'lobatto: warning: [output.dft] plane "{name}" is {c["faces"]} element '
                      f'face{"" if c["faces"] == 1 else "s"} of area '
                      f'{c["area"]:.6g}, less than the mesh\'s section there ({c["section_area"]:.6g}, its bounding '
                      f'box\'s), and the plane cuts {c["cut_elements"]} elements: it misses part of the '
                      "cross-section, and its flux is through its faces only", flush=True)

    def add_surface(self, name: str, on, sign=None) -> None:
        """The parts of surface ``name``: this rank's faces ``on`` (E, faces), a part per face
        direction, with the normals times ``sign`` (E, faces) (None: the faces' outward ones)."""
        system = self.system
        w = face_weights(system.order, system.mesh.dim)
        for face in range(system.mesh.num_faces):
            chosen = np.nonzero(on[:, face])[0]
            if chosen.size:
                normals = system.geometry.normals[:, chosen, face]
                if sign is not None:
                    normals = normals * sign[chosen, face][None, :, None, None]
                self.parts.append(("surface", name, face, chosen, system.backend.xp.asarray(chosen), normals,
                                   system.geometry.surface_jacobian[chosen, face] * w))

    def set_incident(self, parts: list, sums: list) -> None:
        """The parts and transforms of the same table in the run without [material] tables
        (runner/normalization.py): the same mesh and partition, so the same parts on every rank."""
        same = len(parts) == len(self.parts) and all(
            a[:3] == b[:3] and np.array_equal(a[3], b[3]) for a, b in zip(self.parts, parts))
        if not same:
            raise RuntimeError("[output.dft] normalize: the incident run's surfaces differ from this run's")
        self.incident = sums

    def after_step(self, u, step: int, t: float, last: int) -> None:
        """Every step: queued on the device like a step (accumulate)."""
        self.accumulate(u, t)

    def close(self, output_dir, attrs: dict) -> None:
        self.write(output_dir, attrs["name"], attrs)

    def describe(self) -> dict:
        out = {"file": file_name(self.output_name), "frequencies": list(self.settings.frequencies),
               "steps": self.samples}
        if self.coverage:  # each plane's faces and area (planes.py plane_coverage)
            out["planes"] = {name: {"faces": c["faces"], "area": c["area"], "section_area": c["section_area"],
                                    "partial": c["partial"]} for name, c in self.coverage.items()}
        if self.incident is not None:  # runner/normalization.py
            out.update(normalized_by=self.settings.normalize, incident_run="normalization")
        return {"dft": out}

    def _values(self, u) -> list:
        order, out = self.system.order, []
        for kind, _, face, _, elements, _, _ in self.parts:
            if kind == "region":
                out.append(u[self.region_fields][:, elements])
            else:
                out.append(u[:, elements][face_slice(face, order)])
        return out

    def accumulate(self, u, t: float) -> None:
        """Add the state at time t (every step, in order): the trapezoid over [t_prev, t]. The
        previous state is kept already multiplied by its phases, so each state is multiplied once."""
        xp = self.system.backend.xp
        phased = []
        if self.previous is None:
            self.first_time = t  # the record's start (the taper's t_start)
        weight = taper_weight(t, self.first_time, self.t_end, self.taper) if self.taper else 1.0
        for values in self._values(u):
            phase = xp.asarray(weight * np.exp(-1j * self.omega * t)).reshape((-1,) + (1,) * values.ndim)
            phased.append(phase * values[None].astype(np.float64))
        if self.previous is not None:
            t0, before = self.previous
            half = 0.5 * (t - t0)
            for i, (old, new) in enumerate(zip(before, phased)):
                term = old + new
                term *= half
                if self.sums[i] is None:
                    self.sums[i] = term
                else:
                    self.sums[i] += term
        self.previous = (t, phased)
        self.last_time = t
        self.samples += 1

    def results(self) -> dict:
        """Collective: {("region"|"surface", name): {"ids", "faces", "transform" (F, fields, K, ...),
        "coordinates", "flux": {integrand: (F,)}}} on rank 0 (None elsewhere)."""
        system, backend = self.system, self.system.backend
        order, count = system.order, len(self.omega)
        mine: dict = {}
        for i, ((kind, name, face, chosen, _, normals, weights), total) in enumerate(zip(self.parts, self.sums)):
            fields = len(self.region_fields) if kind == "region" else len(system.field_names)
            coords = system.geometry.coords[:, chosen]
            if total is None:  # fewer than two samples: nothing accumulated
                shape = (count, fields, chosen.size) + (element_shape if kind == "region" else face_shape)(
                    system.mesh.dim, order)
                total = np.zeros(shape, dtype=np.complex128)
            transform = np.asarray(backend.to_host(total)).astype(np.complex128)
            entry = mine.setdefault((kind, name), {"ids": [], "faces": [], "transform": [], "coordinates": [],
                                                   **{what: {} for what in FLUX_KINDS}})
            entry["ids"].append(system.mesh.element_ids[chosen])
            entry["faces"].append(np.full(chosen.size, -1 if face is None else face))
            entry["transform"].append(np.moveaxis(transform, 2, 0))  # element first, to concatenate
            entry["coordinates"].append(np.moveaxis(coords if face is None else coords[face_slice(face, order)], 1, 0))
            if kind != "surface":
                continue
            spectra = {"flux": system.flux_spectrum(transform)}  # (a Bloch pair: the complex field's)
            if self.incident is not None:
                incident = self.incident[i]
                incident = np.zeros_like(transform) if incident is None else \
                    np.asarray(backend.to_host(incident)).astype(np.complex128)
                spectra.update(flux_incident=system.flux_spectrum(incident),
                               flux_scattered=system.flux_spectrum(transform - incident))
            for quantity in self.settings.flux:
                density = system.spec.integrands[quantity].density
                for what, values in spectra.items():
                    flux = np.array([0.5 * float(np.sum(weights * (density(system, values[f].real, normals)
                                                                    + density(system, values[f].imag, normals))))
                                     for f in range(count)])
                    entry[what][quantity] = entry[what].get(quantity, 0.0) + flux
        rank, size = rank_and_size(self.comm)
        gathered = [mine] if self.comm is None or size == 1 else self.comm.gather(mine, root=0)
        if rank != 0:
            return None
        out = {}
        for part in gathered:
            for key, entry in part.items():
                into = out.setdefault(key, {"ids": [], "faces": [], "transform": [], "coordinates": [],
                                            **{what: {} for what in FLUX_KINDS}})
                for item in ("ids", "faces", "transform", "coordinates"):
                    into[item] += entry[item]
                for what in FLUX_KINDS:
                    for quantity, flux in entry[what].items():
                        into[what][quantity] = into[what].get(quantity, 0.0) + flux
        for key, entry in out.items():
            ids, faces = np.concatenate(entry["ids"]), np.concatenate(entry["faces"])
            order_ = np.lexsort((faces, ids))
            entry["ids"], entry["faces"] = ids[order_], faces[order_]
            entry["transform"] = np.moveaxis(np.concatenate(entry["transform"])[order_], 0, 2)
            entry["coordinates"] = np.moveaxis(np.concatenate(entry["coordinates"])[order_], 0, 1)
        kinds = FLUX_KINDS if self.incident is not None else FLUX_KINDS[:1]
        for kind, name in dict.fromkeys((kind, name) for kind, name, *_ in self.parts):  # a rank may hold none
            entry = out.setdefault((kind, name), {})
            for what in kinds:
                for quantity in self.settings.flux if kind == "surface" else ():
                    entry.setdefault(what, {}).setdefault(quantity, np.zeros(count))
        return out

    def normalized(self, results: dict) -> dict:
        """{surface: {"normalized" | "normalized_scattered": {integrand: (F,)}}}: each flux and
        scattered flux over the incident flux through the ``normalize`` surface, NaN where that
        is below NORMALIZE_FLOOR of its largest magnitude."""
        reference = results[("surface", self.settings.normalize)]["flux_incident"]
        out = {}
        for (kind, name), entry in results.items():
            if kind != "surface":
                continue
            for quantity, incident in reference.items():
                incident = np.asarray(incident, dtype=np.float64)
                small = np.abs(incident) <= NORMALIZE_FLOOR * max(float(np.max(np.abs(incident))), np.finfo(float).tiny)
                safe = np.where(small, 1.0, incident)
                for what, source in (("normalized", "flux"), ("normalized_scattered", "flux_scattered")):
                    ratio = np.asarray(entry[source][quantity], dtype=np.float64) / safe
                    out.setdefault(name, {}).setdefault(what, {})[quantity] = np.where(small, np.nan, ratio)
        return out

    def write(self, directory, name: str, attrs: dict) -> Path | None:
        """Collective: ``NAME_dft.h5`` written by rank 0 (atomically)."""
        from lobatto.io.atomic import h5_output

        results = self.results()
        if results is None:
            return None
        path = Path(directory) / file_name(name)
        with h5_output(path, attrs) as f:
            f["frequencies"] = np.asarray(self.settings.frequencies, dtype=np.float64)
            f.attrs["t_first"] = float(self.first_time if self.first_time is not None else 0.0)
            f.attrs["t_last"] = float(self.last_time if self.last_time is not None else 0.0)
            f.attrs["samples"] = self.samples
            f.attrs["taper"] = self.taper  # the window (taper_weight) from t_first to t_end
            if self.taper:
                f.attrs["t_end"] = float(self.t_end)
            for (kind, where), entry in results.items():
                group = f.create_group(f"{'regions' if kind == 'region' else 'surfaces'}/{where}")
                fields = self.settings.fields if kind == "region" else self.system.field_names
                for key, value in (self.coverage or {}).get(where, {}).items() if kind == "surface" else ():
                    group.attrs[key] = value  # a plane's faces, area, the mesh's section there
                if "ids" in entry:
                    group["element_ids"] = entry["ids"].astype(np.int64)
                    if kind == "surface":
                        group["faces"] = entry["faces"].astype(np.int64)
                    group["coordinates"] = entry["coordinates"]
                    for c, field in enumerate(fields):
                        group[field] = entry["transform"][:, c]
                for what in FLUX_KINDS:
                    for quantity, flux in entry.get(what, {}).items():
                        group[f"{what}/{quantity}"] = np.asarray(flux, dtype=np.float64)
            if self.incident is not None:
                f.attrs["normalized_by"] = self.settings.normalize
                for where, ratios in self.normalized(results).items():
                    for what, by_quantity in ratios.items():
                        for quantity, ratio in by_quantity.items():
                            f[f"surfaces/{where}/{what}/{quantity}"] = ratio
        return path
