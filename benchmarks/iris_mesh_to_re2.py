"""Write the iris example's mesh (refined r times) as a Nek5000 .re2 file, for machines without the
gmsh SDK (the GPU image lacks its libGLU): the same hexahedra, every boundary face coded "PEC".

    python benchmarks/iris_mesh_to_re2.py --refine 2 iris_r2.re2     # needs gmsh (pip install gmsh)
    python benchmarks/waveguide_iris.py --mesh-file iris_r2.re2 --backend cuda --orders 6 --t-end 120

The corners are read back with lobatto's Nek reader and compared with the gmsh mesh's (exit 1 if they
differ). The writer is the tests' independent one (tests/nek_mesh_writer.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from nek_mesh_writer import write_re2  # noqa: E402

from lobatto.mesh.readers import mesh_from_file  # noqa: E402
from lobatto.mesh.readers.nek5000_curves import NEK_CORNER_TO_LEX, NEK_FACE_TO_LOBATTO  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refine", type=int, default=1, help="element sizes divided by this")
    parser.add_argument("output", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        msh = ROOT / "examples" / "meshes" / "waveguide_iris.msh"
        if args.refine > 1:
            spec = importlib.util.spec_from_file_location("iris_mesh", ROOT / "examples" / "meshes" / "waveguide_iris.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            msh = Path(tmp) / "iris.msh"
            h = 0.125 / args.refine
            module.build(msh, h, h, 1, 0.25 / args.refine)
        mesh = mesh_from_file("gmsh", msh, 1)
    corners = mesh.vertices[mesh.element_vertices][:, list(NEK_CORNER_TO_LEX)]
    nek_face = {lobatto: nek for nek, lobatto in enumerate(NEK_FACE_TO_LOBATTO)}
    bcs = [(e + 1, nek_face[f] + 1, "PEC", np.zeros(5)) for e, f in zip(*np.nonzero(mesh.face_neighbour < 0))]
    write_re2(args.output, corners, bcs=bcs)
    back = mesh_from_file("nek", args.output, 1)
    same = np.array_equal(np.sort(back.vertices[back.element_vertices].reshape(-1, 24), axis=0),
                          np.sort(mesh.vertices[mesh.element_vertices].reshape(-1, 24), axis=0))
    print(f"{args.output}: {mesh.num_elements} hexahedra, {len(bcs)} PEC faces, read back {'equal' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
