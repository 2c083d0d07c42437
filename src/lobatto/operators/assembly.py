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
    pw, rr = assembly.dots([(p, w), (r, r)])        # several inner products, one reduction

Reproducible (the default; ``LOBATTO_REPRODUCIBLE=0`` turns it off for a side-by-side
timing): ``dssum`` adds each point's copies in global (element id, local point) order
(``comm.ordered``) and ``dot`` sums each element's points in a fixed order, then the
per-element sums exactly over the ranks (``comm.exact_sum``). Both then give the same bits on
1, 2 or 3 ranks, with any partition, so a solver iterates identically on every rank count.
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager

import numpy as np

from lobatto.comm import GatherScatter
from lobatto.comm.exact_sum import accumulate_rows, accumulate_rows_many, totals
from lobatto.errors import InputError
from lobatto.mesh.topology import element_shape, face_slice
from lobatto.operators.numbering import continuous_ids
from lobatto.machine.parallel import allreduce, count_collective

#: reproducible dssum and dot (module docstring); LOBATTO_REPRODUCIBLE=0 gives the faster,
#: partition-dependent ones (read when an Assembly is made)
REPRODUCIBLE_ENV = "LOBATTO_REPRODUCIBLE"
#: ``apply_operator`` overlaps the exchange with the interior elements: "auto" (on with more
#: than one rank at orders >= OVERLAP_MIN_ORDER), "1" always where there is an exchange, "0"
#: never (read when an Assembly is made; ``Assembly.overlap`` may be set after)
OVERLAP_ENV = "LOBATTO_ASSEMBLY_OVERLAP"
#: below this order an element's apply is too short to hide an exchange behind: the extra
#: launches of the overlapped path (copies of the boundary elements) would cost more
OVERLAP_MIN_ORDER = 4
#: the gather-scatter method and transport of Assemblies made without naming them
#: (``exchange_defaults``): "auto" picks by timing / NCCL where it works
_DEFAULTS = {"method": "auto", "exchange": "auto"}


@contextmanager
def exchange_defaults(method: str = "auto", exchange: str = "auto"):
    """Inside: Assemblies made without ``method`` / ``exchange`` use these (a case's
    [parallel] method and exchange, for every assembly its system and solvers make)."""
    saved = dict(_DEFAULTS)
    _DEFAULTS.update(method=method, exchange=exchange)
    try:
        yield
    finally:
        _DEFAULTS.update(saved)


def reproducible_default() -> bool:
    return os.environ.get(REPRODUCIBLE_ENV, "1").strip() not in ("0", "false", "no", "off")


def dirichlet_faces(mesh, names) -> np.ndarray:
    """(E, 6) ((E, 4) in 2-D) bool: boundary faces whose group (a box side, a mesh file's surface) or
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

    def __init__(self, mesh, order: int, backend, comm=None, dirichlet=None, method: str | None = None,
                 exchange: str | None = None, reproducible: bool | None = None):
        self.order = int(order)
        self.n = self.order + 1
        self.backend = backend
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.num_elements = mesh.num_elements
        self.shape = (self.num_elements, *element_shape(mesh.dim, self.order))  # (E, 1, n, n) in 2-D
        self.num_faces = mesh.num_faces
        self.dirichlet = self._check_dirichlet(dirichlet)
        self.ids = continuous_ids(mesh, self.order, self.comm)
        local_max = int(self.ids.max()) if self.ids.size else -1
        self.num_global_points = int(allreduce(self.comm, local_max, "max")) + 1
        xp = backend.xp
        self.reproducible = reproducible_default() if reproducible is None else bool(reproducible)
        npts = math.prod(self.shape[1:])
        self.points = npts
        self.element_ids = np.asarray(mesh.element_ids, dtype=np.int64)
        keys = None
        if self.reproducible:  # global element id, then local point: the same order on every partition
            keys = self.point_keys().ravel()
        method = _DEFAULTS["method"] if method is None else method
        exchange = _DEFAULTS["exchange"] if exchange is None else exchange
        self.gs = GatherScatter((self.ids + 1).ravel(), self.comm, method=method, xp=xp, exchange=exchange,
                                keys=keys)
        # elements holding a point another rank holds: the exchange waits for these only
        self.boundary_elements = np.zeros(0, dtype=np.int64)
        if self.comm is not None:
            self.boundary_elements = np.unique(self.gs.shared_points() // npts).astype(np.int64)
        setting = os.environ.get(OVERLAP_ENV, "auto").strip().lower()
        self.overlap = self.comm is not None and (setting in ("1", "on", "true", "yes") or (
            setting == "auto" and self.order >= OVERLAP_MIN_ORDER
            and 2 * len(self.boundary_elements) <= self.num_elements))
        self.multiplicity = self.dssum(backend.zeros(self.shape) + 1)
        self.inverse_multiplicity = 1.0 / self.multiplicity
        on_faces = np.zeros(self.shape, dtype=backend.dtype)
        for face in range(self.num_faces):
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
            return np.zeros((self.num_elements, self.num_faces), dtype=bool)
        faces = np.asarray(dirichlet)
        if faces.shape != (self.num_elements, self.num_faces) or faces.dtype != bool:
            raise InputError(f"Assembly: dirichlet must be a ({self.num_elements}, {self.num_faces}) bool array of faces, "
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
        count_collective("exchanges")
        self.gs.apply(flat, "sum")
        return u

    def dssum_start(self, u, defer_local: bool = False):
        """Begin ``dssum(u)``; work on points no other rank holds may go on until
        ``dssum_finish``. ``defer_local``: only the points of ``boundary_elements`` need
        their values now (``GatherScatter.start``); the others may be written until then."""
        flat = self._flat(u)
        count_collective("exchanges")
        return self.gs.start(flat, "sum", defer_local=defer_local)

    def dssum_finish(self, handle):
        """Complete a ``dssum_start``; returns nothing (u is summed in place)."""
        self.gs.finish(handle)

    def apply_operator(self, operator, u):
        """QQ^T A_local u, a new array, for u (E, n, n, n) or (k, E, n, n, n) and an element
        operator with ``apply_local(u, out)`` and ``apply_elements(u, out, elements)``
        (``HelmholtzOperator``). With ``overlap``: the boundary elements first, the exchange
        started, then every element (the boundary ones again: their copies were taken, and
        one whole-array apply costs less than two partial ones), then the local sums and the
        exchange finished; the same bits as without (each element's result does not depend on
        the elements applied with it)."""
        out = self.backend.xp.empty_like(u)
        fields = [(u, out)] if u.ndim == 4 else [(u[c], out[c]) for c in range(u.shape[0])]
        if not (self.overlap and hasattr(operator, "apply_elements")):
            for field, result in fields:
                operator.apply_local(field, result)
            return self.dssum(out)
        for field, result in fields:
            operator.apply_elements(field, result, self.boundary_elements)
        handle = self.dssum_start(out, defer_local=True)
        for field, result in fields:
            operator.apply_local(field, result)
        self.dssum_finish(handle)
        return out

    def dot(self, u, v) -> float:
        """The assembled inner product sum(u v / multiplicity), reduced over ranks: for
        continuous u and v every distinct point counts once."""
        xp = self.backend.xp
        if self.reproducible:
            return totals(self.comm, [accumulate_rows(self.points, u, v, self.inverse_multiplicity)])[0]
        local = float(xp.vdot(u.reshape(-1), (v * self.inverse_multiplicity).reshape(-1)))
        return float(allreduce(self.comm, local, "sum"))

    def dots(self, pairs) -> list[float]:
        """[dot(u, v) for (u, v) in pairs] with one reduction over ranks for all of them (and,
        on the GPU, one wait for the device): each value has the bits ``dot`` gives it, so a
        solver may fuse the inner products it can compute together without changing them
        (reproducible mode, the default; otherwise to round-off: one allreduce of an array)."""
        pairs = list(pairs)
        if not pairs:
            return []
        if self.reproducible:
            return totals(self.comm, accumulate_rows_many(
                self.points, [(u, v, self.inverse_multiplicity) for u, v in pairs]))
        xp = self.backend.xp
        local = xp.stack([xp.vdot(u.reshape(-1), (v * self.inverse_multiplicity).reshape(-1)) for u, v in pairs])
        local = np.asarray(local.get() if hasattr(local, "get") else local, dtype=np.float64)
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
