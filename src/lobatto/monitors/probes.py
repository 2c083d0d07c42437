"""Probe points of a run: ``[output.probes]`` (docs/probes.md), sampled by the time series
(series.py) into ``NAME_probes.csv`` and ``.h5``.

Set up once (points located), then sampled every K steps: collective, reduced over ranks.
A probe belongs to the element with the lowest global id among those holding the point
(mesh/locate.py), on whichever rank has it; that rank interpolates the fields with the
element's Lagrange basis, the others add zeros (sums over ranks are then exact). Nothing
here knows a system.
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.mesh.locate import axis_weights, candidate_pairs, element_boxes, newton

#: points per block of elements a sample copies (probes) or integrates (volume integrals) at
#: a time: bounds its temporaries
BLOCK_POINTS = 1 << 22
#: values of element nodes Newton's method copies at a time while probes are located
NEWTON_VALUES = 1 << 22
NOT_FOUND = np.iinfo(np.int64).max
#: host bytes per probe point besides its values: the search's candidate pairs and Newton's
#: iterates, owner, reference coordinates, the summary's lists and the CSV header's names
PROBE_BYTES = 2048


def samples(section, layout) -> int:
    """Rows the time series keeps of ``section`` (probes or integrals; the HDF5 file is
    rewritten from them): steps / every + 2 where the case gives the steps ([time] dt), else 2
    (a lower bound)."""
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
        # a 2-D mesh lies in z = 0 and its fields do not depend on z: a point's z is dropped
        self.points = np.zeros((len(section.points), 3))
        for p, point in enumerate(section.points):
            self.points[p, :system.mesh.dim] = point[:system.mesh.dim]
        self.fields = tuple(f for f in section.fields if f in system.field_names)  # 2-D: those that exist
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
        self.weights = axis_weights(system.order, self.reference[self.mine], system.mesh.dim)  # (h(r), h(s), h(t)), each (m, n); h(t) (m, 1) in 2-D
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
