"""Volume and surface integrals of a run: ``[output.integrals]`` (docs/probes.md), sampled by
the time series (series.py) into ``NAME_probes.csv`` and ``.h5``.

Set up once (names checked against the mesh), then sampled every K steps: collective, reduced
over ranks. The quantities come from the system's spec (``PhysicsSpec.integrands``); nothing
here knows a system.

* Volume integrals: sum of mass * density over a region's elements (GLL quadrature, the same
  as ``System.energy``), on the backend's arrays, a block of elements at a time.
* Surface integrals: sum of surface Jacobian * w_a w_b * flux density over the boundary faces
  of a named surface, with the faces' outward normals, on the host.
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization import gll_weights
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import face_slice
from lobatto.monitors.probes import BLOCK_POINTS, samples
from lobatto.monitors.regions import WHOLE_MESH, region_index, surface_index


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
        region_of, region_names = region_index(mesh)
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

        group_of, group_names = surface_index(mesh)
        boundary = mesh.face_neighbour < 0
        self.surface = []  # (integrand, faces: [(face, device elements, host normals, sJ w_a w_b)])
        w = gll_weights(system.order)
        # a face's quadrature weights w_a w_b; on a 2-D mesh's (1, n) edges w_a = 1 (per unit depth)
        face_weights = np.outer(w, w) if mesh.dim == 3 else w[None, :]
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
            for face in range(mesh.num_faces):
                elements = np.nonzero(on[:, face])[0]
                if elements.size:
                    faces.append((face, xp.asarray(elements), geometry.normals[:, elements, face],
                                  geometry.surface_jacobian[elements, face] * face_weights))
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
                own = None if integrand.integral is None else integrand.integral(system, u[:, chosen], chosen)
                if own is not None:  # the system's own inner product (e.g. the Galerkin form's energy)
                    total += float(own)
                    continue
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
