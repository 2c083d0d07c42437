"""Damaged mesh files never crash the process: each is one ``lobatto: error:`` line naming the
file (and the element as the file numbers it), exit 2.

The first three tests are the findings of issue 28 and run the CLI in a child process, since on
the old code the gmsh SDK killed the process (SIGSEGV, ``double free or corruption``). The rest
check lobatto.mesh.readers.msh_check and the Nek5000 readers in-process.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.errors import InputError
from lobatto.mesh.readers.msh_check import ELEMENT_TYPES, check_msh

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "data" / "fuzz_meshes"
MESHES = ROOT / "tests" / "data" / "meshes"


def run_case(tmp_path: Path, mesh_name: str, data: bytes, generator: str = "gmsh"):
    (tmp_path / mesh_name).write_bytes(data)
    (tmp_path / "case.toml").write_text(
        f'[mesh]\ngenerator = "{generator}"\nfile = "{mesh_name}"\n[discretization]\norder = 2\n'
        '[initial]\nEz = "sin(pi*x)"\n[time]\ndt = 0.001\nt_end = 0.002\n[output]\nformats = []\n')
    result = subprocess.run([sys.executable, "-m", "lobatto", "run", "case.toml", "-o", "out", "--quiet"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
    assert lines[0].startswith("lobatto: error: case.toml: ") and mesh_name in lines[0], lines[0]
    return lines[0]


def test_msh22_element_naming_the_node_past_the_last_is_an_error_not_sigsegv(tmp_path):
    text = (MESHES / "box_msh22.msh").read_text()
    assert "\n27 3 2 6 6 1 19 33 10\n" in text and "\n36\n" in text  # a zmax quadrilateral; 36 nodes
    line = run_case(tmp_path, "m.msh", text.replace("\n27 3 2 6 6 1 19 33 10\n", "\n27 3 2 6 6 1 19 33 37\n").encode())
    assert "the element (number 27 in the file) names node 37, which is not in $Nodes (36 nodes" in line


@pytest.mark.parametrize("section, word, announced", [("$Elements", 1, 4), ("$Nodes", 1, 4)])
def test_binary_msh41_count_bit_flip_is_an_error_not_a_heap_corruption(tmp_path, section, word, announced):
    data = bytearray((SOURCES / "box_msh41_bin.msh").read_bytes())
    at = data.index(section.encode() + b"\n") + len(section) + 1 + 8 * word
    assert struct.unpack_from("<Q", data, at)[0] == 12
    data[at] ^= 1 << 3  # 12 -> 4: the blocks that follow hold 12
    line = run_case(tmp_path, "m.msh", bytes(data))
    assert f"{section} announces {announced} " in line and "its blocks hold 12" in line


@pytest.mark.parametrize("name, generator", [("box_v002.re2", "nek"), ("box_msh41_bin.msh", "gmsh")])
def test_a_subnormal_coordinate_names_the_file_and_element_not_lower_upper(tmp_path, name, generator):
    data = bytearray((SOURCES / name).read_bytes())
    if generator == "nek":
        at = 84 + 8 + 8 * 8  # element 1: group, x of its 8 corners, then y of corner 1 (0.0)
    else:  # the first node of the $Nodes block with the most nodes... any node at y = 0
        start = data.index(b"$Nodes\n") + 7
        at = next(k for k in range(start, len(data) - 24, 1)
                  if struct.unpack_from("<3d", data, k) == (0.0, 0.0, 0.0))
        at += 8
    assert struct.unpack_from("<d", data, at)[0] == 0.0
    struct.pack_into("<d", data, at, 3.48e-310)
    line = run_case(tmp_path, name, bytes(data), generator)
    assert "lower/upper" not in line and "the geometric factors (" in line, line
    assert f"{name}: the geometric factors" in line and f"(number {1 if generator == 'nek' else 35} in " in line, line


def test_periodic_link_with_a_damaged_transformation_is_an_error_not_sigsegv(tmp_path):
    # found by tests/fuzz/fuzz_meshes.py (seed 3, case 81): eight bytes of the affine matrix of
    # the surface link (x = 1 onto x = 0) overwritten; the SDK crashed while reading the link
    data = bytearray((SOURCES / "periodic_msh41_bin.msh").read_bytes())
    assert data.index(b"$Periodic\n") == 3395 and len(data) == 5023
    struct.pack_into("<d", data, 4420, 1e100)
    line = run_case(tmp_path, "m.msh", bytes(data))
    assert "periodic link 6 has the affine transformation" in line and "no translation" in line, line


def test_nan_node_on_a_periodic_surface_is_an_error_not_sigsegv(tmp_path):
    data = bytearray((SOURCES / "periodic_msh41_bin.msh").read_bytes())
    struct.pack_into("<d", data, 2129, float("nan"))  # inside the coordinates of a node of $Nodes
    line = run_case(tmp_path, "m.msh", bytes(data))
    assert "coordinates must be finite numbers" in line and "(number " in line, line


# ----------------------------------------------------------------------------- msh_check
def _all_valid_meshes():
    files = sorted(SOURCES.glob("*.msh")) + sorted(MESHES.glob("*.msh")) + sorted((ROOT / "examples" / "meshes").glob("*.msh"))
    assert len(files) >= 12
    return files


def test_every_committed_msh_file_passes_the_check():
    for path in _all_valid_meshes():
        info = check_msh(path)
        assert info["version"] in ("2.2", "4.1") and info["nodes"] > 0 and info["elements"] > 0, path


def test_the_element_table_is_gmshs():
    gmsh = pytest.importorskip("gmsh")
    own = not gmsh.isInitialized()
    if own:
        gmsh.initialize(readConfigFiles=False)
    try:
        for etype in (1, 3, 4, 5, 8, 10, 12, 15, 16, 17, 36, 92, 93):  # what gmsh writes for hexahedral meshes
            dim, nodes = ELEMENT_TYPES[etype]
            _, gdim, _, gnodes, _, _ = gmsh.model.mesh.getElementProperties(etype)
            assert (gdim, gnodes) == (dim, nodes), etype
    finally:
        if own:
            gmsh.finalize()


@pytest.mark.parametrize("name", ["box_msh22.msh", "box_msh22_bin.msh", "box_msh41.msh", "box_msh41_bin.msh",
                                  "periodic_msh41_bin.msh"])
def test_every_truncation_is_refused_before_gmsh_reads_it(tmp_path, name):
    data = (SOURCES / name).read_bytes()
    path = tmp_path / name
    end = len(data.rstrip())
    for cut in sorted(set(range(0, end, max(1, end // 150))) | set(range(max(0, end - 40), end))):
        path.write_bytes(data[:cut])
        with pytest.raises(InputError) as info:
            check_msh(path)
        assert str(info.value).startswith(str(path)), (cut, str(info.value))


def _edit(tmp_path, name, old: bytes, new: bytes, count=1) -> Path:
    data = (SOURCES / name).read_bytes()
    assert old in data, old
    path = tmp_path / name
    path.write_bytes(data.replace(old, new, count))
    return path


@pytest.mark.parametrize("old, new, message", [
    (b'2 1 "xmin"', b'7 1 "xmin"', "physical name 'xmin' has dimension 7"),
    (b'2 1 "xmin"', b'2 1 "xm\xe9in"', "is not UTF-8 text"),
    (b"$Nodes\n", b"$NodesX\n", "$NodesX (byte"),
    (b"$Elements\n", b"$NodeData\n", "post-processing data"),
    (b"$PhysicalNames\n7\n", b"$PhysicalNames\n8\n", "announces 8 names"),
])
def test_header_and_name_damage(tmp_path, old, new, message):
    for name in ("box_msh22.msh", "box_msh41_bin.msh"):
        path = _edit(tmp_path, name, old, new)
        with pytest.raises(InputError, match=None) as info:
            check_msh(path)
        assert message in str(info.value) and str(info.value).startswith(str(path)), str(info.value)


def test_binary_msh22_unknown_element_type_is_refused(tmp_path):
    # gmsh leaves a null element for an unknown type in a binary MSH 2.2 file and dereferences it
    data = bytearray((SOURCES / "box_msh22_bin.msh").read_bytes())
    at = data.index(b"$Elements\n") + len(b"$Elements\n")
    at = data.index(b"\n", at) + 1  # past the count line: the first block header (type, count, tags)
    etype, count, ntags = struct.unpack_from("<3i", data, at)
    assert etype in ELEMENT_TYPES and ntags == 2
    struct.pack_into("<i", data, at, 77)
    path = tmp_path / "m.msh"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"m\.msh: damaged MSH file: .* element type 77"):
        check_msh(path)


def test_msh41_ascii_element_naming_a_missing_node(tmp_path):
    data = (SOURCES / "box_msh41.msh").read_text().splitlines()
    start = data.index("$Elements")
    row = next(i for i in range(len(data) - 1, start, -1) if len(data[i].split()) == 9)  # a hexahedron line
    tag = data[row].split()[0]
    data[row] = " ".join(data[row].split()[:-1] + ["13"])
    path = tmp_path / "m.msh"
    path.write_text("\n".join(data) + "\n")
    with pytest.raises(InputError, match=rf"the element \(number {tag} in the file\) names node 13, which is not"):
        check_msh(path)


# ----------------------------------------------------------------------------- Nek5000
def _read_nek(path):
    from lobatto.mesh.readers import mesh_from_file

    return mesh_from_file("nek", path, 2)


def test_re2_counts_and_groups_that_are_no_numbers(tmp_path):
    import warnings

    data = bytearray((SOURCES / "box_v002.re2").read_bytes())
    count_at = 84 + 2 * (8 + 24 * 8)  # after the two elements: the number of curved sides (float64)
    assert struct.unpack_from("<d", data, count_at)[0] == 0.0
    for value, where in ((float("nan"), count_at), (float("inf"), count_at), (1e300, 84)):
        bad = bytearray(data)
        struct.pack_into("<d", bad, where, value)
        path = tmp_path / "m.re2"
        path.write_bytes(bytes(bad))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no RuntimeWarning on the way
            with pytest.raises(InputError) as info:
                _read_nek(path)
        assert str(info.value).startswith(str(path)), str(info.value)


def test_rea_element_count_that_is_infinite_or_huge(tmp_path):
    text = (SOURCES / "box.rea").read_text()
    line = next(ln for ln in text.splitlines() if "NEL,NDIM,NELV" in ln)
    for nel in ("inf", "100000000000"):
        path = tmp_path / "m.rea"
        path.write_text(text.replace(line, f"  {nel}  3  {nel}  NEL,NDIM,NELV"))
        with pytest.raises(InputError) as info:
            _read_nek(path)
        assert str(info.value).startswith(str(path)), str(info.value)


def test_periodic_partner_values_that_are_nan(tmp_path):
    data = bytearray((SOURCES / "periodic_v002.re2").read_bytes())
    record = np.dtype([("element", "<f8"), ("side", "<f8"), ("values", "<f8", (5,)), ("code", "S8")])
    start = 84 + 2 * (8 + 24 * 8) + 8 + 8  # past the elements, no curves, the number of records
    records = np.frombuffer(bytes(data), record, offset=start)
    # the second 'P' record's partner is nan: the first one's check reads it back
    i = int(np.flatnonzero(records["code"] == b"P".ljust(8))[-1])
    struct.pack_into("<d", data, start + i * record.itemsize + 16, float("nan"))
    path = tmp_path / "m.re2"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"m\.re2: element \d face \d \(Nek numbering\) is periodic"):
        _read_nek(path)


def test_geometric_factor_range_names_the_element_for_box_and_file_meshes():
    from lobatto.backends import get_backend
    from lobatto.mesh import box_mesh, compute_geometry
    from lobatto.mesh.readers import mesh_from_file
    from lobatto.systems.dg import check_representable

    backend = get_backend("cpu", precision="float32")
    box = box_mesh((2, 1, 1), lower=(0.0, 0.0, 0.0), upper=(2e-20, 1e-20, 1e-20))  # mass ~1e-60 < float32's tiny
    with pytest.raises(InputError, match=r"^\[mesh\] the geometric factors \(\w+\) range from .* on element 0 \(box "
                                         r"index 0,0,0\).*float32 holds: rescale \[mesh\] lower/upper or use \[backend\] "
                                         r"precision = \"float64\""):
        check_representable(compute_geometry(box, 2), backend, box)
    path = SOURCES / "box_msh41.msh"
    mesh = mesh_from_file("gmsh", path, 2)
    mesh.vertices[:] *= 1e-20
    if mesh.curved_nodes is not None:
        mesh.curved_nodes[:] *= 1e-20
    with pytest.raises(InputError) as info:
        check_representable(compute_geometry(mesh, 2), backend, mesh)
    message = str(info.value)
    assert message.startswith(f"{path}: the geometric factors") and "(number " in message, message
    assert "lower/upper" not in message and "node coordinates" in message, message


@pytest.mark.parametrize("name", ["box_msh22.msh", "box_msh22_bin.msh", "box_msh41.msh", "box_msh41_bin.msh"])
@pytest.mark.parametrize("value", [1e101, float("nan")])
def test_a_node_beyond_max_extent_is_refused_by_msh_check_in_every_format(tmp_path, name, value):
    # gmsh.py reads node coordinates only after msh_check: this check is the only one, in
    # ASCII and binary MSH 2.2 and 4.1 alike, and it names the file and the element
    pytest.importorskip("gmsh")
    from lobatto.mesh.readers.gmsh import read

    data = bytearray((SOURCES / name).read_bytes())
    start = data.index(b"$Nodes\n") + 7
    if name == "box_msh22_bin.msh":  # records of an int tag and 3 doubles after the count's line
        first = data.index(b"\n", start) + 1
        at = next(at for at in (first + 28 * k + 4 for k in range(12))
                  if struct.unpack_from("<3d", data, at) == (0.0,) * 3)
        struct.pack_into("<d", data, at, value)
    elif name.endswith("_bin.msh"):  # 4 size_t, then blocks: 3 ints, a size_t count, the tags, the xyz
        blocks, at, found = struct.unpack_from("<Q", data, start)[0], start + 32, []
        for _ in range(blocks):
            count = struct.unpack_from("<Q", data, at + 12)[0]
            xyz = at + 20 + 8 * count
            found += [xyz + 24 * k for k in range(count) if struct.unpack_from("<3d", data, xyz + 24 * k) == (0.0,) * 3]
            at = xyz + 24 * count
        struct.pack_into("<d", data, found[0], value)
    else:  # the line of the node at the origin ("2 0 0 0" in MSH 2.2, "0 0 0" in 4.1)
        end = data.index(b"$EndNodes")
        lines = data[start:end].split(b"\n")
        i = next(k for k, line in enumerate(lines) if line.split()[-3:] == [b"0", b"0", b"0"] and k > 0)
        parts = lines[i].split()
        parts[-3] = repr(value).encode()
        lines[i] = b" ".join(parts)
        data[start:end] = b"\n".join(lines)
    path = tmp_path / name
    path.write_bytes(bytes(data))
    with pytest.raises(InputError) as info:
        read(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "coordinates must be finite numbers within 1e+" in message, message
    assert "(number " in message and ("nan" in message or "1e+101" in message), message
