"""Flow past a cylinder in a channel: an all-hexahedral gmsh mesh for examples/cylinder.toml.

    python examples/meshes/cylinder_channel.py                 # writes examples/meshes/cylinder_channel.msh
    python examples/meshes/cylinder_channel.py OUT.msh --order 2 --divisions 1 --downstream 4
    python examples/meshes/cylinder_channel.py --planar   # writes cylinder_channel_2d.msh (quads)

The domain of the Schäfer–Turek benchmark 2D-1 (Schäfer and Turek, "Benchmark computations of
laminar flow around a cylinder", 1996): the channel [0, 2.2] x [0, 0.41] with a cylinder of
radius 0.05 about (0.2, 0.2), extruded in z by one element of depth 0.1 and periodic in z, so
the flow is the two-dimensional one. Physical groups: surfaces "inlet" (x = 0), "outlet"
(x = 2.2), "walls" (y = 0 and y = 0.41), "cylinder"; volume "fluid". ``planar``: the same
blocks as quadrilaterals in the plane z = 0 (a 2-D mesh, examples/2d/cylinder.toml): the groups
are physical curves, and "fluid" a physical surface.

Blocks in the xy-plane, one hexahedron each (``gmsh_meshes.Blocks``: the cylinder's edges are
circle arcs, whose high-order nodes gmsh places from the exact parametrisation):

* an O-grid around the cylinder, in the square [0.1, 0.3]^2: ``divisions`` blocks along each
  side of the square, ``rings`` blocks from the circle out to the square, the rings closer
  near the cylinder;
* a structured grid of rectangles around that square: one column upstream, the square's
  columns, ``downstream`` columns to the outlet (longer towards it); one row below the square,
  its rows, one row above.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import gmsh

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gmsh_meshes import Blocks  # noqa: E402

LENGTH, HEIGHT, DEPTH = 2.2, 0.41, 0.1
CENTRE, RADIUS = (0.2, 0.2), 0.05
SQUARE = (0.1, 0.3)  # the O-grid's square, in x and in y


def cylinder_channel(path, divisions=2, rings=2, downstream=8, order=4, version=4.1, planar=False) -> Path:
    """Write the mesh to ``path``: 4 divisions rings + (downstream + 1 + divisions) (divisions
    + 2) - divisions^2 hexahedra of gmsh order ``order`` (quadrilaterals when ``planar``)."""
    if not gmsh.isInitialized():
        gmsh.initialize(readConfigFiles=False, interruptible=False)
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.clear()
    gmsh.option.setNumber("Mesh.SecondOrderIncomplete", 0)
    gmsh.model.add("cylinder_channel")
    cx, cy = CENTRE

    def arc_centre(p, q):  # two points on the cylinder (at the same z): an arc about its axis
        on = [abs(math.hypot(a[0] - cx, a[1] - cy) - RADIUS) < 1e-9 for a in (p, q)]
        return (cx, cy, p[2]) if all(on) and abs(p[2] - q[2]) < 1e-12 else None

    blocks = Blocks(centre=arc_centre)
    volumes, quads = [], []  # quads: (corner points at z = 0, lexicographic in the block's (u, v))

    def add(p00, p10, p01, p11):
        """The hexahedron over the quadrilateral p00 p10 p11 p01 (counterclockwise seen from +z)."""
        bottom = [blocks.point(x, y, 0.0) for x, y in (p00, p10, p01, p11)]
        quads.append((p00, p10, p01, p11))
        if planar:  # the quadrilateral itself, its corners around its boundary
            volumes.append(blocks.face([bottom[0], bottom[1], bottom[3], bottom[2]]))
            return
        top = [blocks.point(x, y, DEPTH) for x, y in (p00, p10, p01, p11)]
        volumes.append(blocks.block(bottom + top))

    # the O-grid: ring i (0 on the circle, rings on the square), angle j counterclockwise from
    # the square's lower left corner; ring spacing grows away from the cylinder
    lo, hi = SQUARE
    around = 4 * divisions

    def square_point(j):
        side, t = divmod(j % around, divisions)
        t /= divisions
        corners = [(lo, lo), (hi, lo), (hi, hi), (lo, hi)]
        a, b = corners[side], corners[(side + 1) % 4]
        return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))

    def ring_point(i, j):
        angle = 1.25 * math.pi + 2 * math.pi * (j % around) / around
        circle = (cx + RADIUS * math.cos(angle), cy + RADIUS * math.sin(angle))
        if i == rings:
            return square_point(j)
        s = (i / rings) ** 1.5
        square = square_point(j)
        return (circle[0] + s * (square[0] - circle[0]), circle[1] + s * (square[1] - circle[1]))

    for i in range(rings):
        for j in range(around):
            # u outwards, v along the angle: counterclockwise seen from +z
            add(ring_point(i, j), ring_point(i + 1, j), ring_point(i, j + 1), ring_point(i + 1, j + 1))

    # the rectangles around the square
    step = (hi - lo) / divisions
    square_lines = [lo + k * step for k in range(divisions + 1)]
    grow = 1.25  # each downstream column this much longer than the one before
    widths = [grow ** k for k in range(downstream)]
    xs = [0.0] + square_lines + [hi + (LENGTH - hi) * sum(widths[:k + 1]) / sum(widths) for k in range(downstream)]
    xs[-1] = LENGTH
    ys = [0.0] + square_lines + [HEIGHT]
    inside = range(1, 1 + divisions)
    for a in range(len(xs) - 1):
        for b in range(len(ys) - 1):
            if a in inside and b in inside:
                continue  # the O-grid's square
            add((xs[a], ys[b]), (xs[a + 1], ys[b]), (xs[a], ys[b + 1]), (xs[a + 1], ys[b + 1]))

    gmsh.model.geo.synchronize()
    for tag in blocks.curves.values():
        gmsh.model.mesh.setTransfiniteCurve(tag, 2)
    for tag in blocks.faces.values():
        gmsh.model.mesh.setTransfiniteSurface(tag)
        gmsh.model.mesh.setRecombine(2, tag)
    if planar:
        return _planar(path, blocks, volumes, order, version)
    for tag in volumes:
        gmsh.model.mesh.setTransfiniteVolume(tag)

    # boundary faces by where their corners lie
    groups = {"inlet": [], "outlet": [], "walls": [], "cylinder": [], "front": [], "back": []}
    for key, tag in blocks.faces.items():
        corners = [blocks.coords[p] for p in key]
        xs_, ys_, zs_ = zip(*corners)
        if all(abs(z) < 1e-12 for z in zs_):
            groups["front"].append((tag, corners))
        elif all(abs(z - DEPTH) < 1e-12 for z in zs_):
            groups["back"].append((tag, corners))
        elif all(abs(x) < 1e-12 for x in xs_):
            groups["inlet"].append((tag, corners))
        elif all(abs(x - LENGTH) < 1e-12 for x in xs_):
            groups["outlet"].append((tag, corners))
        elif all(abs(y) < 1e-12 for y in ys_) or all(abs(y - HEIGHT) < 1e-12 for y in ys_):
            groups["walls"].append((tag, corners))
        elif all(abs(math.hypot(x - cx, y - cy) - RADIUS) < 1e-9 for x, y, _ in corners):
            groups["cylinder"].append((tag, corners))
    # periodic in z: each back face is its front face moved by DEPTH
    front = {tuple(sorted((round(x, 12), round(y, 12)) for x, y, _ in c)): tag for tag, c in groups["front"]}
    back = [tag for tag, _ in groups["back"]]
    masters = [front[tuple(sorted((round(x, 12), round(y, 12)) for x, y, _ in c))] for _, c in groups["back"]]
    shift = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, DEPTH, 0, 0, 0, 1]
    gmsh.model.mesh.setPeriodic(2, back, masters, shift)
    gmsh.model.mesh.generate(3)
    if order > 1:
        gmsh.model.mesh.setOrder(order)
    gmsh.model.addPhysicalGroup(3, volumes, name="fluid")
    for name in ("inlet", "outlet", "walls", "cylinder"):
        gmsh.model.addPhysicalGroup(2, [tag for tag, _ in groups[name]], name=name)
    gmsh.option.setNumber("Mesh.MshFileVersion", version)
    gmsh.option.setNumber("Mesh.Binary", 0)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    gmsh.write(str(path))
    return path


def _planar(path, blocks, surfaces, order, version) -> Path:
    """Mesh the quadrilaterals and name the boundary curves by where their ends lie."""
    cx, cy = CENTRE
    gmsh.model.mesh.generate(2)
    if order > 1:
        gmsh.model.mesh.setOrder(order)
    groups = {"inlet": [], "outlet": [], "walls": [], "cylinder": []}
    for (p, q), tag in blocks.curves.items():
        (x0, y0, _), (x1, y1, _) = blocks.coords[p], blocks.coords[q]
        if abs(x0) < 1e-12 and abs(x1) < 1e-12:
            groups["inlet"].append(tag)
        elif abs(x0 - LENGTH) < 1e-12 and abs(x1 - LENGTH) < 1e-12:
            groups["outlet"].append(tag)
        elif (abs(y0) < 1e-12 and abs(y1) < 1e-12) or (abs(y0 - HEIGHT) < 1e-12 and abs(y1 - HEIGHT) < 1e-12):
            groups["walls"].append(tag)
        elif all(abs(math.hypot(x - cx, y - cy) - RADIUS) < 1e-9 for x, y in ((x0, y0), (x1, y1))):
            groups["cylinder"].append(tag)
    gmsh.model.addPhysicalGroup(2, surfaces, name="fluid")
    for name, tags in groups.items():
        gmsh.model.addPhysicalGroup(1, tags, name=name)
    gmsh.option.setNumber("Mesh.MshFileVersion", version)
    gmsh.option.setNumber("Mesh.Binary", 0)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    gmsh.write(str(path))
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("path", nargs="?", default=None,
                        help="default: cylinder_channel.msh (cylinder_channel_2d.msh with --planar) beside this file")
    parser.add_argument("--divisions", type=int, default=2, help="blocks along each side of the O-grid's square")
    parser.add_argument("--rings", type=int, default=2, help="blocks from the cylinder out to the square")
    parser.add_argument("--downstream", type=int, default=8, help="columns of blocks behind the square")
    parser.add_argument("--order", type=int, default=4, help="gmsh element order (the cylinder's arcs)")
    parser.add_argument("--planar", action="store_true", help="a 2-D mesh of quadrilaterals at z = 0")
    args = parser.parse_args(argv)
    default = HERE / ("cylinder_channel_2d.msh" if args.planar else "cylinder_channel.msh")
    path = cylinder_channel(args.path or default, args.divisions, args.rings, args.downstream, args.order,
                            planar=args.planar)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
