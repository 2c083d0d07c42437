"""Box mesh generator: a structured block of hexahedra (or, given two counts, quadrilaterals in
the plane z = 0) stored as general unstructured data."""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.mesh import DEFAULT_BOUNDARY, INTERIOR, HexMesh

SIDE_NAMES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")  # matches face numbering
AXIS_NAMES = ("x", "y", "z")
#: box extents (upper - lower) allowed on each axis: beyond them 1/extent, the squared metric
#: terms or the Jacobian (a product of three element sizes) leave float64's normal range
MIN_EXTENT, MAX_EXTENT = 1e-100, 1e100
#: smallest element volume (product of the element's sides): its Jacobian and mass stay normal numbers
MIN_ELEMENT_VOLUME = 1e-280


def check_extent(lower, upper, counts) -> None:
    """InputError naming [mesh] lower/upper unless every axis has a finite, positive extent
    whose elements' geometric factors are representable in float64."""
    with np.errstate(all="ignore"):
        extent = upper - lower
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise InputError(f"[mesh] lower/upper must be finite numbers, got lower={lower.tolist()} upper={upper.tolist()}")
    if np.any(upper <= lower):
        raise InputError(f"[mesh] upper must exceed lower on every axis, got lower={lower.tolist()} upper={upper.tolist()}")
    for axis, (size, count) in enumerate(zip(extent, counts)):
        name = AXIS_NAMES[axis]
        with np.errstate(all="ignore"):
            inverse = 1.0 / size
        if not (np.isfinite(size) and np.isfinite(inverse)) or size < MIN_EXTENT or size > MAX_EXTENT:
            raise InputError(
                f"[mesh] lower/upper: the box is {size:.3g} long along {name} (upper - lower); it must be "
                f"between {MIN_EXTENT:.0e} and {MAX_EXTENT:.0e}, or the geometric factors (1/length, Jacobians) "
                "overflow or underflow float64: rescale the problem's units"
            )
        if size / count < MIN_EXTENT:
            raise InputError(
                f"[mesh] lower/upper and elements: the elements are {size / count:.3g} long along {name}; "
                f"they must be at least {MIN_EXTENT:.0e} (float64 geometric factors): rescale the problem's units"
            )
    sides = extent / np.asarray(counts, dtype=np.float64)
    volume = float(np.prod(sides))
    if not volume >= MIN_ELEMENT_VOLUME:
        raise InputError(
            f"[mesh] lower/upper and elements: an element is {' x '.join(f'{h:.3g}' for h in sides)} "
            f"(volume {volume:.3g}); below {MIN_ELEMENT_VOLUME:.0e} its Jacobian underflows float64: "
            "rescale the problem's units"
        )


def box_mesh(
    elements,
    lower=(0.0, 0.0, 0.0),
    upper=(1.0, 1.0, 1.0),
    periodic=(False, False, False),
    boundary=DEFAULT_BOUNDARY,
    boundaries: dict | None = None,
    deform=None,
    element_ids=None,
) -> HexMesh:
    """Elements (nx, ny, nz) on [lower, upper]; element index e = ix + nx*(iy + ny*iz).

    Two counts (nx, ny) give a 2-D mesh of quadrilaterals at z = 0 (sides xmin..ymax; the
    first two entries of lower, upper and periodic are used): the same code with nz = 1.

    With `element_ids` only those elements are built (a rank's part of a partitioned box):
    memory and work scale with the part, not with the whole box.

    The r, s, t axes of every element are aligned with x, y, z, so the box's own
    connectivity has orientation code 0 everywhere; meshes from other sources use the
    general codes (see connectivity.connectivity_from_vertices).
    """
    dim = len(elements)
    if dim not in (2, 3):
        raise InputError(f"[mesh] elements must have 2 or 3 entries, got {list(elements)}")
    nx, ny, nz = (int(n) for n in tuple(elements) + (1,) * (3 - dim))
    counts = np.array([nx, ny, nz])
    if np.any(counts < 1):
        raise InputError(f"[mesh] elements must be >= 1 in each direction, got {list(elements)}")
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    if dim == 2:  # the plane z = 0, one (thin) element through it
        lower, upper = np.append(lower[:2], 0.0), np.append(upper[:2], 1.0)
        periodic = tuple(periodic[:2]) + (False,)
    check_extent(lower, upper, counts)
    num_faces, num_vertices, sides = 2 * dim, 2**dim, SIDE_NAMES[: 2 * dim]
    side_names = {side: (boundaries or {}).get(side, boundary) for side in sides}
    for side, kind in side_names.items():
        if not isinstance(kind, str) or not kind:
            raise InputError(f"[mesh] boundary for {side} must be a name, got {kind!r}")
    # the same names in the same order on every rank: sorted, from the arguments alone
    boundary_names = tuple(sorted(set(side_names.values())))
    kinds = {side: boundary_names.index(kind) for side, kind in side_names.items()}

    num_global = nx * ny * nz
    if element_ids is None:
        element_ids = np.arange(num_global, dtype=np.int64)
    element_ids = np.asarray(element_ids, dtype=np.int64)
    if element_ids.size and (element_ids.min() < 0 or element_ids.max() >= num_global):
        raise ValueError("element_ids outside the box")
    ix, iy, iz = element_ids % nx, (element_ids // nx) % ny, element_ids // (nx * ny)
    num_elements = element_ids.size

    # Lattice vertex (a, b, c) has global index a + (nx+1)*(b + (ny+1)*c); keep only the
    # vertices of our elements, renumbered locally.
    global_vertex = np.empty((num_elements, num_vertices), dtype=np.int64)
    for v in range(num_vertices):
        p, q, l = v & 1, (v >> 1) & 1, (v >> 2) & 1
        global_vertex[:, v] = (ix + p) + (nx + 1) * ((iy + q) + (ny + 1) * (iz + l))
    used, element_vertices = np.unique(global_vertex, return_inverse=True)
    element_vertices = element_vertices.reshape(num_elements, num_vertices)
    lattice = np.stack([used % (nx + 1), (used // (nx + 1)) % (ny + 1), used // ((nx + 1) * (ny + 1))], axis=1)
    vertices = lower + (upper - lower) * lattice / counts
    if dim == 2:
        vertices[:, 2] = 0.0

    face_neighbour = np.full((num_elements, num_faces), -1, dtype=np.int64)
    neighbour_face = np.full((num_elements, num_faces), -1, dtype=np.int64)
    boundary_kind = np.full((num_elements, num_faces), INTERIOR, dtype=np.int64)
    face_group = np.full((num_elements, num_faces), -1, dtype=np.int64)
    index = np.stack([ix, iy, iz], axis=1)
    for face in range(num_faces):
        axis, step = face // 2, (1 if face % 2 else -1)
        nb = index.copy()
        nb[:, axis] += step
        outside = (nb[:, axis] < 0) | (nb[:, axis] >= counts[axis])
        if periodic[axis]:
            nb[:, axis] %= counts[axis]
            outside[:] = False
        nb_id = nb[:, 0] + nx * (nb[:, 1] + ny * nb[:, 2])
        face_neighbour[:, face] = np.where(outside, -1, nb_id)
        neighbour_face[:, face] = np.where(outside, -1, face ^ 1)
        boundary_kind[:, face] = np.where(outside, kinds[SIDE_NAMES[face]], INTERIOR)
        face_group[:, face] = np.where(outside, face, -1)  # group i is SIDE_NAMES[i]

    mesh = HexMesh(
        vertices=vertices,
        element_vertices=element_vertices,
        face_neighbour=face_neighbour,
        neighbour_face=neighbour_face,
        face_orientation=np.zeros((num_elements, num_faces), dtype=np.int64),
        boundary_kind=boundary_kind,
        boundary_names=boundary_names,
        element_ids=element_ids,
        element_labels=index[:, :dim],
        deform=deform,
        num_global_elements=num_global,
        face_group=face_group,
        group_names=sides,
    )
    mesh.check()
    return mesh
