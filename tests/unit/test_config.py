"""Case-file schema: defaults, round trips and error messages."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.api import load_case, parse_case
from lobatto.config import Expression
from lobatto.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MINIMAL = {"mesh": {"elements": [2, 3, 4]}, "time": {"t_end": 0.5}}


def full_case(rng) -> dict:
    """A case that sets every key, with random values."""
    ex, ey, ez = (int(v) for v in rng.integers(1, 9, size=3))
    lower = [float(v) for v in rng.uniform(-2, 0, size=3)]
    upper = [lo + float(w) for lo, w in zip(lower, rng.uniform(0.5, 3, size=3))]
    a = float(rng.uniform(0.01, 0.1))
    return {
        "mesh": {
            "generator": "box",
            "elements": [ex, ey, ez],
            "lower": lower,
            "upper": upper,
            "periodic": [True, False, False],
            "boundary": "pmc",
            "boundaries": {"ymin": "absorbing", "zmax": "pec"},
            "deform": {"z": f"{a}*sin(pi*x)*sin(pi*y)"},
        },
        "discretization": {"order": int(rng.integers(1, 25)), "flux": "central"},
        "physics": {"equations": "maxwell", "epsilon": float(rng.uniform(1, 4)), "mu": 1},
        "initial": {"Ex": "cos(2*pi*x)", "Hz": f"{a}*exp(-((x-0.5)**2))"},
        "exact": {"Ey": "sin(x - t)"},
        "time": {"integrator": "ssprk3", "t_end": float(rng.uniform(0.1, 2)), "cfl": 0.3,
                 "dt": float(rng.uniform(1e-4, 1e-2))},
        "output": {"every": int(rng.integers(0, 50)), "formats": ["nek", "hdf5"], "name": "run-1"},
        "backend": {"name": "auto", "precision": "float32"},
        "parallel": {"exchange": "host", "method": "crystal_router", "partitioner": "metis",
                     "overlap": [True, False, "auto"][int(rng.integers(0, 3))]},
    }


@pytest.fixture
def rng():
    return np.random.default_rng()


def error_of(data, source="cavity.toml") -> str:
    with pytest.raises(InputError) as info:
        parse_case(data, source=source)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(source + ": "), msg
    return msg


def with_(base: dict, path: str, value) -> dict:
    data = copy.deepcopy(base)
    *parents, last = path.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return data


# ------------------------------------------------------------------------ defaults
def test_defaults_filled():
    case = parse_case(MINIMAL, source="min.toml")
    assert case.name == "min" and case.source == "min.toml"
    m = case.mesh
    assert m.generator == "box"
    assert m.elements == (2, 3, 4) and m.num_elements == 24
    assert m.lower == (0.0, 0.0, 0.0) and m.upper == (1.0, 1.0, 1.0)
    assert m.periodic == (False, False, False)
    assert m.boundary == "pec"
    assert m.boundaries == {s: "pec" for s in ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")}
    assert m.deform == {}
    assert case.discretization.order == 7 and case.discretization.flux == "upwind"
    assert case.physics.equations == "maxwell"
    assert case.physics.epsilon == 1.0 and case.physics.mu == 1.0
    assert set(case.initial.fields) == {"Ex", "Ey", "Ez", "Hx", "Hy", "Hz"}
    assert case.initial.given == ()
    assert case.exact.fields is None and not case.exact
    assert case.time.integrator == "lsrk45"
    assert case.time.t_end == 0.5 and case.time.cfl == 0.5 and case.time.dt is None
    assert case.output.every == 0 and case.output.formats == ("hdf5",) and case.output.name == "min"
    assert case.backend.name == "cpu" and case.backend.precision == "float64"
    assert case.parallel.exchange == "auto" and case.parallel.method == "auto"
    assert case.parallel.partitioner == "rcb" and case.parallel.overlap == "auto"

    d = case.to_dict()
    assert d["time"] == {"integrator": "lsrk45", "t_end": 0.5, "cfl": 0.5, "cfl_check": True}  # dt absent: computed
    assert d["output"]["name"] == "min"
    assert "exact" not in d


def test_missing_components_are_zero(rng):
    case = parse_case(with_(MINIMAL, "initial", {"Ez": "x*y"}), source="a.toml")
    x = rng.random((2, 3))
    for name, expr in case.initial.fields.items():
        assert isinstance(expr, Expression)
        val = expr.evaluate(np, x=x, y=x, z=x, t=0.0)
        assert val.shape == x.shape
        if name == "Ez":
            np.testing.assert_allclose(val, x * x)
        else:
            assert np.all(val == 0.0)
    assert case.initial.given == ("Ez",)


def test_full_case_round_trips(rng, tmp_path):
    data = full_case(rng)
    case = parse_case(data, source="full.toml")
    assert case.mesh.boundaries == {
        "xmin": "periodic", "xmax": "periodic", "ymin": "absorbing",
        "ymax": "pmc", "zmin": "pmc", "zmax": "pec",
    }
    assert case.time.dt == data["time"]["dt"]
    assert case.exact.given == ("Ey",)
    assert set(case.mesh.deform) == {"z"}
    assert case.mesh.deform["z"].variables_used == ("x", "y")

    text = case.to_toml()
    again = parse_case(tomllib.loads(text), source="full.toml")
    assert again.to_dict() == case.to_dict()
    assert again.to_toml() == text
    # Values are exactly preserved (floats written with repr).
    assert again.mesh.lower == tuple(data["mesh"]["lower"])
    assert again.time.t_end == data["time"]["t_end"]

    path = tmp_path / "written.toml"
    path.write_text(text)
    assert load_case(path).to_dict() == case.to_dict()


@pytest.mark.parametrize("name", ["cavity.toml", "cavity_curved.toml", "plane_wave.toml"])
def test_examples_load_and_round_trip(name):
    case = load_case(EXAMPLES / name)
    assert case.name == name[:-5]
    again = parse_case(tomllib.loads(case.to_toml()), source=name)
    assert again.to_dict() == case.to_dict()


def test_cavity_example_contents():
    case = load_case(EXAMPLES / "cavity.toml")
    assert case.mesh.elements == (4, 4, 4)
    assert case.discretization.order == 7 and case.discretization.flux == "upwind"
    assert case.time.integrator == "lsrk45" and case.time.t_end == 1.0 and case.time.cfl == 0.5
    assert case.output.every == 100 and case.output.formats == ("hdf5", "nek")
    assert case.initial.given == ("Ez",)
    assert case.exact.given == ("Ez", "Hx", "Hy")
    curved = load_case(EXAMPLES / "cavity_curved.toml")
    assert set(curved.mesh.deform) == {"x", "y"}
    # The deformation vanishes on the boundary of the unit cube.
    g = np.linspace(0, 1, 5)
    X, Y, Z = np.meshgrid(g, g, g, indexing="ij")
    on_face = (X == 0) | (X == 1) | (Y == 0) | (Y == 1) | (Z == 0) | (Z == 1)
    for expr in curved.mesh.deform.values():
        assert np.max(np.abs(expr.evaluate(np, x=X, y=Y, z=Z)[on_face])) < 1e-15


def test_plane_wave_is_a_solution():
    """Ey = Hz = f(x - t) solves eps dE/dt = curl H, mu dH/dt = -curl E (c = 1)."""
    case = load_case(EXAMPLES / "plane_wave.toml")
    assert case.mesh.periodic == (True, True, True)
    ey, hz = case.exact.fields["Ey"], case.exact.fields["Hz"]
    x = np.random.default_rng().random(20)
    t, h = 0.3, 1e-6
    dEy_dt = (ey.evaluate(np, x=x, t=t + h) - ey.evaluate(np, x=x, t=t - h)) / (2 * h)
    dHz_dx = (hz.evaluate(np, x=x + h, t=t) - hz.evaluate(np, x=x - h, t=t)) / (2 * h)
    dHz_dt = (hz.evaluate(np, x=x, t=t + h) - hz.evaluate(np, x=x, t=t - h)) / (2 * h)
    dEy_dx = (ey.evaluate(np, x=x + h, t=t) - ey.evaluate(np, x=x - h, t=t)) / (2 * h)
    np.testing.assert_allclose(dEy_dt, -dHz_dx, atol=1e-6)  # (curl H)_y = -dHz/dx
    np.testing.assert_allclose(dHz_dt, -dEy_dx, atol=1e-6)  # -(curl E)_z = -dEy/dx
    assert ey.evaluate(np, x=x, y=x, z=x, t=t).shape == x.shape


# -------------------------------------------------------------------------- errors
def test_unknown_section_suggests_nearest():
    msg = error_of(with_(MINIMAL, "discretisation", {"order": 3}))
    assert "unknown key 'discretisation'" in msg
    assert "did you mean 'discretization'?" in msg


def test_unknown_key_in_section_suggests_nearest():
    msg = error_of(with_(MINIMAL, "time.ctl", 0.3))
    assert "unknown key 'time.ctl'" in msg and "'time.cfl'" in msg
    msg = error_of(with_(MINIMAL, "mesh.element", [1, 1, 1]))
    assert "'mesh.element'" in msg and "did you mean 'mesh.elements'?" in msg
    msg = error_of(with_(MINIMAL, "initial.ez", "x"))
    assert "did you mean 'initial.Ez'?" in msg


def test_misplaced_key_points_to_its_section():
    msg = error_of(with_(MINIMAL, "order", 3))
    assert "unknown key 'order'" in msg and "discretization.order" in msg


def test_unknown_key_without_close_match_lists_valid_keys():
    msg = error_of(with_(MINIMAL, "physics.zzzzqqq", 1))
    assert "zzzzqqq" in msg and "equations, epsilon, mu" in msg


@pytest.mark.parametrize(
    "path, value, expected",
    [
        ("time.cfl", "fast", '[time] cfl must be a positive number, got "fast"'),
        ("time.cfl", -0.5, "[time] cfl must be a positive number, got -0.5"),
        ("time.t_end", 0, "[time] t_end must be a positive number, got 0"),
        ("time.t_end", float("nan"), "[time] t_end must be a positive number, got nan"),
        ("time.dt", True, "[time] dt must be a positive number, got true"),
        ("discretization.order", 3.0, "[discretization] order must be an integer from 1 to 24, got 3.0"),
        ("discretization.order", "7", '[discretization] order must be an integer from 1 to 24, got "7"'),
        ("mesh.elements", [4], "[mesh] elements must be a list of 2 or 3 positive integers, got [4]"),
        ("mesh.elements", [4, 0, 4], "[mesh] elements must be a list of 2 or 3 positive integers"),
        ("mesh.elements", [4, 4.0, 4], "[mesh] elements must be a list of 2 or 3 positive integers"),
        ("mesh.lower", [0, "a", 0], "[mesh] lower must be a list of 3 finite numbers"),
        ("mesh.periodic", [1, 0, 0], "[mesh] periodic must be a list of 3 booleans"),
        ("mesh.boundary", "PEC", '[mesh] boundary must be one of "pec", "pmc", "absorbing", got "PEC"'),
        ("mesh.generator", "sphere", '[mesh] generator must be one of "box", "gmsh", "nek"'),
        ("discretization.flux", "upwnd", 'did you mean "upwind"?'),
        ("physics.epsilon", "1", "[physics] epsilon must be a positive number"),
        ("physics.equations", "euler", '[physics] equations must be one of "maxwell", "acoustics"'),
        ("time.integrator", "rk3", "[time] integrator must be one of"),
        ("output.every", -1, "[output] every must be an integer >= 0, got -1"),
        ("output.formats", "hdf5", "[output] formats must be a list"),
        ("output.formats", ["vtu"], 'unknown format "vtu" (did you mean "vtk"?)'),
        ("output.name", "../x", "[output] name must be a file-name stem"),
        ("backend.name", "gpu", "[backend] name must be one of"),
        ("backend.precision", "float16", "[backend] precision must be one of"),
        ("parallel.exchange", "mpi", "[parallel] exchange must be one of"),
        ("parallel.method", "tree", "[parallel] method must be one of"),
        ("parallel.partitioner", "scotch", "[parallel] partitioner must be one of"),
        ("parallel.overlap", "yes", '[parallel] overlap must be true, false or "auto", got "yes"'),
        ("parallel.overlap", 1, '[parallel] overlap must be true, false or "auto", got 1'),
        ("initial.Ez", [1], "[initial] Ez must be an expression string"),
        ("mesh.deform", "x", "[mesh.deform] must be a table"),
        ("physics", 3, "[physics] must be a table"),
    ],
)
def test_wrong_types_and_values(path, value, expected):
    msg = error_of(with_(MINIMAL, path, value))
    assert expected in msg, msg


@pytest.mark.parametrize("order", [0, 25, -3, 100])
def test_order_out_of_range(order):
    msg = error_of(with_(MINIMAL, "discretization.order", order))
    assert f"[discretization] order must be an integer from 1 to 24, got {order}" in msg


@pytest.mark.parametrize("order", [1, 24])
def test_order_limits_accepted(order):
    assert parse_case(with_(MINIMAL, "discretization.order", order)).discretization.order == order


def test_required_keys():
    assert "[mesh] elements is required" in error_of({"mesh": {}, "time": {"t_end": 1.0}})
    assert "missing required section [mesh]" in error_of({"time": {"t_end": 1.0}})
    assert "missing required section [time]" in error_of({"mesh": {"elements": [1, 1, 1]}})
    assert "[time] t_end is required" in error_of({"mesh": {"elements": [1, 1, 1]}, "time": {}})


def test_upper_must_exceed_lower(rng):
    lo = [float(v) for v in rng.uniform(0, 1, size=3)]
    up = [v + 1 for v in lo]
    up[1] = lo[1]
    data = with_(with_(MINIMAL, "mesh.lower", lo), "mesh.upper", up)
    msg = error_of(data)
    assert "[mesh] upper must be greater than lower" in msg and "y axis" in msg


@pytest.mark.parametrize("axis, side", [(0, "xmin"), (0, "xmax"), (1, "ymax"), (2, "zmin")])
def test_boundaries_on_periodic_axis_rejected(axis, side):
    periodic = [False, False, False]
    periodic[axis] = True
    data = with_(with_(MINIMAL, "mesh.periodic", periodic), f"mesh.boundaries.{side}", "pec")
    msg = error_of(data)
    assert f"[mesh.boundaries] {side} is set but the {'xyz'[axis]} axis is periodic" in msg


def test_boundary_override_values_checked():
    msg = error_of(with_(MINIMAL, "mesh.boundaries.xmin", "open"))
    assert '[mesh.boundaries] xmin must be one of "pec", "pmc", "absorbing", got "open"' in msg
    msg = error_of(with_(MINIMAL, "mesh.boundaries.xlow", "pec"))
    assert "unknown key 'mesh.boundaries.xlow'" in msg


def test_bad_expression_fails_at_load_time():
    msg = error_of(with_(MINIMAL, "initial.Ez", "sinn(pi*x)"))
    assert msg.startswith("cavity.toml: [initial] Ez: unknown function 'sinn'")
    msg = error_of(with_(MINIMAL, "exact.Hx", "x^2"))
    assert msg.startswith("cavity.toml: [exact] Hx: ") and "**" in msg
    msg = error_of(with_(MINIMAL, "mesh.deform.x", "0.1*t"))
    assert msg.startswith("cavity.toml: [mesh.deform] x: unknown name 't'")


def test_numbers_accepted_as_expressions():
    case = parse_case(with_(MINIMAL, "initial.Ex", 2))
    assert case.initial.fields["Ex"].text == "2"
    x = np.random.default_rng().random(3)
    assert np.all(case.initial.fields["Ex"].evaluate(np, x=x, y=x, z=x, t=0.0) == 2.0)


def test_dt_overrides_but_cfl_is_kept(rng):
    dt = float(rng.uniform(1e-4, 1e-2))
    case = parse_case(with_(MINIMAL, "time.dt", dt))
    assert case.time.dt == dt and case.time.cfl == 0.5
    assert case.to_dict()["time"]["dt"] == dt


def test_output_name_defaults_to_sanitized_stem():
    assert parse_case(MINIMAL, source="dir/my case.toml").output.name == "my_case"
    assert parse_case(MINIMAL, source="dir/my case.toml").name == "my case"
    assert parse_case(MINIMAL).name == "case"


def test_load_case_errors(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(InputError, match="nope.toml: no such case file"):
        load_case(missing)
    bad = tmp_path / "bad.toml"
    bad.write_text('[mesh]\nelements = [4, 4, 4]\n\n[time]\nt_end = = 1.0\n')
    with pytest.raises(InputError) as info:
        load_case(bad)
    msg = str(info.value)
    assert msg.startswith(f"{bad}: line 5") and "invalid TOML" in msg and "\n" not in msg
    unterminated = tmp_path / "unterminated.toml"
    unterminated.write_text('[mesh]\nelements = [4, 4, 4\n')
    with pytest.raises(InputError, match=r"unterminated.toml: line \d+"):
        load_case(unterminated)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"[mesh]\nelements = [1,1,1]\n\xff\xfe\n")
    with pytest.raises(InputError, match="line 3: not valid UTF-8"):
        load_case(binary)
    with pytest.raises(InputError, match="is a directory"):
        load_case(tmp_path)


def test_load_case_names_file_in_value_errors(tmp_path):
    path = tmp_path / "cavity.toml"
    path.write_text('[mesh]\nelements = [4, 4, 4]\n[time]\nt_end = 1.0\ncfl = "fast"\n')
    with pytest.raises(InputError) as info:
        load_case(path)
    assert str(info.value) == f'{path}: [time] cfl must be a positive number, got "fast"'


def test_case_is_frozen():
    from dataclasses import FrozenInstanceError

    case = parse_case(MINIMAL)
    with pytest.raises(FrozenInstanceError):
        case.time.t_end = 3.0  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        case.mesh = None  # type: ignore[misc]


def test_toml_emitter_escapes_strings():
    from lobatto.config import to_toml

    data = {"a": {"s": 'q"uo\\te\n\tx\x01', "f": [1.5, -2.0, 1e-300], "b": [True, False], "i": -3},
            "b": {"c": {"d": 1}}}
    assert tomllib.loads(to_toml(data)) == data
