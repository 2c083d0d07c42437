"""A rectangular waveguide with a symmetric inductive iris: the structured hexahedral gmsh mesh of
examples/waveguide_iris.toml (the ports' two-port validation, docs/electromagnetics.md, "Validation case: the iris two-port").

    python examples/meshes/waveguide_iris.py            # writes examples/meshes/waveguide_iris.msh
    python examples/meshes/waveguide_iris.py OUT.msh --hx 0.0625 --hz 0.0625 --ny 2
    python examples/meshes/waveguide_iris.py --device-only   # examples/meshes/waveguide_iris_device.msh

``--device-only`` writes the guide between the two reference planes only (z = 1.5 .. 4.125,
surfaces "port1" and "port2" at its ends): examples/waveguide_iris_surface.toml names them as
ports and lobatto grows the source planes and the layers behind them.

The guide a x b = 1 x 0.5 (x across, y the height) runs along z from 0 to 5.5. A PEC
diaphragm of thickness t = 0.125 at 2.75 <= z <= 2.875 leaves a centred window 0.25 <= x <= 0.75
of full height: its elements are left out, so its faces are boundary faces of the mesh (the
group "iris"). Every plane the case names lies on element faces (element sizes hx across, hz
along, hz_pml along in the end blocks, ny elements in y):

    z = 0 ... 1.0        [pml] zmin (4 elements of 0.25: a deep layer, the band reaches f = 1.2 f_c)
    z = 1.25             port "in":  source plane
    z = 1.5              port "in":  reference plane (1.25 before the diaphragm)
    z = 2.75 ... 2.875   the diaphragm
    z = 4.125            port "out": reference plane (1.25 behind it)
    z = 4.375            port "out": source plane
    z = 4.5 ... 5.5      [pml] zmax

Physical groups: surfaces "zmin" and "zmax" (the guide's ends, behind the layers), "walls" (x =
0, 1 and y = 0, 0.5), "iris" (the diaphragm's faces: its two sides and the window's edges);
volume "guide". Built from OpenCASCADE boxes (the blocks between the planes x = 0, 0.25, 0.75, 1
and z = 0, 1, 2.75, 2.875, 4.5, 5.5, without the diaphragm's two), fragmented so that neighbours share
faces, each a transfinite block of hexahedra (first order: every face is flat).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gmsh

HERE = Path(__file__).resolve().parent
A, B = 1.0, 0.5
WINDOW = (0.25, 0.75)
IRIS = (2.75, 2.875)
LAYER = 1.0  # the [pml]'s depth at each end
LENGTH = 5.5


#: the device-only mesh's ends: the reference planes of examples/waveguide_iris.toml
PLANES = (1.5, 4.125)


def build(path, hx: float = 0.125, hz: float = 0.125, ny: int = 1, hz_pml: float = 0.25,
          device_only: bool = False) -> int:
    """Write the mesh to `path`; returns its number of hexahedra."""
    xs, zs = (0.0, *WINDOW, A), (0.0, LAYER, *IRIS, LENGTH - LAYER, LENGTH)
    ends = {"zmin": 0.0, "zmax": LENGTH}
    if device_only:  # no end blocks: from the first reference plane to the second
        zs, hz_pml, ends = (PLANES[0], PLANES[0], *IRIS, PLANES[1], PLANES[1]), hz, {"port1": PLANES[0],
                                                                                    "port2": PLANES[1]}
    for values, h, name in ((xs, hx, "hx"), (zs[1:-1], hz, "hz"), ((0.0, LAYER), hz_pml, "hz_pml")):
        for lo, hi in zip(values[:-1], values[1:]):
            if abs((hi - lo) / h - round((hi - lo) / h)) > 1e-6:
                raise SystemExit(f"{name} = {h} does not divide the block {lo} .. {hi}")
    gmsh.initialize()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("waveguide_iris")
        occ = gmsh.model.occ
        blocks = []
        for i in range(3):
            for k in range(5):
                if k == 2 and i != 1:  # the diaphragm: no elements
                    continue
                if zs[k + 1] - zs[k] <= 0:  # (device only: no end blocks)
                    continue
                blocks.append(occ.addBox(xs[i], 0.0, zs[k], xs[i + 1] - xs[i], B, zs[k + 1] - zs[k]))
        occ.fragment([(3, b) for b in blocks], [])
        occ.synchronize()
        for _, curve in gmsh.model.getEntities(1):
            x0, y0, z0, x1, y1, z1 = gmsh.model.getBoundingBox(1, curve)
            if x1 - x0 > 1e-6:
                count = round((x1 - x0) / hx)
            elif z1 - z0 > 1e-6:
                in_layer = not device_only and (z1 <= LAYER + 1e-6 or z0 >= LENGTH - LAYER - 1e-6)
                count = round((z1 - z0) / (hz_pml if in_layer else hz))
            else:
                count = ny
            gmsh.model.mesh.setTransfiniteCurve(curve, count + 1)
        for _, surface in gmsh.model.getEntities(2):
            gmsh.model.mesh.setTransfiniteSurface(surface)
            gmsh.model.mesh.setRecombine(2, surface)
        volumes = [tag for _, tag in gmsh.model.getEntities(3)]
        for volume in volumes:
            gmsh.model.mesh.setTransfiniteVolume(volume)
        groups = {**{name: [] for name in ends}, "walls": [], "iris": []}
        for _, surface in gmsh.model.getEntities(2):
            up, _ = gmsh.model.getAdjacencies(2, surface)
            if len(up) != 1:  # inside the guide
                continue
            x0, y0, z0, x1, y1, z1 = gmsh.model.getBoundingBox(2, surface)
            flat_x, flat_z = x1 - x0 < 1e-6, z1 - z0 < 1e-6  # OCC boxes are padded by ~1e-7
            end = next((name for name, z in ends.items() if flat_z and abs(z0 - z) < 1e-6), None)
            if end is not None:
                groups[end].append(surface)
            elif flat_z or (flat_x and min(abs(x0 - w) for w in WINDOW) < 1e-6):
                groups["iris"].append(surface)  # the diaphragm's two sides, the window's edges
            else:
                groups["walls"].append(surface)  # x = 0, 1 and y = 0, 0.5
        for name, surfaces in groups.items():
            gmsh.model.addPhysicalGroup(2, surfaces, name=name)
        gmsh.model.addPhysicalGroup(3, volumes, name="guide")
        gmsh.model.mesh.generate(3)
        types, tags, _ = gmsh.model.mesh.getElements(3)
        count = sum(len(t) for t in tags)
        if list(types) != [5]:
            raise SystemExit(f"expected hexahedra only, got gmsh element types {list(types)}")
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.write(str(path))
        return count
    finally:
        gmsh.finalize()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", type=Path, default=None,
                        help="default: waveguide_iris.msh (waveguide_iris_device.msh with --device-only) here")
    parser.add_argument("--hx", type=float, default=0.125, help="element size across (x); default 0.125")
    parser.add_argument("--hz", type=float, default=0.125, help="element size along (z); default 0.125")
    parser.add_argument("--ny", type=int, default=1, help="elements in y (the fields are uniform in y); default 1")
    parser.add_argument("--hz-pml", type=float, default=0.25, help="element size along z in the layers; default 0.25")
    parser.add_argument("--device-only", action="store_true", help="the guide between the reference planes only")
    args = parser.parse_args(argv)
    if args.path is None:
        args.path = HERE / ("waveguide_iris_device.msh" if args.device_only else "waveguide_iris.msh")
    count = build(args.path, args.hx, args.hz, args.ny, args.hz_pml, args.device_only)
    print(f"{args.path}: {count} hexahedra")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
