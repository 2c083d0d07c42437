"""Surfaces of element faces chosen by position, for monitors that transform or integrate on
surfaces anywhere in the mesh, not only on its named boundary surfaces: a plane ``x = c``
through the whole mesh, and the closed surface of a box [lower, upper] (docs/electromagnetics.md,
"Frequency-domain monitors").

A face belongs to the plane x_a = c when all its GLL points lie on it (to TOL of the mesh's
size): planes are not interpolated through elements, so a plane between element faces is
refused, naming the nearest face planes (an interpolated plane would need the fields inside
elements at points of no element face, and its flux would be an interpolant's, not the
solution's trace). Each face of an interior surface has two sides; the trace is taken from one
side, consistently: for a plane, from the element below it (its outward normal along +a), or
where there is none (the mesh's own boundary, the seam of a periodic axis) from the element
above (the normal then turned to +a); for a box,
from the element inside (outward normals). So each face is counted once, on the rank that
owns that element, whatever the partition. Nothing here knows a system.

On a 2-D mesh (quads, z-invariant fields per unit depth) a plane is a line x = c or y = c of
element edges (z = c is refused: the mesh is the plane z = 0), a box is a rectangle of edges
(its z entries, if given, are ignored), and the faces' weights are the edges' w_b (per unit
depth): a flux through a line is per unit depth.
"""

from __future__ import annotations

import numpy as np

from lobatto.config.dft import box_name, plane_name
from lobatto.discretization import gll_weights
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import face_slice

#: a face lies on a plane when its points are within this fraction of the mesh's size of it
TOL = 1e-9
AXES = ("x", "y", "z")
#: a plane whose faces' area falls short of the mesh's section there by more than this share (and
#: that cuts elements) misses part of the cross-section (plane_coverage)
PARTIAL = 1e-6
#: no element (larger than every global element number): the neutral value of a min-reduction
NONE = np.iinfo(np.int64).max


def face_weights(order: int, dim: int) -> np.ndarray:
    """A face's GLL quadrature weights w_a w_b (n, n); (1, n) on a 2-D mesh's edges, whose a
    axis is the unit depth (w_a = 1)."""
    w = gll_weights(order)
    return np.outer(w, w) if dim == 3 else w[None, :]


def check_axis(system, axis: int, what: str) -> None:
    """A plane x_axis = c must cross the mesh: on a 2-D mesh (z = 0) z = c is refused."""
    if axis >= system.mesh.dim:
        raise InputError(f'{what}: "{AXES[axis]} = ..." is a plane along z, and the mesh is 2-D (the plane z = 0, '
                         "fields per unit depth): a 2-D plane is a line x = c or y = c")


def _face_points(system) -> np.ndarray:
    """(3, E, faces, n, n) coordinates of every face's points ((3, E, 4, 1, n) on a 2-D mesh)."""
    coords, order = system.geometry.coords, system.order
    return np.stack([coords[face_slice(face, order)] for face in range(system.mesh.num_faces)], axis=2)


def plane_tolerance(system, comm) -> float:
    """Collective: how far a point may lie off a plane and be on it (TOL of the mesh's size)."""
    coords = system.geometry.coords
    local = float(np.abs(coords).max()) if coords.size else 0.0
    # relative to the mesh's own size (a mesh in metres at the nanometre scale included)
    return TOL * max(allreduce(comm, local, "max"), np.finfo(np.float64).tiny)


def on_plane(points, axis: int, value: float, tol: float) -> np.ndarray:
    """(E, 6) faces all of whose points lie on x_axis = value."""
    return np.all(np.abs(points[axis] - value) <= tol, axis=(-2, -1))


def face_planes(system, axis: int, comm=None) -> np.ndarray:
    """Collective: the sorted values c of every plane x_axis = c that some element face lies on
    (over all ranks): the planes a case may name."""
    points, tol = _face_points(system), plane_tolerance(system, comm)
    along = points[axis]
    flat = np.ptp(along, axis=(-2, -1)) <= tol
    values = np.unique(np.round(along[..., 0, 0][flat] / tol) * tol) if flat.any() else np.zeros(0)
    gathered = [values] if comm is None or comm.Get_size() == 1 else comm.allgather(values)
    return np.unique(np.concatenate(gathered)) if gathered else np.zeros(0)


def nearest_planes(system, axis: int, value: float, comm=None) -> str:
    """Collective: the face planes next to x_axis = value, as text for a message."""
    planes = face_planes(system, axis, comm)
    below, above = planes[planes < value], planes[planes > value]
    near = ([plane_name(axis, below.max())] if below.size else []) + ([plane_name(axis, above.min())] if above.size else [])
    return " and ".join(f'"{n}"' for n in near) or "none"


def off_planes(system, lower, upper, tol: float, comm=None) -> str:
    """Collective: the box's sides that lie on no face plane, each with the face planes next to
    it, as text for a message."""
    out = []
    for axis in range(system.mesh.dim):
        planes = face_planes(system, axis, comm)
        for value in (lower[axis], upper[axis]):
            if not np.any(np.abs(planes - value) <= tol):
                below, above = planes[planes < value], planes[planes > value]
                near = [plane_name(axis, v.max()) for v in (below,) if v.size] + \
                       [plane_name(axis, v.min()) for v in (above,) if v.size]
                out.append(f"{plane_name(axis, value)} lies between the face planes "
                           + " and ".join(f'"{n}"' for n in near) if near else f"{plane_name(axis, value)} is off the mesh")
    return "; ".join(out) or "every side lies on a face plane"


def plane_faces(system, axis: int, value: float, comm=None) -> tuple[np.ndarray, np.ndarray]:
    """Collective: ((E, 6) faces of this rank on the plane x_axis = value, (E, 6) sign +-1 that
    turns each face's outward normal to +axis). InputError when no face lies there."""
    check_axis(system, axis, "[output.dft] planes")
    points, tol = _face_points(system), plane_tolerance(system, comm)
    on = on_plane(points, axis, value, tol)
    along = system.geometry.normals[axis].mean(axis=(-2, -1))  # (E, 6): the normal's +axis part
    below, above = on & (along > 0.5), on & (along < -0.5)  # the faces of the elements below / above
    if allreduce(comm, int(below.sum())) == 0:  # the mesh's lower side, or a periodic seam: no element below
        chosen = above
    else:  # below the plane, or the only side where the plane meets the mesh's boundary
        chosen = below | (above & (system.mesh.face_neighbour < 0))
    if allreduce(comm, int(chosen.sum())) == 0:
        near = nearest_planes(system, axis, value, comm)
        raise InputError(f'[output.dft] planes: "{plane_name(axis, value)}" lies on no element face (planes are '
                         f"taken on element faces, not interpolated through elements); the nearest face planes: {near}")
    return chosen, np.where(along < 0, -1.0, 1.0)


def plane_coverage(system, axis: int, value: float, chosen, comm=None) -> dict:
    """Collective: what the plane x_axis = value holds against the mesh's cross-section there:
    {"faces": the faces ``chosen`` (plane_faces) over all ranks, "area": their area,
    "section_area": the mesh's bounding box's section at the plane, "cut_elements": elements
    with points strictly on both sides of it, "partial": whether the plane misses part of the
    cross-section (its area below the box's section by more than PARTIAL and some element cut:
    on a file mesh a plane is only the faces that happen to lie there)}. A mesh that is not a
    box has a smaller section than its bounding box's, so the area alone does not tell: an
    element cut by the plane does (a plane of faces across the whole section cuts none)."""
    w = face_weights(system.order, system.mesh.dim)
    area = allreduce(comm, float((system.geometry.surface_jacobian * w)[chosen].sum()))
    faces = int(allreduce(comm, int(chosen.sum())))
    x, tol = system.geometry.coords.reshape(3, system.num_elements, -1), plane_tolerance(system, comm)
    big = np.finfo(np.float64).max
    low = allreduce(comm, x.min(axis=(1, 2)) if x.size else np.full(3, big), "min")
    high = allreduce(comm, x.max(axis=(1, 2)) if x.size else np.full(3, -big), "max")
    others = [a for a in range(system.mesh.dim) if a != axis]  # 2-D: the section is a length
    section = float(np.prod(high[others] - low[others]))
    along = x[axis]
    cut = int(allreduce(comm, int(np.sum(np.any(along < value - tol, axis=1) & np.any(along > value + tol, axis=1)))))
    return {"faces": faces, "area": area, "section_area": section, "cut_elements": cut,
            "partial": bool(area < (1.0 - PARTIAL) * section and cut > 0)}


def box_faces(system, lower, upper, comm=None) -> tuple[np.ndarray, np.ndarray]:
    """Collective: ((E, 6) faces of this rank on the closed surface of the box, (E, 6) sign +1:
    the faces of the elements inside, whose outward normals point out of the box). InputError
    when a side does not lie on element faces (its faces' area is not the side's). On a 2-D
    mesh only x and y count: the box is a rectangle (its z entries, if any, ignored)."""
    dim = system.mesh.dim
    if len(lower) < dim:
        raise InputError(f"[output.dft] boxes: {box_name(lower, upper)} has {len(lower)} coordinates and the mesh is "
                         "3-D: give lower = [x, y, z], upper = [x, y, z]")
    name = box_name(lower, upper)
    lower, upper = np.asarray(lower[:dim], dtype=float), np.asarray(upper[:dim], dtype=float)
    points, tol = _face_points(system), plane_tolerance(system, comm)
    points = points[:dim]
    x = system.geometry.coords.reshape(3, system.num_elements, -1)[:dim]
    inside = np.all((x >= lower[:, None, None] - tol) & (x <= upper[:, None, None] + tol), axis=(0, 2))
    strictly = np.all((x > lower[:, None, None] + tol) & (x < upper[:, None, None] - tol), axis=0).any(axis=1)
    cut = system.mesh.element_ids[strictly & ~inside]
    cut = int(allreduce(comm, np.array([cut.min() if cut.size else NONE]), "min")[0])
    if cut != NONE:
        raise InputError(f"[output.dft] boxes: {name} cuts element {cut}: its sides must lie on "
                         f"element faces ({off_planes(system, lower, upper, tol, comm)})")
    within = np.all((points >= lower[:, None, None, None, None] - tol)
                    & (points <= upper[:, None, None, None, None] + tol), axis=(0, -2, -1))
    area = system.geometry.surface_jacobian * face_weights(system.order, dim)  # (E, faces, n, n)
    chosen = np.zeros(system.mesh.face_neighbour.shape, dtype=bool)
    for axis in range(dim):
        along = system.geometry.normals[axis].mean(axis=(-2, -1))
        for value, outward in ((lower[axis], along < -0.5), (upper[axis], along > 0.5)):
            side = on_plane(points, axis, value, tol) & within & inside[:, None] & outward
            others = [a for a in range(dim) if a != axis]
            expected = float(np.prod(upper[others] - lower[others]))
            found = allreduce(comm, float(area[side].sum()))
            if abs(found - expected) > 1e-8 * expected:
                near = nearest_planes(system, axis, value, comm)
                raise InputError(f"[output.dft] boxes: the side {plane_name(axis, value)} of {name} "
                                 f"is not made of element faces (their area {found:.6g}, the side's {expected:.6g}): "
                                 f"each side must lie on element faces and cut none (face planes near it: {near})")
            chosen |= side
    return chosen, np.ones(chosen.shape)
