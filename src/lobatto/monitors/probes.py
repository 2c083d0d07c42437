"""Probes and integrals of a run: ``[output.probes]`` and ``[output.integrals]`` (docs/probes.md).

Set up once (points located, names checked against the mesh), then sampled every K steps:
collective, reduced over ranks, written by rank 0 (io/timeseries.py). Nothing here knows a
system: the quantities come from the system's spec (``PhysicsSpec.integrands``).

* A probe belongs to the element with the lowest global id among those holding the point
  (mesh/locate.py), on whichever rank has it; that rank interpolates the fields with the
  element's Lagrange basis, the others add zeros (sums over ranks are then exact).
* Volume integrals: sum of mass * density over a region's elements (GLL quadrature, the same
  as ``System.energy``), on the backend's arrays, a block of elements at a time.
* Surface integrals: sum of surface Jacobian * w_a w_b * flux density over the boundary faces
  of a named surface, with the faces' outward normals, on the host.
"""

from __future__ import annotations

import time

import numpy as np

from lobatto.discretization import gll_weights
from lobatto.errors import InputError
from lobatto.mesh.locate import axis_weights, candidate_pairs, element_boxes, newton
from lobatto.mesh.topology import NUM_FACES, face_slice
from lobatto.machine.parallel import allreduce, collective_errors, rank_and_size

#: points per block of elements in volume integrals: bounds the temporaries of a density
BLOCK_POINTS = 1 << 22
#: values of element nodes Newton's method copies at a time while probes are located
NEWTON_VALUES = 1 << 22
WHOLE_MESH = "all"
NOT_FOUND = np.iinfo(np.int64).max
#: host bytes per probe point besides its values: the search's candidate pairs and Newton's
#: iterates, owner, reference coordinates, the summary's lists and the CSV header's names
PROBE_BYTES = 2048


def samples(section, layout) -> int:
    """Rows a series keeps in memory (the HDF5 file is rewritten from them): steps / every + 2
    where the case gives the steps ([time] dt), else 2 (a lower bound)."""
    return (layout.steps or 0) // section.every + 2


class Probes:
    """The case's probe points on this rank's part of the mesh."""

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        """memory_items.MemoryItem: PROBE_BYTES and the per-axis weights per point, each sample's
        values (and their sum over ranks), and the rows kept for the HDF5 file."""
        from lobatto.machine.memory_items import MemoryItem

        points, fields = len(section.points), len(section.fields)
        rows = samples(section, layout)
        host = points * (PROBE_BYTES + 24 * (layout.order + 1) + 8 * fields * (3 + rows) + 24 * fields)
        return [MemoryItem(f"[output.probes] {points:,} points x {fields} fields over {rows:,} samples", host=host,
                           advice="use fewer [output.probes] points or fields, or a larger every")]

    def __init__(self, section, system, comm=None):
        self.system, self.comm = system, comm
        self.points = np.asarray(section.points, dtype=np.float64).reshape(-1, 3)
        self.fields = tuple(section.fields)
        self.field_index = [system.field_names.index(f) for f in self.fields]
        coords, ids = system.geometry.coords, system.mesh.element_ids
        # every candidate (point, element) pair at once, by lowest global id per point
        point_of, element_of = candidate_pairs(element_boxes(coords), self.points)
        order = np.lexsort((ids[element_of], point_of))
        point_of, element_of = point_of[order], element_of[order]
        inside, reference = np.zeros(point_of.size, dtype=bool), np.zeros((point_of.size, 3))
        chunk = max(1, NEWTON_VALUES // (3 * (system.order + 1) ** 3))  # bounds Newton's copy of the nodes
        for first in range(0, point_of.size, chunk):
            part = slice(first, first + chunk)
            result = newton(coords, element_of[part], self.points[point_of[part]])
            inside[part], reference[part] = result.inside, result.reference
        point_of, element_of, reference = point_of[inside], element_of[inside], reference[inside]
        unique, first = np.unique(point_of, return_index=True)  # the first inside is the lowest id
        best = np.full(len(self.points), NOT_FOUND, dtype=np.int64)
        best[unique] = ids[element_of[first]]
        self.element_ids = allreduce(comm, best, "min")
        outside = np.nonzero(self.element_ids == NOT_FOUND)[0]
        if outside.size:
            p = int(outside[0])
            more = f" (and {outside.size - 1} more)" if outside.size > 1 else ""
            shown = ", ".join(repr(float(v)) for v in self.points[p])
            raise InputError(f"[output.probes] points[{p}] = [{shown}] is outside the mesh: no element holds it{more}")
        # this rank's probes: those whose lowest-id element it holds
        mine = ids[element_of[first]] == self.element_ids[unique]
        self.mine = unique[mine]
        self.local_elements = element_of[first][mine].astype(np.int64)
        local = np.zeros((len(self.points), 3))
        local[self.mine] = reference[first][mine]
        self.reference = allreduce(comm, local)
        self.weights = axis_weights(system.order, self.reference[self.mine])  # (h(r), h(s), h(t)), each (m, n)
        self.device_elements = system.backend.xp.asarray(self.local_elements) if self.mine.size else None
        self.chunk = max(1, BLOCK_POINTS // (len(self.fields) * (system.order + 1) ** 3))

    def values(self, u) -> np.ndarray:
        """Collective: (fields, P) the probes' values (every rank gets them)."""
        out = np.zeros((len(self.fields), len(self.points)))
        hr, hs, ht = self.weights
        for first in range(0, self.mine.size, self.chunk):  # the owners' elements, a block at a time
            part = slice(first, first + self.chunk)
            held = self.system.backend.to_host(u[:, self.device_elements[part]]).astype(np.float64, copy=False)
            held = held[self.field_index]  # (fields, m, n, n, n)
            out[:, self.mine[part]] = np.einsum("fmkji,mk,mj,mi->fm", held, ht[part], hs[part], hr[part])
        return allreduce(self.comm, out)

    def describe(self) -> dict:
        return {"fields": list(self.fields), "points": self.points.tolist(), "element_ids": self.element_ids.tolist(),
                "reference": self.reference.tolist()}


class Integrals:
    """The case's volume and surface integrals on this rank's part of the mesh."""

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        """memory_items.MemoryItem: a block's density temporaries (the fields and 4 more values per
        point of at most BLOCK_POINTS points) and the rows kept for the HDF5 file."""
        columns = len(section.volume) * len(section.regions) + len(section.surface) * len(section.surfaces)
        block = min(layout.points, BLOCK_POINTS) * (layout.fields + 4) * layout.value_bytes
        return [layout.backend_item(f"[output.integrals] {columns:,} columns", block,
                                    host=8.0 * columns * samples(section, layout),
                                    advice="use fewer [output.integrals] integrands, regions or surfaces")]

    def __init__(self, section, system, comm=None):
        self.system, self.comm = system, comm
        mesh, spec, backend = system.mesh, system.spec, system.backend
        xp = backend.xp
        self.columns = []  # (quantity, where, kind, doc)
        self.volume = []  # (integrand, elements: None for all or device indices)
        region_of, region_names = _regions(mesh)
        for region in section.regions:
            if region == WHOLE_MESH:
                elements = None
            elif region in region_names:
                elements = xp.asarray(np.nonzero(region_of == region_names.index(region))[0])
            else:
                raise InputError(f"[output.integrals] regions: no region '{region}' in the mesh "
                                 f"(regions: {', '.join(dict.fromkeys((WHOLE_MESH,) + tuple(region_names)))})")
            for quantity in section.volume:
                self.columns.append((quantity, region, "volume", spec.integrands[quantity].doc))
                self.volume.append((spec.integrands[quantity], elements))
        self.mass = system.quadrature_mass()  # the system's own (systems/base.py): energy@all = its energy
        self.block = max(1, BLOCK_POINTS // (system.order + 1) ** 3)

        group_of, group_names = _surfaces(mesh)
        boundary = mesh.face_neighbour < 0
        self.surface = []  # (integrand, faces: [(face, device elements, host normals, sJ w_a w_b)])
        w = gll_weights(system.order)
        geometry = system.geometry
        for name in section.surfaces:
            on = boundary & (group_of == group_names.index(name)) if name in group_names else None
            count = allreduce(comm, int(on.sum()) if on is not None else 0)
            if count == 0:
                known = ", ".join(group_names) or "none"
                why = "no boundary faces (a side of a periodic axis?)" if name in group_names else "no such surface"
                raise InputError(f"[output.integrals] surfaces: '{name}' has {why} in the mesh "
                                 f"(surfaces: {known})")
            faces = []
            for face in range(NUM_FACES):
                elements = np.nonzero(on[:, face])[0]
                if elements.size:
                    faces.append((face, xp.asarray(elements), geometry.normals[:, elements, face],
                                  geometry.surface_jacobian[elements, face] * np.outer(w, w)))
            for quantity in section.surface:
                self.columns.append((quantity, name, "surface", spec.integrands[quantity].doc))
                self.surface.append((spec.integrands[quantity], faces))

    def values(self, u) -> np.ndarray:
        """Collective: (Q,) the integrals, in the order of ``columns`` (every rank gets them)."""
        local = [self._volume(integrand, elements, u) for integrand, elements in self.volume]
        local += [self._surface(integrand, faces, u) for integrand, faces in self.surface]
        return allreduce(self.comm, np.array(local, dtype=np.float64))

    def _volume(self, integrand, elements, u) -> float:
        xp, system = self.system.backend.xp, self.system
        count = u.shape[1] if elements is None else int(elements.size)
        total = 0.0
        with np.errstate(all="ignore"):  # an overflow gives inf, as in System.energy
            for first in range(0, count, self.block):
                part = slice(first, min(first + self.block, count))
                chosen = part if elements is None else elements[part]
                density = (integrand.density(system, u[:, chosen], chosen) if integrand.per_element
                           else integrand.density(system, u[:, chosen]))
                total += float(xp.sum(self.mass[chosen] * density, dtype=np.float64))
        return total

    def _surface(self, integrand, faces, u) -> float:
        backend, order = self.system.backend, self.system.order
        total = 0.0
        for face, elements, normals, weights in faces:
            values = backend.to_host(u[:, elements][face_slice(face, order)]).astype(np.float64, copy=False)
            total += float(np.sum(weights * integrand.density(self.system, values, normals)))
        return total


def _regions(mesh) -> tuple[np.ndarray, tuple]:
    """(E,) region index of each element and the region names; one region "all" on meshes
    that have none."""
    regions = getattr(mesh, "regions", None)
    if regions is None:
        return np.zeros(mesh.num_elements, dtype=np.int64), (WHOLE_MESH,)
    return np.asarray(regions), tuple(getattr(mesh, "region_names", (WHOLE_MESH,)))


def _surfaces(mesh) -> tuple[np.ndarray, tuple]:
    """(E, 6) surface index of each face (-1: none) and the surface names. Meshes without
    named surfaces that come from the box generator name their sides by face number."""
    group = getattr(mesh, "face_group", None)
    if group is not None:
        return np.asarray(group), tuple(getattr(mesh, "group_names", ()))
    if getattr(mesh, "element_labels", None) is not None:  # a box: face f lies on side f
        from lobatto.mesh.box import SIDE_NAMES

        faces = np.broadcast_to(np.arange(NUM_FACES), mesh.face_neighbour.shape)
        return np.where(mesh.face_neighbour < 0, faces, -1), SIDE_NAMES
    return np.full(mesh.face_neighbour.shape, -1), ()


class TimeSeries:
    """Probes and integrals of one run, sampled at step 0, every K steps (each section its own
    K) and at the last step, written by rank 0 into ``NAME_probes.csv`` and ``NAME_probes.h5``."""

    def __init__(self, case, system, output_dir, comm=None):
        self.case, self.system, self.output_dir, self.comm = case, system, output_dir, comm
        self.rank, _ = rank_and_size(comm)
        out = case.output
        self.probes = Probes(out.probes, system, comm) if out.probes is not None else None
        self.integrals = Integrals(out.integrals, system, comm) if out.integrals is not None else None
        self.dft = None  # [output.dft]: running transforms, accumulated every step (dft.py)
        if getattr(out, "dft", None) is not None:
            from lobatto.monitors.dft import DftMonitor

            self.dft = DftMonitor(out.dft, system, comm)
        self.far_field = None  # [output.far_field]: near-to-far transformation (nearfar.py), every step
        if getattr(out, "far_field", None) is not None:
            from lobatto.systems.maxwell.far_field import FarFieldMonitor

            self.far_field = FarFieldMonitor(out.far_field, system, comm, case.source)
        self.writer = None
        self.samples = 0

    @staticmethod
    def memory_estimate(case, layout) -> list:
        """memory_items.MemoryItem of each section of the case's series (each class's own count)."""
        out, items = case.output, []
        if out.probes is not None:
            items += Probes.memory_estimate(out.probes, layout)
        if out.integrals is not None:
            items += Integrals.memory_estimate(out.integrals, layout)
        if getattr(out, "dft", None) is not None:
            from lobatto.monitors.dft import DftMonitor

            items += DftMonitor.memory_estimate(out.dft, layout)
        if getattr(out, "far_field", None) is not None:
            from lobatto.systems.maxwell.far_field import FarFieldMonitor

            items += FarFieldMonitor.memory_estimate(out.far_field, layout)
        return items

    @classmethod
    def from_case(cls, case, system, output_dir, comm=None):
        """The run's time series, or None when the case asks for none."""
        if (case.output.probes is None and case.output.integrals is None and getattr(case.output, "dft", None) is None
                and getattr(case.output, "far_field", None) is None):
            return None
        return cls(case, system, output_dir, comm)

    @staticmethod
    def _due(section, step: int, last: int) -> bool:
        return section is not None and (step % section.every == 0 or step == last)

    def start(self, u, step: int, t: float, last: int) -> None:
        """Collective, before the run's first step: open the files (rank 0; a continued run
        keeps the samples before ``step``) and sample the state if due (step 0 always is)."""
        with collective_errors(self.comm):
            if self.dft is not None and step > 0:
                raise InputError("[output.dft] cannot continue from a checkpoint: the transforms are not saved in "
                                 "it (run from the start)")
            if self.far_field is not None and step > 0:
                raise InputError("[output.far_field] cannot continue from a checkpoint: the transforms are not saved "
                                 "in it (run from the start)")
            if self.rank == 0 and self.writer is None and (self.probes is not None or self.integrals is not None):
                self.writer = self._open(step)
        self.after_step(u, step, t, last)

    def after_step(self, u, step: int, t: float, last: int) -> float:
        """Collective: sample what is due at ``step`` (a multiple of a section's every, or the
        run's ``last`` step) and append it to the files (rank 0). Returns the seconds taken."""
        out = self.case.output
        due_probes, due_integrals = self._due(out.probes, step, last), self._due(out.integrals, step, last)
        start = time.perf_counter()
        if self.dft is not None:  # queued on the device like a step; counted as output time
            self.dft.accumulate(u, t)
        if self.far_field is not None:
            self.far_field.accumulate(u, t)
        if not (due_probes or due_integrals):
            return time.perf_counter() - start
        self.system.backend.synchronize()
        probes = self.probes.values(u) if due_probes else None
        integrals = self.integrals.values(u) if due_integrals else None
        with collective_errors(self.comm):
            if self.rank == 0:
                self.writer.append(step, t, probes, integrals)
        self.samples += 1
        return time.perf_counter() - start

    def close(self) -> None:
        """Collective: the HDF5 file brought up to date (rank 0)."""
        with collective_errors(self.comm):
            if self.writer is not None:
                self.writer.close()
        if self.dft is not None:
            with collective_errors(self.comm):
                attrs = {"config": self.case.to_toml(), "equations": self.system.name, "name": self.case.output.name}
                self.dft.write(self.output_dir, self.case.output.name, attrs)
        if self.far_field is not None:
            with collective_errors(self.comm):
                attrs = {"config": self.case.to_toml(), "equations": self.system.name, "name": self.case.output.name}
                self.far_field.write(self.output_dir, self.case.output.name, attrs)

    def _open(self, step: int):
        from lobatto.io.timeseries import TimeSeriesWriter

        attrs = {"config": self.case.to_toml(), "equations": self.system.name, "name": self.case.output.name}
        return TimeSeriesWriter(self.output_dir, self.case.output.name,
                                None if self.probes is None else self.probes.describe(),
                                None if self.integrals is None else self.integrals.columns, attrs,
                                continue_from=step if step > 0 else None)

    def describe(self) -> dict:
        """The summary's entry: the files, the number of samples, what was sampled."""
        from lobatto.io.timeseries import file_names

        entry = {"files": list(file_names(self.case.output.name)) if self.probes or self.integrals else [],
                 "samples": self.samples}
        if self.dft is not None:
            from lobatto.monitors.dft import file_name

            entry["dft"] = {"file": file_name(self.case.output.name), "frequencies": list(self.dft.section.frequencies),
                            "steps": self.dft.samples}
        if self.far_field is not None:
            from lobatto.systems.maxwell.far_field import file_name as far_field_file

            entry["far_field"] = {**self.far_field.describe(), "file": far_field_file(self.case.output.name)}
        if self.probes is not None:
            entry["probes"] = {"every": self.case.output.probes.every, **self.probes.describe()}
        if self.integrals is not None:
            entry["integrals"] = {"every": self.case.output.integrals.every,
                                  "columns": [f"{q}@{w}" for q, w, _, _ in self.integrals.columns]}
        return entry
