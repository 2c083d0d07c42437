"""Direct stiffness summation (Q Q^T) and the assembled inner product of continuous Galerkin.

A continuous field is stored element by element, (E, n, n, n), with every copy of a shared
point holding the same value. ``dssum`` sums the copies of each point (over this rank and
the others, through ``comm.GatherScatter``), so ``dssum(A_local u)`` is the assembled
operator applied to u. Inner products weight each copy by 1 / multiplicity, so every
distinct point counts once, and are reduced over ranks.

    assembly = Assembly(mesh, order, backend, comm, dirichlet=faces)
    Au = assembly.dssum(helmholtz.apply_local(u))    # in place, returns its argument
    Au *= assembly.mask                              # zero on Dirichlet points
    r2 = assembly.dot(r, r)

Reproducible (the default; ``LOBATTO_REPRODUCIBLE=0`` turns it off for a side-by-side
timing): ``dssum`` adds each point's copies in global (element id, local point) order
(``comm.ordered``) and ``dot`` sums each element's points in a fixed order, then the
per-element sums exactly over the ranks (``comm.exact_sum``). Both then give the same bits on
1, 2 or 3 ranks, with any partition, so a solver iterates identically on every rank count.
"""

from __future__ import annotations

import math
import os

import numpy as np

from lobatto.comm import GatherScatter
from lobatto.comm.exact_sum import accumulate_rows, totals
from lobatto.errors import InputError
from lobatto.mesh.topology import NUM_FACES, face_slice
from lobatto.operators.numbering import continuous_ids
from lobatto.machine.parallel import allreduce

#: reproducible dssum and dot (module docstring); LOBATTO_REPRODUCIBLE=0 gives the faster,
#: partition-dependent ones (read when an Assembly is made)
REPRODUCIBLE_ENV = "LOBATTO_REPRODUCIBLE"


def reproducible_default() -> bool:
    return os.environ.get(REPRODUCIBLE_ENV, "1").strip() not in ("0", "false", "no", "off")


def dirichlet_faces(mesh, names) -> np.ndarray:
    """(E, 6) bool: boundary faces whose group (a box side, a mesh file's surface) or
    boundary name is in ``names``; a name that is neither is an InputError."""
    names = set(names)
    unknown = sorted(names - set(mesh.group_names) - set(mesh.boundary_names))
    if unknown:
        known = sorted(set(mesh.group_names) | set(mesh.boundary_names))
        raise InputError(f"Dirichlet boundaries {unknown} are not in the mesh; its boundaries are {known}")
    groups = [i for i, g in enumerate(mesh.group_names) if g in names]
    kinds = [i for i, b in enumerate(mesh.boundary_names) if b in names]
    boundary = mesh.face_neighbour < 0
    chosen = np.isin(mesh.face_group, groups) | np.isin(mesh.boundary_kind, kinds)
    return boundary & chosen


class Assembly:
    """Continuous numbering of one mesh at one order, with its gather–scatter.

    ids:                  (E, n, n, n) int64 global point ids, host (numbering.continuous_ids)
    num_global_points:    distinct points of the whole mesh
    multiplicity:         (E, n, n, n) backend array: copies of each point over all ranks
    inverse_multiplicity: 1 / multiplicity (the counting weights of ``dot``)
    mask:                 (E, n, n, n) backend array: 0 on points of Dirichlet faces (on any
                          element holding them), 1 elsewhere
    gs:                   the ``comm.GatherScatter`` over ``ids``

    ``dirichlet``: optional (E, 6) bool array, True on faces with Dirichlet data
    (``dirichlet_faces`` builds one from side names). ``method`` and ``exchange`` are passed
    to the gather–scatter. Construction is collective over ``comm``.
    """

    def __init__(self, mesh, order: int, backend, comm=None, dirichlet=None, method: str = "auto",
                 exchange: str = "auto", reproducible: bool | None = None):
        self.order = int(order)
        self.n = self.order + 1
        self.backend = backend
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.num_elements = mesh.num_elements
        self.shape = (self.num_elements, self.n, self.n, self.n)
        self.dirichlet = self._check_dirichlet(dirichlet)
        self.ids = continuous_ids(mesh, self.order, self.comm)
        local_max = int(self.ids.max()) if self.ids.size else -1
        self.num_global_points = int(allreduce(self.comm, local_max, "max")) + 1
        xp = backend.xp
        self.reproducible = reproducible_default() if reproducible is None else bool(reproducible)
        npts = self.n ** 3
        self.points = npts
        self.element_ids = np.asarray(mesh.element_ids, dtype=np.int64)
        keys = None
        if self.reproducible:  # global element id, then local point: the same order on every partition
            keys = self.point_keys().ravel()
        self.gs = GatherScatter((self.ids + 1).ravel(), self.comm, method=method, xp=xp, exchange=exchange,
                                keys=keys)
        self.multiplicity = self.dssum(backend.zeros(self.shape) + 1)
        self.inverse_multiplicity = 1.0 / self.multiplicity
        on_faces = np.zeros(self.shape, dtype=backend.dtype)
        for face in range(NUM_FACES):
            rows = np.flatnonzero(self.dirichlet[:, face])
            on_faces[(rows,) + face_slice(face, self.order)[1:]] = 1.0
        fixed = self.dssum(backend.asarray(on_faces))
        self.mask = (fixed == 0).astype(backend.dtype)

    def point_keys(self) -> np.ndarray:
        """(E, n^3) int64: global element id * n^3 + local point, unique over all ranks and
        the same on every partition (unlike ``ids``, which are numbered per partition)."""
        return self.element_ids[:, None] * self.points + np.arange(self.points, dtype=np.int64)[None, :]

    def _check_dirichlet(self, dirichlet) -> np.ndarray:
        if dirichlet is None:
            return np.zeros((self.num_elements, NUM_FACES), dtype=bool)
        faces = np.asarray(dirichlet)
        if faces.shape != (self.num_elements, NUM_FACES) or faces.dtype != bool:
            raise InputError(f"Assembly: dirichlet must be a ({self.num_elements}, {NUM_FACES}) bool array of faces, "
                             f"got {faces.dtype} {faces.shape}")
        return faces

    def _flat(self, u):
        if self.gs is None:
            raise InputError("Assembly: used after free()")
        shape = tuple(getattr(u, "shape", ()))
        if shape[-4:] != self.shape:
            raise InputError(f"Assembly: expected an array ending in {self.shape} (E, n, n, n), got shape {shape}")
        if not u.flags.c_contiguous:
            raise InputError("Assembly: dssum works in place and needs a C-contiguous array")
        return u.reshape(-1, math.prod(self.shape))

    def dssum(self, u):
        """Sum the copies of every point, in place on u (..., E, n, n, n); returns u."""
        flat = self._flat(u)
        self.gs.apply(flat, "sum")
        return u

    def dssum_start(self, u):
        """Begin ``dssum(u)``; work on points no other rank holds may go on until ``dssum_finish``."""
        flat = self._flat(u)
        return self.gs.start(flat, "sum")

    def dssum_finish(self, handle):
        """Complete a ``dssum_start``; returns nothing (u is summed in place)."""
        self.gs.finish(handle)

    def dot(self, u, v) -> float:
        """The assembled inner product sum(u v / multiplicity), reduced over ranks: for
        continuous u and v every distinct point counts once."""
        xp = self.backend.xp
        if self.reproducible:
            return totals(self.comm, [accumulate_rows(self.points, u, v, self.inverse_multiplicity)])[0]
        local = float(xp.vdot(u.reshape(-1), (v * self.inverse_multiplicity).reshape(-1)))
        return float(allreduce(self.comm, local, "sum"))

    def dots(self, vectors, v) -> list[float]:
        """[dot(u, v) for u in vectors], each with dot's bits, in one reduction over ranks."""
        if not len(vectors):
            return []
        if self.reproducible:
            return totals(self.comm, [accumulate_rows(self.points, u, v, self.inverse_multiplicity) for u in vectors])
        xp = self.backend.xp
        weighted = (v * self.inverse_multiplicity).reshape(-1)
        local = np.array([float(xp.vdot(u.reshape(-1), weighted)) for u in vectors], dtype=np.float64)
        return [float(x) for x in allreduce(self.comm, local, "sum")]

    def integral(self, *fields) -> list[float]:
        """sum over this rank's points of each field (E, n, n, n) or (k, E, n, n, n), over
        every rank (collective): reproducible like ``dot`` when it is, else a plain allreduce
        of the local sums (one reduction for all)."""
        if self.reproducible:
            return totals(self.comm, [accumulate_rows(self.points, f) for f in fields])
        local = np.array([float(f.sum()) for f in fields], dtype=np.float64)
        return [float(x) for x in allreduce(self.comm, local, "sum")]

    def norm(self, u) -> float:
        return math.sqrt(max(self.dot(u, u), 0.0))

    def free(self) -> None:
        """Release the gather–scatter's communicator (collective); dssum fails after this."""
        if self.gs is not None:
            self.gs.free()
            self.gs = None
