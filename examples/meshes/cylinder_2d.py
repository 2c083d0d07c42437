"""A circular cylinder (a hole of radius `radius`) in a square of quadrilaterals, for 2-D
scattering with a TF/SF contour, a near-to-far contour and a PML on element edges
(examples/2d/maxwell_te_cylinder.toml; tests/unit/test_maxwell_2d_cylinder.py).

    python examples/meshes/cylinder_2d.py            # writes examples/meshes/cylinder_2d_q4.msh

The square [-half_width, half_width]^2 carries `divisions` edges per side; a ring of
`divisions` x `rings` curved quads per side joins it to the circle (equiangular spokes, the
arcs exact at the geometry order: gmsh places the high-order nodes on the circle). Beyond the
square, Cartesian layers (their thicknesses `layers`, innermost first) continue its lines out
to the outer square, so every line x, y = +-(half_width + sum of the first j layers) is made
of element edges: any square between them is a valid TF/SF, near-to-far or PML boundary.
Physical curves "cylinder" (the circle) and "walls" (the outer square); surface "air".
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import gmsh


def cylinder_in_square(path, radius=0.5, half_width=1.0, divisions=4, rings=2, layers=(0.5, 0.5, 0.5, 0.5),
                       order=4, version=4.1) -> Path:
    """Write the mesh (see the module docstring); gmsh is initialised here if it is not."""
    started = not gmsh.isInitialized()
    if started:
        gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.clear()
    gmsh.model.add("cylinder_2d")
    geo = gmsh.model.geo
    points: dict = {}

    def point(x, y):
        key = (round(x, 12), round(y, 12))
        if key not in points:
            points[key] = geo.addPoint(x, y, 0.0)
        return points[key]

    lines: dict = {}

    def line(p, q):
        if (q, p) in lines:
            return -lines[(q, p)]
        if (p, q) not in lines:
            lines[(p, q)] = geo.addLine(p, q)
        return lines[(p, q)]

    centre = geo.addPoint(0.0, 0.0, 0.0)
    arcs: dict = {}

    def arc(p, q):
        if (q, p) in arcs:
            return -arcs[(q, p)]
        if (p, q) not in arcs:
            arcs[(p, q)] = geo.addCircleArc(p, centre, q)
        return arcs[(p, q)]

    surfaces, circle, walls = [], [], []

    def quad(corners, curves):
        surfaces.append(geo.addPlaneSurface([geo.addCurveLoop(curves)]))
        return surfaces[-1]

    # the ring: per side of the square, divisions x rings quads between the circle and the side
    n = divisions
    grid = [-1.0 + 2.0 * i / n for i in range(n + 1)]
    sides = [((1, 0), (0, 1)), ((0, 1), (-1, 0)), ((-1, 0), (0, -1)), ((0, -1), (1, 0))]  # (normal, tangent)
    for (nx, ny), (tx, ty) in sides:
        def on(ring, i, nx=nx, ny=ny, tx=tx, ty=ty):
            """Point of ring `ring` (0: the circle, rings: the square) at spoke i."""
            u = grid[i]
            sx, sy = half_width * (nx + u * tx), half_width * (ny + u * ty)  # on the square's side
            angle = math.atan2(ny, nx) + math.pi / 4 * u  # equiangular spokes
            cx, cy = radius * math.cos(angle), radius * math.sin(angle)
            s = ring / rings
            return point((1 - s) * cx + s * sx, (1 - s) * cy + s * sy)

        for ring in range(rings):
            for i in range(n):
                a, b, c, d = on(ring, i), on(ring, i + 1), on(ring + 1, i + 1), on(ring + 1, i)
                inner = arc(a, b) if ring == 0 else line(a, b)
                if ring == 0:
                    circle.append(abs(inner))
                quad((a, b, c, d), [inner, line(b, c), line(c, d), line(d, a)])
    # the Cartesian layers: the square's lines continued outwards, less the square
    outer = [half_width + sum(layers[:j + 1]) for j in range(len(layers))]
    coords = [-x for x in reversed(outer)] + [half_width * g for g in grid] + outer
    first, last, count = len(layers), len(layers) + n, len(coords) - 1
    for j in range(count):
        for i in range(count):
            if first <= i < last and first <= j < last:
                continue
            a, b = point(coords[i], coords[j]), point(coords[i + 1], coords[j])
            c, d = point(coords[i + 1], coords[j + 1]), point(coords[i], coords[j + 1])
            curves = [line(a, b), line(b, c), line(c, d), line(d, a)]
            quad((a, b, c, d), curves)
            for curve, on_wall in zip(curves, (j == 0, i == count - 1, j == count - 1, i == 0)):
                if on_wall:
                    walls.append(abs(curve))
    geo.synchronize()
    for _, curve in gmsh.model.getEntities(1):
        gmsh.model.mesh.setTransfiniteCurve(curve, 2)
    for s in surfaces:
        gmsh.model.mesh.setTransfiniteSurface(s)
        gmsh.model.mesh.setRecombine(2, s)
    gmsh.model.addPhysicalGroup(1, circle, name="cylinder")
    gmsh.model.addPhysicalGroup(1, walls, name="walls")
    gmsh.model.addPhysicalGroup(2, surfaces, name="air")
    gmsh.model.mesh.generate(2)
    gmsh.model.mesh.setOrder(order)
    gmsh.option.setNumber("Mesh.MshFileVersion", version)
    gmsh.write(str(path))
    if started:
        gmsh.finalize()
    return Path(path)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("cylinder_2d_q4.msh")
    print(cylinder_in_square(target))
