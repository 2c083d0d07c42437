"""A short, seeded round of the mesh-file fuzzer (tests/fuzz/fuzz_meshes.py).

Every damaged gmsh or Nek5000 mesh must end as docs/case-file.md promises: exit 0 (with
summary.json) or 1/2 with one ``lobatto: error: ...`` line (status 2 naming the mesh file); no
signal (the gmsh SDK used to end some damaged files in SIGSEGV or ``double free``), no
traceback, no leaked warning, no temporary file, no timeout. A failure prints each category
with a case that shows it; reproduce one with
``python tests/fuzz/fuzz_meshes.py --seed SEED --case I --keep DIR``.

Set LOBATTO_MESH_FUZZ_SEED / LOBATTO_MESH_FUZZ_COUNT to try others; tests/fuzz/README.md
("Mesh files") explains longer rounds.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_meshes  # noqa: E402
import fuzz_quads  # noqa: E402

pytest.importorskip("gmsh")

SEED = int(os.environ.get("LOBATTO_MESH_FUZZ_SEED", "2028"))
COUNT = int(os.environ.get("LOBATTO_MESH_FUZZ_COUNT", "30"))
TIMEOUT = float(os.environ.get("LOBATTO_MESH_FUZZ_TIMEOUT", "60"))


def test_cases_are_deterministic_and_cover_every_source():
    a = fuzz_meshes.make_cases(SEED, 40)
    b = fuzz_meshes.make_cases(SEED, 40)
    assert [(c.mesh, c.case) for c in a] == [(c.mesh, c.case) for c in b]
    assert fuzz_meshes.make_cases(SEED, 1, start=7)[0].mesh == a[7].mesh
    assert len({c.source for c in a}) >= 10
    sources = fuzz_meshes.load_sources()
    assert sum(c.mesh != sources[c.source] for c in a) >= 35  # a mutation may, rarely, change nothing


def test_the_2d_sources_and_every_structural_mutation_of_them():
    """Quad meshes are in the round, and each structural edit (swapped corners, clockwise, a NaN
    corner, a mixed cell, the dimension) changes every text and .re2 quad source."""
    import random

    cases = fuzz_meshes.make_cases(SEED, 40)
    assert len({c.source for c in cases if c.source in fuzz_quads.QUAD_SOURCES}) >= 4
    sources = fuzz_meshes.load_sources()
    for name in fuzz_quads.QUAD_SOURCES:
        if not name.endswith("_bin.msh"):
            for kind in fuzz_quads.QUAD_KINDS:
                data, what = fuzz_quads.op_quad(random.Random(1), sources[name], name, kind)
                assert data != sources[name], (name, what)


def test_mesh_fuzz_round():
    start = time.perf_counter()
    results = fuzz_meshes.run_round(SEED, COUNT, timeout=TIMEOUT, jobs=2)
    print(f"{len(results)} cases in {time.perf_counter() - start:.1f} s: {fuzz_meshes.outcome_counts(results)}")
    if any(r.findings for r in results):
        pytest.fail(fuzz_meshes.format_report(results, SEED), pytrace=False)
