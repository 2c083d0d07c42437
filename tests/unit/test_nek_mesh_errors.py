"""Bad Nek5000 mesh files: each is an InputError that names the file and what is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lobatto.errors import InputError
from lobatto.mesh.readers import nek5000
from nek_mesh_writer import box_corners, write_re2, write_rea

DATA = Path(__file__).resolve().parent.parent / "data" / "nek"


def small_box(tmp_path, *, curves=(), bcs=None, name="m.re2", **kw):
    corners, _ = box_corners(2, 1, 1)
    if bcs is None:
        bcs = [(e, f, "W", np.zeros(5)) for e in (1, 2) for f in range(1, 7) if (e, f) not in ((1, 2), (2, 4))]
    path = tmp_path / name
    (write_re2 if name.endswith(".re2") else write_rea)(path, corners, curves=curves, bcs=bcs, **kw)
    return path


def expect_error(path, *words, order=3):
    with pytest.raises(InputError) as info:
        nek5000.read(path, order)
    message = str(info.value)
    assert message.startswith(str(path)), message
    for word in words:
        assert word in message, message
    return message


def test_small_box_reads(tmp_path):
    mesh = nek5000.read(small_box(tmp_path), 2)
    assert mesh.num_elements == 2 and len(mesh.boundary_faces["W"]) == 10


@pytest.mark.parametrize("cut", [10, 90, 84 + 200 + 50, 84 + 400 + 4, -20])
def test_truncated_re2(tmp_path, cut):
    path = small_box(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    expect_error(path, "truncated")


def test_unknown_header_version(tmp_path):
    path = small_box(tmp_path)
    data = bytearray(path.read_bytes())
    data[:5] = b"#v009"
    path.write_bytes(bytes(data))
    expect_error(path, "unknown .re2 header version '#v009'")


def test_bad_endian_word(tmp_path):
    path = small_box(tmp_path)
    data = bytearray(path.read_bytes())
    data[80:84] = np.array([1.0], dtype="<f4").tobytes()
    path.write_bytes(bytes(data))
    expect_error(path, "test value 6.54321")


def test_element_count_mismatch_between_rea_and_re2(tmp_path):
    small_box(tmp_path, name="m.re2")
    corners, _ = box_corners(3, 1, 1)
    write_rea(tmp_path / "m.rea", corners, mesh_in_re2=True)
    expect_error(tmp_path / "m.rea", "element count mismatch", "3 elements", "holds 2")


def test_rea_pointing_to_a_missing_re2(tmp_path):
    corners, _ = box_corners(1, 1, 1)
    write_rea(tmp_path / "lonely.rea", corners, mesh_in_re2=True)
    expect_error(tmp_path / "lonely.rea", "lonely.re2")


def test_rea_with_fewer_elements_than_announced(tmp_path):
    path = small_box(tmp_path, name="m.rea")
    text = path.read_text().replace("           2  3           2", "           5  3           5")
    path.write_text(text)
    expect_error(path, "element")


def test_unknown_curve_type_names_element_and_edge(tmp_path):
    path = small_box(tmp_path, curves=[(2, 7, [1, 0, 0, 0, 0], "e")])
    expect_error(path, "element 2 edge 7", "'e'", "not supported")


def test_unknown_curve_type_in_rea(tmp_path):
    path = small_box(tmp_path, curves=[(1, 3, [1, 0, 0, 0, 0], "S")], name="m.rea")
    expect_error(path, "element 1 edge 3", "'S'")


def test_circle_on_a_vertical_edge(tmp_path):
    path = small_box(tmp_path, curves=[(1, 10, [2, 0, 0, 0, 0], "C")])
    expect_error(path, "element 1 edge 10", "edges 1-8")


def test_circle_radius_too_small(tmp_path):
    path = small_box(tmp_path, curves=[(2, 1, [0.2, 0, 0, 0, 0], "C")])
    expect_error(path, "element 2 edge 1", "too small")


def test_sphere_face_whose_corners_are_off_the_sphere(tmp_path):
    path = small_box(tmp_path, curves=[(1, 6, [0, 0, 0, 5.0, 0], "s")])
    expect_error(path, "element 1 face 6", "not on the sphere")


def test_periodic_face_without_a_valid_partner(tmp_path):
    bcs = [(1, 5, "P", [9, 6, 0, 0, 0])]
    expect_error(small_box(tmp_path, bcs=bcs), "element 1 face 5", "partner element 9")


def test_periodic_face_whose_partner_does_not_point_back(tmp_path):
    bcs = [(1, 5, "P", [1, 6, 0, 0, 0]), (1, 6, "W", np.zeros(5))]
    expect_error(small_box(tmp_path, bcs=bcs), "element 1 face 5", "not 'P' back")


def test_boundary_record_for_a_missing_element(tmp_path):
    expect_error(small_box(tmp_path, bcs=[(7, 1, "W", np.zeros(5))]), "element 7 face 1")


def test_rea_boundary_line_out_of_place(tmp_path):
    path = small_box(tmp_path, name="m.rea")
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(" W    1  3"))
    lines[at] = lines[at].replace(" W    1  3", " W    2  3")
    path.write_text("\n".join(lines) + "\n")
    expect_error(path, f"{path}:{at + 1}", "element 1 face 3")


def test_two_dimensional_mesh(tmp_path):
    path = small_box(tmp_path)
    data = bytearray(path.read_bytes())
    data[14:17] = b"  2"
    path.write_bytes(bytes(data))
    expect_error(path, "2-D")


def test_solid_elements_are_refused(tmp_path):
    path = small_box(tmp_path)
    data = bytearray(path.read_bytes())
    data[17:26] = b"        1"
    path.write_bytes(bytes(data))
    expect_error(path, "NELV = 1")


def test_not_a_nek_file(tmp_path):
    (tmp_path / "m.msh").write_text("$MeshFormat\n")
    expect_error(tmp_path / "m.msh", ".re2 or .rea")
    expect_error(tmp_path / "absent.re2", "no such file")


def test_rea_without_mesh_section(tmp_path):
    (tmp_path / "m.rea").write_text(" ****** PARAMETERS *****\n   2.61 NEKTON VERSION\n")
    expect_error(tmp_path / "m.rea", "MESH DATA")
