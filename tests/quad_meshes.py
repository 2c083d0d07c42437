"""2-D gmsh meshes of quadrilaterals made with the SDK, for the 2-D reader tests
(tests/unit/test_mesh_2d_readers.py) and their MPI twin (tests/mpi/test_mesh_2d_ranks.py).
The caller has initialised the SDK; each function replaces the current model and writes the
file."""

from __future__ import annotations

import math

import gmsh


def disc(path, *, radius=1.0, inner=0.4, divisions=1, order=2, version=4.1, serendipity=False, z=0.0,
         triangle_core=False, clockwise_core=False):
    """An O-grid disc of quadrilaterals made with the SDK: a square [-inner, inner]^2 and four
    curved blocks out to the circle (physical curve 'rim', surfaces 'core' and 'ring')."""
    gmsh.clear()
    gmsh.model.add("disc")
    geo = gmsh.model.geo
    centre, a, r = geo.addPoint(0, 0, z), inner, radius / math.sqrt(2)
    square = [geo.addPoint(x, y, z) for x, y in ((-a, -a), (a, -a), (a, a), (-a, a))]
    circle = [geo.addPoint(x, y, z) for x, y in ((-r, -r), (r, -r), (r, r), (-r, r))]
    sides = [geo.addLine(square[i], square[(i + 1) % 4]) for i in range(4)]
    arcs = [geo.addCircleArc(circle[i], centre, circle[(i + 1) % 4]) for i in range(4)]
    spokes = [geo.addLine(square[i], circle[i]) for i in range(4)]
    loop = [-s for s in sides[::-1]] if clockwise_core else sides
    surfaces = [geo.addPlaneSurface([geo.addCurveLoop(loop)])]
    for i in range(4):
        loop = geo.addCurveLoop([sides[i], spokes[(i + 1) % 4], -arcs[i], -spokes[i]])
        surfaces.append(geo.addPlaneSurface([loop]))
    geo.synchronize()
    for curve in sides + arcs + spokes:
        gmsh.model.mesh.setTransfiniteCurve(curve, divisions + 1)
    for s in surfaces:
        gmsh.model.mesh.setTransfiniteSurface(s)
        if not (triangle_core and s == surfaces[0]):
            gmsh.model.mesh.setRecombine(2, s)
    gmsh.model.addPhysicalGroup(1, arcs, name="rim")
    gmsh.model.addPhysicalGroup(2, surfaces[:1], name="core")
    gmsh.model.addPhysicalGroup(2, surfaces[1:], name="ring")
    gmsh.option.setNumber("Mesh.SecondOrderIncomplete", 1 if serendipity else 0)
    gmsh.model.mesh.generate(2)
    gmsh.model.mesh.setOrder(order)
    gmsh.option.setNumber("Mesh.MshFileVersion", version)
    gmsh.write(str(path))
    return path


def strip(path, nx=3, ny=2, periodic=True):
    """The rectangle [0, 3] x [0, 2] of nx x ny quads (physical curves ymin, ymax; xmin, xmax
    too unless periodic: then the right curve is periodic with the left one), surface 'plate'."""
    gmsh.clear()
    gmsh.model.add("strip")
    occ = gmsh.model.occ
    occ.addRectangle(0, 0, 0, 3, 2)
    occ.synchronize()
    curves = {}
    for _, tag in gmsh.model.getEntities(1):
        x0, y0, _, x1, y1, _ = gmsh.model.getBoundingBox(1, tag)
        vertical = abs(x1 - x0) < 1e-3
        curves[("xmin" if x0 < 1.5 else "xmax") if vertical else ("ymin" if y0 < 1.0 else "ymax")] = tag
    for name in ("xmin", "xmax"):
        gmsh.model.mesh.setTransfiniteCurve(curves[name], ny + 1)
    for name in ("ymin", "ymax"):
        gmsh.model.mesh.setTransfiniteCurve(curves[name], nx + 1)
    gmsh.model.mesh.setTransfiniteSurface(1)
    gmsh.model.mesh.setRecombine(2, 1)
    if periodic:
        gmsh.model.mesh.setPeriodic(1, [curves["xmax"]], [curves["xmin"]], [1, 0, 0, 3, 0, 1, 0, 0, 0, 0, 1, 0,
                                                                             0, 0, 0, 1])
    for name in ("ymin", "ymax") + (() if periodic else ("xmin", "xmax")):
        gmsh.model.addPhysicalGroup(1, [curves[name]], name=name)
    gmsh.model.addPhysicalGroup(2, [1], name="plate")
    gmsh.model.mesh.generate(2)
    gmsh.write(str(path))
    return path
