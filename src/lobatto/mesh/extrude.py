"""Extrusion of a named planar boundary surface: layers of hexahedra grown outward along the
surface's normal (a waveguide port's extension behind a device-only mesh).

The surface must be planar and normal to a coordinate axis, with one outward direction. Each of
its faces gives one new element per layer, of thickness h along the outward normal; corner and
curved geometry nodes (geometry order q) are the surface's own translated, so an O-grid's curved
faces extrude exactly. The surface's faces become interior faces; the outermost layer's end faces
take the surface's boundary kind and group; the new side faces continue the boundary kind and group
of the wall faces they continue (the old element's face across the surface face's edge), and where
that old face is interior (the surface ends inside a larger boundary) they take the surface's kind
with no group. Connectivity is rebuilt from vertex ids (connectivity.py); links the vertices do not
give (periodic pairs of a file) are kept, but a surface bordering a periodic pair is refused (the
grown side faces would need periodic links of their own). The grown elements have no number in
the file (element_numbers -1: messages say they were grown). Surfaces of 2-D meshes are refused.

``extrude_quads`` turns a 2-D mesh (quads, mesh.dim 2) into its 3-D twin: one hex per quad,
one layer of ``depth`` along z, periodic in z. A z-independent 3-D field on it is the 2-D
field; with depth 2 (dz/dt = 1) its geometric factors are the 2-D ones in every k plane, so
it is the oracle the 2-D code is tested against, and a way to run a 2-D mesh as 3-D.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from lobatto.discretization import gll_points
from lobatto.errors import InputError
from lobatto.mesh.connectivity import connectivity_from_vertices
from lobatto.mesh.mesh import INTERIOR, HexMesh
from lobatto.mesh.topology import FACE_CORNERS, NUM_FACES, OPPOSITE_FACE, face_slice

AXES = "xyz"
#: a surface is planar when its corners lie within this share of the mesh's size of one plane
PLANAR = 1e-9


@dataclass(frozen=True)
class SurfacePlane:
    """A planar axis-normal boundary surface: its axis, coordinate, outward sign (+1: the
    outward normal is +axis), the element extent h behind it along the axis, and its faces."""

    name: str
    axis: int
    coordinate: float
    outward: float
    depth: float
    elements: np.ndarray
    faces: np.ndarray

    @property
    def side(self) -> str:
        """'zmin' for a surface whose outward normal is -z."""
        return f"{AXES[self.axis]}{'max' if self.outward > 0 else 'min'}"

    def at_extreme(self, mesh: HexMesh) -> bool:
        """The surface lies at the mesh's extreme along its axis, on its outward side."""
        values = mesh.vertices[:, self.axis]
        end = values.max() if self.outward > 0 else values.min()
        return abs(end - self.coordinate) <= PLANAR * _size(mesh)


def _size(mesh: HexMesh) -> float:
    return float(np.max(np.ptp(mesh.vertices, axis=0))) or 1.0


def surface_plane(mesh: HexMesh, name: str, where: str = "mesh") -> SurfacePlane:
    """The named boundary surface of a whole mesh, checked to be planar, normal to an axis and
    of one outward direction; InputError naming ``where`` otherwise."""
    if mesh.dim != 3:
        raise InputError(f"{where}: extruding the surface \"{name}\" of a 2-D mesh is not supported")
    if name not in mesh.group_names:
        names = ", ".join(mesh.group_names) or "none"
        raise InputError(f"{where}: no boundary surface named \"{name}\" in the mesh (its surfaces: {names})")
    group = mesh.group_names.index(name)
    elements, faces = np.nonzero((mesh.face_group == group) & (mesh.face_neighbour < 0))
    if not elements.size:
        raise InputError(f"{where}: the surface \"{name}\" has no boundary face")
    corners = mesh.vertices[mesh.element_vertices[elements[:, None], np.array(FACE_CORNERS)[faces]]]  # (K, 4, 3)
    tol = PLANAR * _size(mesh)
    flat = [axis for axis in range(3) if np.ptp(corners[..., axis]) <= tol]
    if not flat:
        raise InputError(f"{where}: the surface \"{name}\" is not a plane normal to x, y or z (its corners spread "
                         f"{', '.join(f'{np.ptp(corners[..., a]):.3g}' for a in range(3))} along x, y, z)")
    axis = flat[0]
    coordinate = float(corners[..., axis].mean())
    # the opposite corners of each element (the far face): which side of the plane the mesh lies on
    far = mesh.vertices[mesh.element_vertices[elements[:, None], np.array(FACE_CORNERS)[np.array(OPPOSITE_FACE)[faces]]]]
    behind = far[..., axis].mean(axis=1) - coordinate
    if np.any(np.abs(behind) <= tol):
        raise InputError(f"{where}: the surface \"{name}\" has an element flat along {AXES[axis]} behind it")
    if np.any(behind > 0) and np.any(behind < 0):
        raise InputError(f"{where}: the surface \"{name}\" has faces of both outward normals, +{AXES[axis]} and "
                         f"-{AXES[axis]} (a port surface is one side of the mesh)")
    outward = -1.0 if behind[0] > 0 else 1.0
    if mesh.curved_nodes is not None:  # curved faces must be flat too
        nodes = np.stack([mesh.curved_nodes[e][(axis,) + face_slice(f, mesh.geometry_order)[1:]]
                          for e, f in zip(elements, faces)])
        if np.ptp(nodes) > tol or abs(float(nodes.mean()) - coordinate) > tol:
            raise InputError(f"{where}: the surface \"{name}\" is curved: its geometry nodes leave the plane "
                             f"{AXES[axis]} = {coordinate:.6g}")
    return SurfacePlane(name, axis, coordinate, outward, float(np.abs(behind).max()), elements, faces)


def extrude_surface(mesh: HexMesh, name: str, layers: int, thickness: float | None = None,
                    where: str = "mesh") -> tuple[HexMesh, SurfacePlane]:
    """(the whole mesh with ``layers`` layers of elements grown outward from the surface
    ``name``, each ``thickness`` thick (default: the surface's ``depth``), the surface)."""
    plane = surface_plane(mesh, name, where)
    h = plane.depth if thickness is None else float(thickness)
    if not h > 0 or int(layers) < 1:
        raise ValueError(f"extrude_surface: layers >= 1 and thickness > 0, got {layers}, {h}")
    count, elements, faces = len(plane.elements), plane.elements, plane.faces
    corner_ids = mesh.element_vertices[elements[:, None], np.array(FACE_CORNERS)[faces]]  # (K, 4) in (a, b) order
    used, local = np.unique(corner_ids, return_inverse=True)
    local = local.reshape(count, 4)
    step = np.zeros(3)
    step[plane.axis] = plane.outward * h
    new_vertices = [mesh.vertices] + [mesh.vertices[used] + (l + 1) * step for l in range(layers)]
    base = mesh.num_elements
    # the layer's element vertex p + 2q + 4l: inner face corner (a, b) = (q, p) at l = 0; the
    # transposed (a, b) = (p, q) where that map would be left-handed
    straight = np.array([0, 1, 2, 3])  # (a, b) index 2a + b of vertex p + 2q: (q, p)
    swapped = np.array([0, 2, 1, 3])
    pos = mesh.vertices[corner_ids]  # (K, 4, 3)
    dr, ds = pos[:, 1] - pos[:, 0], pos[:, 2] - pos[:, 0]  # along b (p) and a (q)
    handed = np.einsum("ki,ki->k", np.cross(dr, ds), np.broadcast_to(step, dr.shape)) > 0
    order = np.where(handed[:, None], straight, swapped)  # (K, 4)
    rows = []
    for l in range(layers):
        inner_ids = corner_ids if l == 0 else len(mesh.vertices) + (l - 1) * len(used) + local
        outer_ids = len(mesh.vertices) + l * len(used) + local
        rows.append(np.concatenate([np.take_along_axis(inner_ids, order, 1), np.take_along_axis(outer_ids, order, 1)],
                                   axis=1))
    element_vertices = np.concatenate([mesh.element_vertices] + rows)
    total = element_vertices.shape[0]
    neighbour, neighbour_face, orientation = connectivity_from_vertices(element_vertices)
    old = mesh.face_neighbour >= 0  # links of the old mesh (periodic pairs included) are kept
    neighbour[:base][old] = mesh.face_neighbour[old]
    neighbour_face[:base][old] = mesh.neighbour_face[old]
    orientation[:base][old] = mesh.face_orientation[old]

    kind = np.full((total, NUM_FACES), INTERIOR, dtype=np.int64)
    group = np.full((total, NUM_FACES), -1, dtype=np.int64)
    kind[:base], group[:base] = mesh.boundary_kind, mesh.face_group
    kind[elements, faces], group[elements, faces] = INTERIOR, -1
    surface_kind = mesh.boundary_kind[elements, faces]
    surface_group = mesh.face_group[elements, faces]
    # the wall each new side face continues: the old element's face holding the same edge
    wall_kind, wall_group = np.empty((count, 4), np.int64), np.empty((count, 4), np.int64)
    for side in range(4):  # new faces 0..3 (r = -1, r = +1, s = -1, s = +1) hold vertices FACE_CORNERS[side][:2]
        for k in range(count):
            e, f = int(elements[k]), int(faces[k])
            edge = {int(corner_ids[k][order[k][v]]) for v in FACE_CORNERS[side] if v < 4}
            g = next(g for g in range(NUM_FACES) if g not in (f, OPPOSITE_FACE[f])
                     and edge <= {int(v) for v in mesh.element_vertices[e][list(FACE_CORNERS[g])]})
            if mesh.face_neighbour[e, g] < 0:
                wall_kind[k, side], wall_group[k, side] = mesh.boundary_kind[e, g], mesh.face_group[e, g]
            elif not edge <= {int(v) for v in mesh.element_vertices[mesh.face_neighbour[e, g]]}:
                # a periodic link (the partner shares no vertex of the edge): the grown side face
                # would need its own link to the partner's grown element; a wall would silently
                # close the periodic cell's extension instead
                raise InputError(f"{where}: the surface \"{name}\" borders a periodic side ({mesh.describe_element(e)} "
                                 f"face {g} is joined periodically): layers cannot be grown across periodic pairs; "
                                 "give plane, source and direction, and a mesh with its own layer")
            else:
                wall_kind[k, side], wall_group[k, side] = surface_kind[k], -1
    for l in range(layers):
        block = slice(base + l * count, base + (l + 1) * count)
        kind[block, :4], group[block, :4] = wall_kind, wall_group
        if l == layers - 1:
            kind[block, 5], group[block, 5] = surface_kind, surface_group
    boundary = neighbour < 0
    kind[~boundary], group[~boundary] = INTERIOR, -1

    def grown(array, fill):
        if array is None:
            return None
        extra = np.broadcast_to(np.asarray(fill, dtype=array.dtype), (total - base,) + array.shape[1:])
        return np.concatenate([array, extra])

    out = replace(
        mesh, vertices=np.concatenate(new_vertices), element_vertices=element_vertices, face_neighbour=neighbour,
        neighbour_face=neighbour_face, face_orientation=orientation, boundary_kind=kind, face_group=group,
        element_ids=np.arange(total, dtype=np.int64), num_global_elements=total,
        element_labels=grown(mesh.element_labels, -1), element_numbers=grown(mesh.element_numbers, -1),
        curved_nodes=_curved(mesh, plane, order, step, layers), regions=np.concatenate(
            [mesh.regions] + [mesh.regions[elements]] * layers),
        interior_group=grown(mesh.interior_group, -1))
    return out, plane


def _curved(mesh: HexMesh, plane: SurfacePlane, order: np.ndarray, step: np.ndarray, layers: int):
    """The new elements' geometry nodes (3, q+1, q+1, q+1) [k, j, i]: the surface face's nodes
    [a, b] (b along i, a along j; swapped where the corners were) translated along t."""
    if mesh.curved_nodes is None:
        return None
    q = mesh.geometry_order
    t = 0.5 * (1.0 + gll_points(q))  # 0 at the inner face, 1 at the outer
    blocks = []
    for l in range(layers):
        nodes = np.empty((len(plane.elements), 3, q + 1, q + 1, q + 1))
        for k, (e, f) in enumerate(zip(plane.elements, plane.faces)):
            face = mesh.curved_nodes[e][face_slice(int(f), q)]  # (3, a, b)
            if order[k][1] == 2:  # swapped: vertex p + 2q at (a, b) = (p, q): j along b
                face = np.swapaxes(face, 1, 2)
            nodes[k] = face[:, None, :, :] + (l + t)[None, :, None, None] * step[:, None, None, None]
        blocks.append(nodes)
    return np.concatenate([mesh.curved_nodes] + blocks)


def apply_extrusions(mesh: HexMesh, extrude, where: str = "mesh") -> HexMesh:
    """The whole mesh with each of ``extrude`` ({surface, layers, thickness}, in order) grown."""
    for entry in extrude:
        mesh, _ = extrude_surface(mesh, entry["surface"], entry["layers"], entry["thickness"], where)
    return mesh


def _planar_deform(inner):
    """The 2-D deformation ``inner`` as a 3-D one: evaluated at z = 0, moving x and y only."""
    def deform(x, y, z):
        dx, dy, _ = inner(x, y, np.zeros_like(z))
        return dx, dy, np.zeros_like(z)
    return deform


def extrude_quads(mesh: HexMesh, depth: float = 2.0) -> HexMesh:
    """The 3-D twin of a 2-D mesh: hex e is quad e between z = -depth/2 and +depth/2, its faces
    0..3 are the quad's (same neighbours, orientations, kinds and groups: 2-D code 4, a flipped
    edge, is the 3-D flip along b) and faces 4 and 5 are joined to each other (periodic z).
    A deformation is evaluated at z = 0 and moves x and y only (the 2-D one, in every plane)."""
    if mesh.dim != 2:
        raise ValueError("extrude_quads: the mesh is not 2-D (quads)")
    if not depth > 0:
        raise ValueError(f"extrude_quads: depth must be > 0, got {depth}")
    half = 0.5 * float(depth)
    lower, upper = mesh.vertices.copy(), mesh.vertices.copy()
    lower[:, 2], upper[:, 2] = -half, half
    num = len(mesh.vertices)
    ids = mesh.element_ids

    def stacked(array, t_minus, t_plus):  # (E, 4) per-face array and the values of faces 4, 5
        return np.concatenate([array, np.stack([np.broadcast_to(t_minus, ids.shape),
                                                np.broadcast_to(t_plus, ids.shape)], axis=1)], axis=1)

    curved = None
    if mesh.curved_nodes is not None:  # x, y repeated along k; z = half * (GLL point of order q)
        q1 = mesh.curved_nodes.shape[-1]
        curved = np.repeat(mesh.curved_nodes, q1, axis=2)
        curved[:, 2] = half * gll_points(q1 - 1)[None, :, None, None]
    deform = None if mesh.deform is None else _planar_deform(mesh.deform)
    labels = None
    if mesh.element_labels is not None:
        labels = np.concatenate([mesh.element_labels, np.zeros((len(ids), 1), dtype=mesh.element_labels.dtype)], 1)
    three_d = replace(
        mesh,
        vertices=np.concatenate([lower, upper]),
        element_vertices=np.concatenate([mesh.element_vertices, mesh.element_vertices + num], axis=1),
        face_neighbour=stacked(mesh.face_neighbour, ids, ids),
        neighbour_face=stacked(mesh.neighbour_face, 5, 4),
        face_orientation=stacked(mesh.face_orientation, 0, 0),
        boundary_kind=stacked(mesh.boundary_kind, INTERIOR, INTERIOR),
        face_group=stacked(mesh.face_group, -1, -1),
        interior_group=stacked(mesh.interior_group, -1, -1),
        element_labels=labels,
        curved_nodes=curved,
        deform=deform,
    )
    three_d.check()
    return three_d
