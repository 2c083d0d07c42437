"""All-hexahedral meshes made with the gmsh Python API, for lobatto (docs/meshes.md).

    python examples/meshes/gmsh_meshes.py          # writes examples/meshes/sphere_in_box.msh
                                                   # and sphere_scatterer{,_q4,_n2}.msh

Each mesh is block-structured: the domain is cut into six-sided blocks (hexahedra whose edges
may be lines or circle arcs and whose faces may be planes, sphere patches or Coons patches),
and each block is meshed as a transfinite volume of n x n x n hexahedra (``setTransfinite*``
and ``setRecombine``). ``gmsh.model.mesh.setOrder(q)`` then places the high-order nodes on the
curved edges and faces, so the elements follow the sphere and the cylinders.

The functions are also the tests' and benchmarks' meshes (tests/unit/test_gmsh_mesh.py,
benchmarks/curved_convergence.py).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import gmsh

HERE = Path(__file__).resolve().parent


class Blocks:
    """Hexahedral blocks in gmsh's built-in kernel, one hexahedron each, sharing points, curves
    and faces.

    A block is given by its 8 corner points in lexicographic order (x fastest: corner
    a + 2b + 4c). A curve between two points is a circle arc when `centre(p, q)` gives a
    centre for them, else a line; a face whose four corners lie on one sphere (`sphere(points)`
    gives its centre) is a sphere patch, any other face a Coons patch of its four curves.

    Why one element per block: gmsh places the high-order nodes of a mesh edge that lies
    inside a curved surface by an iterative equal-distance search that stops early (on a
    cylinder we measured nodes 0.36 degrees off, geometry errors of 5e-4 at order 4 that do
    not fall with the order), while the nodes of a curve and of a face's interior come from
    their exact parametrisations. With one element per block every element edge is a curve."""

    def __init__(self, centre=None, sphere=None):
        self.centre = centre or (lambda p, q: None)
        self.sphere = sphere or (lambda points: None)
        self.points, self.coords, self.curves, self.faces, self.volumes = {}, {}, {}, {}, []
        self.centres = {}

    def point(self, x, y, z) -> int:
        key = (round(x, 12) + 0.0, round(y, 12) + 0.0, round(z, 12) + 0.0)
        if key not in self.points:
            self.points[key] = gmsh.model.geo.addPoint(x, y, z)
            self.coords[self.points[key]] = (x, y, z)
        return self.points[key]

    def _centre_point(self, c) -> int:
        if c not in self.centres:
            self.centres[c] = gmsh.model.geo.addPoint(*c)
        return self.centres[c]

    def curve(self, p: int, q: int) -> int:
        """Signed tag of the curve from p to q."""
        if (p, q) in self.curves:
            return self.curves[(p, q)]
        if (q, p) in self.curves:
            return -self.curves[(q, p)]
        c = self.centre(self.coords[p], self.coords[q])
        if c is None:
            tag = gmsh.model.geo.addLine(p, q)
        else:
            tag = gmsh.model.geo.addCircleArc(p, self._centre_point(c), q)
        self.curves[(p, q)] = tag
        return tag

    def face(self, corners) -> int:
        """The face through 4 points given around its boundary."""
        key = tuple(sorted(corners))
        if key not in self.faces:
            loop = gmsh.model.geo.addCurveLoop([self.curve(corners[i], corners[(i + 1) % 4]) for i in range(4)])
            c = self.sphere([self.coords[p] for p in corners])
            centre = -1 if c is None else self._centre_point(c)
            self.faces[key] = gmsh.model.geo.addSurfaceFilling([loop], sphereCenterTag=centre)
        return self.faces[key]

    def face_of(self, corners) -> int:
        return self.faces[tuple(sorted(corners))]

    def block(self, corners) -> int:
        """A volume from 8 point tags, lexicographic."""
        p = corners
        sides = [(p[0], p[2], p[6], p[4]), (p[1], p[3], p[7], p[5]), (p[0], p[1], p[5], p[4]),
                 (p[2], p[3], p[7], p[6]), (p[0], p[1], p[3], p[2]), (p[4], p[5], p[7], p[6])]
        shell = gmsh.model.geo.addSurfaceLoop([self.face(s) for s in sides])
        volume = gmsh.model.geo.addVolume([shell])
        self.volumes.append(volume)
        return volume

    def lattice(self, position, n: tuple) -> list:
        """Blocks of the lattice position(i, j, k) (a point for 0 <= i <= n[0] ...): the volumes,
        and point tags in `self.grid[(i, j, k)]`."""
        self.grid = {(i, j, k): self.point(*position(i, j, k))
                     for k in range(n[2] + 1) for j in range(n[1] + 1) for i in range(n[0] + 1)}
        volumes = []
        for k in range(n[2]):
            for j in range(n[1]):
                for i in range(n[0]):
                    volumes.append(self.block([self.grid[(i + a, j + b, k + c)]
                                               for c in (0, 1) for b in (0, 1) for a in (0, 1)]))
        return volumes

    def mesh(self, order: int) -> None:
        """One hexahedron per block, then elements of the given order."""
        gmsh.model.geo.synchronize()
        for tag in self.curves.values():
            gmsh.model.mesh.setTransfiniteCurve(tag, 2)
        for tag in self.faces.values():
            gmsh.model.mesh.setTransfiniteSurface(tag)
            gmsh.model.mesh.setRecombine(2, tag)
        for tag in self.volumes:
            gmsh.model.mesh.setTransfiniteVolume(tag)
        gmsh.model.mesh.generate(3)
        if order > 1:
            gmsh.model.mesh.setOrder(order)


def _write(path, version: float, binary: bool = False) -> Path:
    gmsh.option.setNumber("Mesh.MshFileVersion", version)
    gmsh.option.setNumber("Mesh.Binary", int(binary))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    gmsh.write(str(path))
    return path


def _start(name: str) -> None:
    if not gmsh.isInitialized():
        gmsh.initialize(readConfigFiles=False, interruptible=False)
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.clear()
    gmsh.option.setNumber("Mesh.SecondOrderIncomplete", 0)
    gmsh.model.add(name)


def _on_sphere(centre, radius):
    def test(points):
        ok = all(abs(math.dist(p, centre) - radius) < 1e-9 * radius for p in points)
        return centre if ok else None
    return test


#: the six faces of a cube: (normal axis, side), and the two axes spanning the face
_CUBE_FACES = [(axis, side) for axis in range(3) for side in (-1, 1)]


def _on_face(axis, side, u, v, w):
    """The point w * side along `axis`, u and v along the other two axes (in increasing order)."""
    p = [0.0, 0.0, 0.0]
    others = [a for a in range(3) if a != axis]
    p[axis], p[others[0]], p[others[1]] = side * w, u, v
    return p


def sphere_in_box(path, radius=0.5, half_width=1.0, divisions=2, order=2, version=4.1, binary=False) -> Path:
    """A ball of `radius` inside the cube [-half_width, half_width]^3, both centred at 0.

    The ball is a cubed sphere: an inner cube of half-width radius/2, and from each of its faces
    a shell of blocks out to the sphere, whose points lie along the equiangular directions
    (their lattice lines on the sphere are great circles); six more shells reach from the
    sphere to the box. `divisions` elements along each edge of the inner cube, across each
    shell and along each edge of a sphere patch: 13 divisions^3 hexahedra. Volume groups
    "sphere" and "air"; surface groups "walls" (the box) and "sphere_surface" (inside the mesh,
    between the two volumes)."""
    _start("sphere_in_box")
    origin = (0.0, 0.0, 0.0)
    on_sphere = _on_sphere(origin, radius)

    def arc_centre(p, q):  # both ends on the sphere: the great circle through them
        return origin if on_sphere([p, q]) else None

    blocks = Blocks(centre=arc_centre, sphere=on_sphere)
    n, cube = divisions, radius / 2
    grid = [-1.0 + 2.0 * i / n for i in range(n + 1)]
    inside = blocks.lattice(lambda i, j, k: (cube * grid[i], cube * grid[j], cube * grid[k]), (n, n, n))
    outside, walls, shell = [], [], []
    for axis, side in _CUBE_FACES:
        def direction(a, b):  # equiangular: tan of evenly spaced angles
            u, v = math.tan(math.pi / 4 * grid[a]), math.tan(math.pi / 4 * grid[b])
            d = _on_face(axis, side, u, v, 1.0)
            return [x / math.sqrt(u * u + v * v + 1.0) for x in d]

        def inner_shell(l, a, b):  # l = 0 on the cube, n on the sphere
            s = l / n
            c = _on_face(axis, side, cube * grid[a], cube * grid[b], cube)
            return [(1 - s) * x + s * radius * y for x, y in zip(c, direction(a, b))]

        def outer_shell(l, a, b):  # l = 0 on the sphere, n on the box
            s = l / n
            c = _on_face(axis, side, half_width * grid[a], half_width * grid[b], half_width)
            return [(1 - s) * radius * y + s * x for x, y in zip(c, direction(a, b))]

        for position, group, named in ((inner_shell, inside, shell), (outer_shell, outside, walls)):
            group += blocks.lattice(lambda i, j, k: position(k, i, j), (n, n, n))
            top = blocks.grid  # layer n: the sphere (inner shell) or the box (outer shell)
            named += [(top[(a, b, n)], top[(a + 1, b, n)], top[(a + 1, b + 1, n)], top[(a, b + 1, n)])
                      for a in range(n) for b in range(n)]
    blocks.mesh(order)
    gmsh.model.addPhysicalGroup(3, inside, name="sphere")
    gmsh.model.addPhysicalGroup(3, outside, name="air")
    gmsh.model.addPhysicalGroup(2, [blocks.face_of(f) for f in walls], name="walls")
    gmsh.model.addPhysicalGroup(2, [blocks.face_of(f) for f in shell], name="sphere_surface")
    return _write(path, version, binary)


def ball(path, radius=1.0, divisions=1, order=2, version=4.1) -> Path:
    """The ball of `radius` about 0 alone, as a cubed sphere (the inner part of sphere_in_box):
    an inner cube of half-width radius/2 and six shells out to the sphere, 7 divisions^3
    hexahedra. Volume group "ball", surface group "wall" (the sphere). For cavity modes."""
    _start("ball")
    origin = (0.0, 0.0, 0.0)
    on_sphere = _on_sphere(origin, radius)
    blocks = Blocks(centre=lambda p, q: origin if on_sphere([p, q]) else None, sphere=on_sphere)
    n, cube = divisions, radius / 2
    grid = [-1.0 + 2.0 * i / n for i in range(n + 1)]
    volumes = blocks.lattice(lambda i, j, k: (cube * grid[i], cube * grid[j], cube * grid[k]), (n, n, n))
    wall = []
    for axis, side in _CUBE_FACES:
        def shell(l, a, b, axis=axis, side=side):  # l = 0 on the cube, n on the sphere
            u, v = math.tan(math.pi / 4 * grid[a]), math.tan(math.pi / 4 * grid[b])
            d = _on_face(axis, side, u, v, 1.0)
            norm = math.sqrt(u * u + v * v + 1.0)
            c = _on_face(axis, side, cube * grid[a], cube * grid[b], cube)
            s = l / n
            return [(1 - s) * x + s * radius * y / norm for x, y in zip(c, d)]

        volumes += blocks.lattice(lambda i, j, k: shell(k, i, j), (n, n, n))
        top = blocks.grid
        wall += [(top[(a, b, n)], top[(a + 1, b, n)], top[(a + 1, b + 1, n)], top[(a, b + 1, n)])
                 for a in range(n) for b in range(n)]
    blocks.mesh(order)
    gmsh.model.addPhysicalGroup(3, volumes, name="ball")
    gmsh.model.addPhysicalGroup(2, [blocks.face_of(f) for f in wall], name="wall")
    return _write(path, version)


def coaxial(path, inner=0.5, outer=1.0, length=1.0, divisions=2, layers=None, order=2, version=4.1,
            serendipity=False) -> Path:
    """The region inner <= sqrt(x^2 + y^2) <= outer, 0 <= z <= length: four quarters around the
    axis, each `divisions` elements across and around (`layers` along z, default the same).
    Surface groups "inner", "outer" (the cylinders), "ends" (z = 0 and z = length); volume "coax".
    serendipity: second-order elements without face and volume nodes (20-node hexahedra)."""
    _start("coaxial")
    gmsh.option.setNumber("Mesh.SecondOrderIncomplete", int(serendipity))
    layers = layers or divisions

    def arc_centre(p, q):  # same radius and height: an arc about the axis
        rp, rq = math.hypot(p[0], p[1]), math.hypot(q[0], q[1])
        return (0.0, 0.0, p[2]) if abs(rp - rq) < 1e-12 and abs(p[2] - q[2]) < 1e-12 and rp > 0 else None

    blocks = Blocks(centre=arc_centre)
    n = divisions
    around = 4 * n

    def position(i, j, k):  # radius fastest, then angle, then z
        r = inner + (outer - inner) * i / n
        angle = math.pi / 4 + 2 * math.pi * (j % around) / around
        return (r * math.cos(angle), r * math.sin(angle), length * k / layers)

    volumes = blocks.lattice(position, (n, around, layers))
    grid = blocks.grid
    faces = {"inner": [], "outer": [], "ends": []}
    for j in range(around):
        for k in range(layers):
            for name, i in (("inner", 0), ("outer", n)):
                faces[name].append((grid[(i, j, k)], grid[(i, j + 1, k)], grid[(i, j + 1, k + 1)], grid[(i, j, k + 1)]))
        for i in range(n):
            for k in (0, layers):
                faces["ends"].append((grid[(i, j, k)], grid[(i + 1, j, k)], grid[(i + 1, j + 1, k)], grid[(i, j + 1, k)]))
    blocks.mesh(order)
    gmsh.model.addPhysicalGroup(3, volumes, name="coax")
    for name, quads in faces.items():
        gmsh.model.addPhysicalGroup(2, [blocks.face_of(f) for f in quads], name=name)
    return _write(path, version)


def box(path, elements=(2, 2, 2), lower=(0.0, 0.0, 0.0), upper=(1.0, 1.0, 1.0), order=1, version=4.1,
        binary=False, serendipity=False, periodic=(False, False, False)) -> Path:
    """The box [lower, upper] in elements[0] x elements[1] x elements[2] hexahedra; surface
    groups named like lobatto's box sides (xmin ... zmax), volume group "box". The sides of a
    periodic axis are joined (``setPeriodic``: the max side's mesh is the min side's, moved)
    and take no group."""
    _start("box")
    size = [u - l for l, u in zip(lower, upper)]
    volume = gmsh.model.occ.addBox(*lower, *size)
    gmsh.model.occ.synchronize()
    for _, curve in gmsh.model.getEntities(1):
        x0, y0, z0, x1, y1, z1 = gmsh.model.getBoundingBox(1, curve)
        axis = max(range(3), key=lambda a: (x1 - x0, y1 - y0, z1 - z0)[a])
        gmsh.model.mesh.setTransfiniteCurve(curve, int(elements[axis]) + 1)
    names = {}
    for _, surface in gmsh.model.getEntities(2):
        gmsh.model.mesh.setTransfiniteSurface(surface)
        gmsh.model.mesh.setRecombine(2, surface)
        x0, y0, z0, x1, y1, z1 = gmsh.model.getBoundingBox(2, surface)
        centre = ((x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2)
        axis = min(range(3), key=lambda a: (x1 - x0, y1 - y0, z1 - z0)[a])
        side = "max" if centre[axis] > (lower[axis] + upper[axis]) / 2 else "min"
        names["xyz"[axis] + side] = surface
    gmsh.model.mesh.setTransfiniteVolume(volume)
    for axis in range(3):
        if periodic[axis]:
            shift = [1.0 if i == j else 0.0 for i in range(3) for j in range(4)] + [0.0, 0.0, 0.0, 1.0]
            shift[4 * axis + 3] = size[axis]
            gmsh.model.mesh.setPeriodic(2, [names["xyz"[axis] + "max"]], [names["xyz"[axis] + "min"]], shift)
    gmsh.option.setNumber("Mesh.SecondOrderIncomplete", int(serendipity))
    gmsh.model.mesh.generate(3)
    if order > 1:
        gmsh.model.mesh.setOrder(order)
    for name in ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax"):
        if not periodic["xyz".index(name[0])]:
            gmsh.model.addPhysicalGroup(2, [names[name]], name=name)
    gmsh.model.addPhysicalGroup(3, [volume], name="box")
    return _write(path, version, binary)



def sphere_scatterer(path, radius=0.5, half_width=0.75, divisions=2, layers=(0.375, 0.375, 0.375), order=2,
                     core=0.3, version=4.1, binary=False) -> Path:
    """A ball of `radius` inside the cube [-half_width, half_width]^3 (the construction of
    sphere_in_box), surrounded by Cartesian layers of hexahedra out to a larger box: for
    scattering, with a TF/SF surface, a near-to-far box and a PML on element faces.

    The cube's faces carry a lattice of `divisions` x `divisions` squares; the layers continue
    it outwards, so the mesh is conforming: along each axis the lines are those of the cube
    (spacing 2 half_width / divisions) and, beyond it, one plane per entry of `layers` (their
    thicknesses, innermost first). Every plane x, y or z = +-(half_width + sum of the first j
    layers) is a surface of element faces, so any box between them is a valid TF/SF, near-to-far
    or PML boundary. `core` is the inner cube's half-width over the radius: sphere_in_box's 0.5
    makes the shell elements at the inner cube's corners (1 - 0.5 sqrt 3) / divisions = 0.13
    radius / divisions thick, 0.3 makes them 0.48 radius / divisions, so the time step (set by
    the thinnest element) is larger: 1.6 times at divisions = 1, N = 3. 13 divisions^3 +
    (divisions + 2 len(layers))^3 - divisions^3 hexahedra. Volume groups "sphere" and "air"
    (everything outside the ball); surface groups "walls" (the outer box), "sphere_surface"
    (between the volumes) and "cube" (the faces of [-half_width, half_width]^3, inside the air)."""
    _start("sphere_scatterer")
    origin = (0.0, 0.0, 0.0)
    on_sphere = _on_sphere(origin, radius)
    blocks = Blocks(centre=lambda p, q: origin if on_sphere([p, q]) else None, sphere=on_sphere)
    n, cube = divisions, core * radius
    if not 0 < core < 1 / math.sqrt(3) or half_width <= radius:
        raise ValueError("need 0 < core < 1/sqrt(3) (the inner cube inside the ball) and half_width > radius")
    grid = [-1.0 + 2.0 * i / n for i in range(n + 1)]
    inside = blocks.lattice(lambda i, j, k: (cube * grid[i], cube * grid[j], cube * grid[k]), (n, n, n))
    air, shell, cube_faces = [], [], []
    for axis, side in _CUBE_FACES:
        def direction(a, b, axis=axis, side=side):  # equiangular: tan of evenly spaced angles
            u, v = math.tan(math.pi / 4 * grid[a]), math.tan(math.pi / 4 * grid[b])
            d = _on_face(axis, side, u, v, 1.0)
            return [x / math.sqrt(u * u + v * v + 1.0) for x in d]

        def inner_shell(l, a, b, axis=axis, side=side):  # l = 0 on the inner cube, n on the sphere
            s, c = l / n, _on_face(axis, side, cube * grid[a], cube * grid[b], cube)
            return [(1 - s) * x + s * radius * y for x, y in zip(c, direction(a, b))]

        def outer_shell(l, a, b, axis=axis, side=side):  # l = 0 on the sphere, n on the cube
            s, c = l / n, _on_face(axis, side, half_width * grid[a], half_width * grid[b], half_width)
            return [(1 - s) * radius * y + s * x for x, y in zip(c, direction(a, b))]

        for position, group, named in ((inner_shell, inside, shell), (outer_shell, air, cube_faces)):
            group += blocks.lattice(lambda i, j, k: position(k, i, j), (n, n, n))
            top = blocks.grid
            named += [(top[(a, b, n)], top[(a + 1, b, n)], top[(a + 1, b + 1, n)], top[(a, b + 1, n)])
                      for a in range(n) for b in range(n)]
    # the Cartesian layers: the tensor lattice of `lines` on each axis, less the cube
    outer = [half_width + sum(layers[:j + 1]) for j in range(len(layers))]
    lines = [-x for x in reversed(outer)] + [half_width * g for g in grid] + outer
    first, last = len(layers), len(layers) + n  # the cube's cells: first <= index < last on every axis
    count = len(lines) - 1
    point = {(i, j, k): blocks.point(lines[i], lines[j], lines[k])
             for k in range(count + 1) for j in range(count + 1) for i in range(count + 1)}
    walls = []
    for k in range(count):
        for j in range(count):
            for i in range(count):
                if all(first <= c < last for c in (i, j, k)):
                    continue
                corners = [point[(i + a, j + b, k + c)] for c in (0, 1) for b in (0, 1) for a in (0, 1)]
                air.append(blocks.block(corners))
                for axis, index in enumerate((i, j, k)):
                    for end, offset in ((0, 0), (count - 1, 1)):
                        if index == end:  # a face on the outer box
                            quad = [q for q, (a, b, c) in zip(corners, [(a, b, c) for c in (0, 1) for b in (0, 1)
                                                                         for a in (0, 1)])
                                    if (a, b, c)[axis] == offset]
                            walls.append((quad[0], quad[1], quad[3], quad[2]))
    blocks.mesh(order)
    gmsh.model.addPhysicalGroup(3, inside, name="sphere")
    gmsh.model.addPhysicalGroup(3, air, name="air")
    gmsh.model.addPhysicalGroup(2, [blocks.face_of(f) for f in walls], name="walls")
    gmsh.model.addPhysicalGroup(2, [blocks.face_of(f) for f in shell], name="sphere_surface")
    gmsh.model.addPhysicalGroup(2, [blocks.face_of(f) for f in cube_faces], name="cube")
    return _write(path, version, binary)


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "sphere_in_box.msh"
    gmsh.initialize(readConfigFiles=False, interruptible=False)
    print("wrote", sphere_in_box(out, radius=0.5, half_width=1.0, divisions=2, order=2))
    if len(sys.argv) == 1:  # examples/sphere_scattering.toml's mesh
        print("wrote", sphere_scatterer(HERE / "sphere_scatterer.msh", radius=0.5, half_width=0.75, divisions=1,
                                        layers=(0.5, 0.5, 0.5), order=2, binary=True))  # the tests' (small)
        print("wrote", sphere_scatterer(HERE / "sphere_scatterer_q4.msh", radius=0.5, half_width=0.75, divisions=2,
                                        layers=(0.375, 0.375, 0.375), order=4, binary=True))  # the example's
        print("wrote", sphere_scatterer(HERE / "sphere_scatterer_n2.msh", radius=0.5, half_width=0.75, divisions=2,
                                        layers=(0.375, 0.375, 0.375), order=2, binary=True))  # the benchmark's
    gmsh.finalize()
