"""What every discontinuous-Galerkin system of lobatto shares: the face exchange.

Each element writes, at its face points, the trace components its numerical flux needs
(Maxwell: -n x E and -n x H; acoustics: p and n.u). A gather–scatter sum over face-point
ids (NekCEM's trick, seed paper eqs. (6)-(7)) returns own + neighbour at interior points and
the element's own trace at boundary points, where a per-face factor per component turns it
into the value a ghost state would give (the boundary condition). One rank: the local
gather–scatter; many: the same call with the MPI exchange underneath.

Across ranks the exchange overlaps work: elements [0, split) share no face point with
another rank, so a stage updates them while the exchange is in flight and the rest after it
(meshes from the driver hold their halo elements last: HexMesh.halo_last). ``overlap`` is
True, False or "auto"; the stage-by-stage path here overlaps unless it is False (a system's
whole-step path may time both under "auto").
"""

from __future__ import annotations

import inspect

import numpy as np

from lobatto.backends.base import element_bounds
from lobatto.comm import GatherScatter
from lobatto.errors import InputError
from lobatto.discretization import derivative_matrix
from lobatto.mesh import compute_geometry, face_point_ids
from lobatto.mesh.geometry import curl_form_factors
from lobatto.mesh.topology import element_shape, face_shape, face_slice, num_faces
from lobatto.machine.parallel import allreduce, rank_and_size
from lobatto.systems.base import System
from lobatto.discretization.tensor import dimension_of

#: axis of the element index in each per-element geometry array
ELEMENT_AXIS = {"metrics": 2, "jacobian": 0, "normals": 1, "lift": 0, "face_factors": 1, "affine": 0, "mass": 0}


def element_range(geometry: dict, part: slice) -> dict:
    """The geometry of elements ``part`` (views; arrays without an element axis as they are)."""
    out = dict(geometry)
    for key, axis in ELEMENT_AXIS.items():
        if key in geometry:
            out[key] = geometry[key][(slice(None),) * axis + (part,)]
    return out


def over_elements(rhs):
    """Give a reference rhs ``rhs(u, sums, geometry, out, *params)`` the optional last
    argument ``elements = (first, stop)``: then only those elements are computed and the
    rest of ``out`` is left untouched (the overlap of the face exchange needs it)."""

    count = len(inspect.signature(rhs).parameters) - 4  # the physical parameters

    def restricted(u, sums, geometry, out, *args, elements=None):
        params, rest = args[:count], args[count:]
        if rest:  # elements given by position, as the tuned kernels take it
            (elements,) = rest
        if elements is None:
            return rhs(u, sums, geometry, out, *params)
        part = slice(*element_bounds(elements, u.shape[1]))
        rhs(u[:, part], sums[:, part], element_range(geometry, part), out[:, part], *params)
        return out

    return restricted


def _faces_of(u) -> range:
    """The faces of the element arrays u: six, or four on a 2-D mesh (a k axis of one point)."""
    return range(num_faces(dimension_of(u.shape)))


def face_values(xp, u, order):
    """(..., E, 6, n, n) values at the face points, face by face (reference kernels);
    (..., E, 4, 1, n) on a 2-D mesh."""
    return xp.stack([u[face_slice(f, order)] for f in _faces_of(u)], axis=-3)


def add_to_faces(u, face_data, order):
    """u[..., face points of face f] += face_data[..., f, :, :] for the six faces in turn
    (the four edges in 2-D; a point on several faces gets each face's share)."""
    for f in _faces_of(u):
        u[face_slice(f, order)] += face_data[..., f, :, :]


def check_representable(geometry, backend, mesh=None) -> None:
    """InputError unless the geometric factors fit the backend's precision (float32 holds
    magnitudes from about 1e-38 to 3e38: a box of extent 1e-40 has metrics of 1e40). The
    message names the first element out of range; for a mesh read from a file, as the file
    numbers it (a box's [mesh] lower/upper are no keys of a file mesh)."""
    info = np.finfo(backend.dtype)
    high, low = float(info.max) / 16, float(info.tiny) * 16
    for name, axis in (("metrics", 2), ("lift", 0), ("mass", 0), ("normals", 1)):
        values = np.abs(getattr(geometry, name))
        largest = float(values.max()) if values.size else 0.0
        smallest = float(values[values > 0].min()) if np.any(values > 0) else 1.0
        if largest < high and smallest > low:
            continue
        out = (values >= high) | ((values > 0) & (values <= low))
        per_element = np.moveaxis(out, axis, 0).reshape(out.shape[axis], -1).any(axis=1)
        e = int(np.argmax(per_element))
        where = f" on {mesh.describe_element(e)}" if mesh is not None else ""
        prefix = f"{mesh.source}: " if mesh is not None and mesh.source is not None else "[mesh] "
        if mesh is not None and mesh.source is not None:
            hint = ("check the element's node coordinates, or rescale the mesh's units"
                    + (" or use [backend] precision = \"float64\"" if backend.precision == "float32" else ""))
        else:
            hint = ("rescale [mesh] lower/upper"
                    + (" or use [backend] precision = \"float64\"" if backend.precision == "float32" else ""))
        raise InputError(f"{prefix}the geometric factors ({name}) range from {smallest:.3g} to {largest:.3g}"
                         f"{where}, beyond what {backend.precision} holds: {hint}")


class FaceExchangeSystem(System):
    """A DG system whose surface terms come from one gather–scatter sum of face traces.

    Subclasses set ``trace_components`` (values per face point) and ``boundary_factors``
    (kind -> factors applied to the sums at that boundary, one per group of trace components
    as the system's kernels read them: ``face_factors`` (groups, E, 6)), and
    register the kernels ``<name>_traces(u, normals, out)`` they use for ``self.traces_kernel``.
    """

    trace_components = 0
    boundary_factors: dict = {}
    #: [discretization] volume_form values this system computes ("galerkin": Maxwell only)
    volume_forms = ("split", "chain")

    def setup_faces(self, mesh, order, backend, geometry=None, comm=None, exchange_method="auto",
                    exchange="auto", overlap="auto", volume_form="split"):
        if volume_form == "auto":  # systems without a Galerkin form: the split form (Maxwell resolves it itself)
            volume_form = "split"
        if volume_form not in self.volume_forms:
            raise InputError(f"[discretization] volume_form = {volume_form!r} is not available for "
                             f"[physics] equations = {self.name!r}; expected one of "
                             f"{', '.join(map(repr, self.volume_forms))}")
        self.volume_form = volume_form
        self.mesh, self.order, self.backend = mesh, int(order), backend
        self.geometry = geometry if geometry is not None else compute_geometry(mesh, self.order)
        self.num_elements = mesh.num_elements
        self.points = self.num_elements * int(np.prod(element_shape(mesh.dim, self.order)))
        nt = self.trace_components
        faces, face_points = mesh.num_faces, face_shape(mesh.dim, self.order)

        # one factor per group of trace components (Maxwell: E's and H's); interior: the plain sum
        factors = np.ones((len(next(iter(self.boundary_factors.values()))), self.num_elements, faces))
        for index, kind in enumerate(self.boundary_kind_of(mesh)):
            on_kind = mesh.boundary_kind == index
            for c, value in enumerate(self.boundary_factors[kind]):
                factors[c][on_kind] = value
        g, to_dev = self.geometry, backend.asarray
        check_representable(g, backend, mesh)
        # the split form's metrics: curl form on curved elements (meets the metric identities)
        metrics, normals, lift = curl_form_factors(g) if volume_form == "split" else (g.metrics, g.normals, g.lift)
        self.face_normals, self.face_lift = normals, lift  # host copies of what the fluxes use
        self.device_geometry = {
            "derivative": to_dev(derivative_matrix(self.order)),
            "metrics": to_dev(metrics),
            "jacobian": to_dev(g.jacobian),
            "normals": to_dev(normals),
            "lift": to_dev(lift),
            "face_factors": to_dev(factors),
            "affine": to_dev(g.affine, dtype=np.int8),
            "mass": to_dev(g.mass),
            # the volume terms' form on curved elements (kernels read it; affine ones: the same)
            "split_form": volume_form == "split",
        }
        ids = face_point_ids(mesh, self.order)
        self.exchange = GatherScatter(ids.reshape(-1), comm=comm, method=exchange_method, xp=backend.xp,
                                      vn_hint=nt, exchange=exchange)
        halo = self.exchange.shared_points() // (faces * int(np.prod(face_points)))  # elements of shared face points
        self.split = int(halo.min()) if halo.size else self.num_elements
        if not (isinstance(overlap, bool) or overlap == "auto"):
            raise ValueError(f'overlap must be True, False or "auto", not {overlap!r}')
        self.overlap = overlap
        self.trace_buffer = backend.zeros((nt, self.num_elements, faces, *face_points))

    @staticmethod
    def parallel_options(case) -> dict:
        return {"exchange_method": case.parallel.method, "exchange": case.parallel.exchange,
                "overlap": case.parallel.overlap}

    # Exchange -----------------------------------------------------------------------------
    def exchange_traces(self, u):
        """Face traces of u, summed with the neighbours' (the flux exchange)."""
        self.traces_kernel(u, self.device_geometry["normals"], self.trace_buffer)
        self.exchange.apply(self.trace_buffer.reshape(self.trace_components, -1), "sum")
        return self.trace_buffer

    def with_exchange(self, u, update):
        """Traces, exchange, then ``update(elements, sums)`` over all elements; with overlap
        the interior block [0, split) is updated between the exchange's start and finish."""
        split, count = self.split, self.num_elements
        if self.overlap is False or split == count:
            update(None, self.exchange_traces(u))
            return
        self.traces_kernel(u, self.device_geometry["normals"], self.trace_buffer)
        handle = self.exchange.start(self.trace_buffer.reshape(self.trace_components, -1), "sum")
        if split:
            update((0, split), self.trace_buffer)  # reads only face sums already complete
        self.exchange.finish(handle)
        update((split, count), self.trace_buffer)

    # Summary ------------------------------------------------------------------------------
    def summary(self, stepper, comm=None) -> dict:
        """The face exchange as it ran: method, transport, overlap (the whole-step path's
        own account where it replaced the stage-by-stage exchange)."""
        path = stepper.describe()
        ranks = rank_and_size(comm)[1]
        enabled = path.get("overlap_enabled", ranks > 1 and self.overlap is not False)
        overlap = {"setting": self.overlap, "enabled": bool(enabled),
                   "interior_elements": allreduce(comm, self.split),
                   "elements_after_exchange": allreduce(comm, self.num_elements - self.split)}
        if path.get("auto_trial") is not None:
            overlap["auto_trial"] = path["auto_trial"]
        return {
            "exchange_method": path.get("exchange_method", self.exchange.method),
            "exchange": path.get("exchange", self.exchange.exchange),
            "exchange_detail": path.get("exchange_detail", self.exchange.describe()),
            "overlap": overlap,
        }

    def quadrature_mass(self):
        return self.device_geometry["mass"]

    def mass_weighted_sum(self, u, weights) -> float:
        """sum over points of M * sum_c weights[c] * u[c]^2 on this rank (float64)."""
        xp, mass = self.backend.xp, self.device_geometry["mass"]
        total = 0.0
        with np.errstate(all="ignore"):  # an overflow gives inf, which the driver reports
            for c, w in enumerate(weights):
                if w:
                    total += float(w) * float(xp.sum(mass * u[c] ** 2, dtype=np.float64))
        return total
