"""The safe expression parser: correct values, broadcasting, and rejection of
everything outside the whitelist."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

from lobatto.config.expressions import FUNCTIONS, Expression, compile_expression
from lobatto.errors import InputError


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_every_function_matches_numpy(rng):
    x = rng.uniform(0.1, 2.0, size=(3, 4, 5))
    y = rng.uniform(0.1, 2.0, size=(3, 4, 5))
    z = rng.uniform(-1.0, 1.0, size=(3, 4, 5))
    t = float(rng.uniform(0.0, 1.0))
    text = (
        "sin(x) + cos(y)*tan(z/2) - exp(-x*t) + log(y) * sqrt(x) + abs(z)"
        " + tanh(x - y) + sinh(z) / cosh(y) + arctan2(y, z) + x**2 - 3/y + +z - -x"
        " + where(z < 0.2, x, y) + min(x, y) - max(y, 2*z)"
    )
    expr = compile_expression(text)
    got = expr.evaluate(np, x=x, y=y, z=z, t=t)
    want = (
        np.sin(x) + np.cos(y) * np.tan(z / 2) - np.exp(-x * t) + np.log(y) * np.sqrt(x)
        + np.abs(z) + np.tanh(x - y) + np.sinh(z) / np.cosh(y) + np.arctan2(y, z)
        + x**2 - 3 / y + z + x
        + np.where(z < 0.2, x, y) + np.minimum(x, y) - np.maximum(y, 2 * z)
    )
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert got.shape == x.shape and got.dtype == np.float64
    assert set(expr.variables_used) == {"x", "y", "z", "t"}
    used = {name for name in FUNCTIONS if name + "(" in text}
    assert used == set(FUNCTIONS), "the formula must exercise every allowed function"


def test_constants_and_precedence(rng):
    x = rng.uniform(-1, 1, size=7)
    e = compile_expression("pi*x + e - 2**3**2 + (1 + 2) * 3 - -2**2", where="t")
    np.testing.assert_allclose(
        e.evaluate(np, x=x), math.pi * x + math.e - 2**9 + 9 - -(2**2), rtol=1e-14
    )
    assert e.variables_used == ("x",)


def test_cavity_mode(rng):
    x, y = rng.random(10), rng.random(10)
    t = float(rng.random())
    e = compile_expression("sin(pi*x)*sin(pi*y)*cos(sqrt(2)*pi*t)")
    np.testing.assert_allclose(
        e.evaluate(np, x=x, y=y, z=x, t=t),
        np.sin(np.pi * x) * np.sin(np.pi * y) * np.cos(np.sqrt(2) * np.pi * t),
        rtol=1e-14,
    )


def test_constant_expression_broadcasts(rng):
    shape = tuple(int(s) for s in rng.integers(2, 5, size=3))
    x = rng.random(shape)
    for text, value in [("1.0", 1.0), ("2*pi", 2 * math.pi), ("sqrt(2)/2", math.sqrt(2) / 2)]:
        out = compile_expression(text).evaluate(np, x=x, y=x, z=x, t=0.0)
        assert out.shape == shape
        assert np.all(out == value)
        out[...] = -1.0  # writable, not a broadcast view
    assert compile_expression("1.0").is_constant


def test_partial_variables_broadcast(rng):
    # The expression uses only x, but the result has the shape of all inputs.
    x = rng.random((4, 1, 1))
    y = rng.random((1, 3, 1))
    z = rng.random((1, 1, 5))
    out = compile_expression("3*x").evaluate(np, x=x, y=y, z=z, t=0.5)
    assert out.shape == (4, 3, 5)
    np.testing.assert_allclose(out, np.broadcast_to(3 * x, (4, 3, 5)))


def test_scalar_time_and_float32(rng):
    x = rng.random(6).astype(np.float32)
    out = compile_expression("x*cos(t) + 0.5").evaluate(np, x=x, t=0.25)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x * np.cos(0.25) + 0.5, rtol=1e-6)


def test_result_is_not_the_input_array(rng):
    x = rng.random(5)
    out = compile_expression("x").evaluate(np, x=x)
    assert out is not x and np.array_equal(out, x)
    out[0] = 123.0
    assert x[0] != 123.0


def test_unused_variables_are_fine_missing_used_ones_are_not(rng):
    x = rng.random(3)
    compile_expression("2*x", variables=("x", "y", "z")).evaluate(np, x=x, y=x, z=x, q=x)
    with pytest.raises(TypeError, match="'t'"):
        compile_expression("x*t").evaluate(np, x=x)


def test_text_pickle_and_equality():
    e = compile_expression("  sin(x) ", where="here")
    assert e.text == "sin(x)"
    assert isinstance(e, Expression)
    e2 = pickle.loads(pickle.dumps(e))
    assert e2 == e and e2.text == e.text


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("__import__('os')", "__import__"),
        ("__import__('os').system('true')", "attribute"),
        ("x.real", "x.real"),
        ("[1][0]", "[1][0]"),
        ("lambda: 1", "lambda"),
        ("foo + x", "'foo'"),
        ("sinn(x)", "'sinn'"),
        ("sin(x, y)", "sin() takes 1 argument"),
        ("arctan2(x)", "arctan2() takes 2 arguments"),
        ("x^2", "**"),
        ("x in y", "comparison"),
        ("x is y", "comparison"),
        ("not x", "'not'"),
        ("where(x < 1, 1)", "where() takes 3 arguments"),
        ("min(x)", "min() takes 2 arguments"),
        ("x if y else z", "conditional"),
        ("'abc'", "string"),
        ("sin(x=1)", "keyword"),
        ("np.sin(x)", "np.sin"),
        ("x // 2", "//"),
        ("x % 2", "%"),
        ("(x, y)", "tuple"),
        ("sin", "function"),
        ("x +", "invalid expression"),
        ("", "empty"),
        ("1/0 + x", "evaluates to inf"),
        ("True + x", "True"),
        ("[x for x in ()]", "ListComp"),
        ("sin(*x)", "unpacking"),
        ("(x := 1)", "NamedExpr"),
    ],
)
def test_rejected(text, fragment):
    with pytest.raises(InputError) as info:
        compile_expression(text, where="cavity.toml: [initial] Ez")
    msg = str(info.value)
    assert msg.startswith("cavity.toml: [initial] Ez: "), msg
    assert fragment in msg, msg
    assert "\n" not in msg


def test_piecewise_expressions_match_numpy(rng):
    """Comparisons (1 true, 0 false, chained as in Python), and / or, where, min and max,
    point by point on fresh random data, in float64 and float32 (no promotion)."""
    x, y, z = (rng.uniform(-1.0, 1.0, size=(4, 5)) for _ in range(3))
    cases = {
        "where(y < 0.5, 1, 0)": np.where(y < 0.5, 1.0, 0.0),
        "where(-0.3 < y <= 0.4, 4*(y + 0.3)*(0.4 - y), 0)": np.where((-0.3 < y) & (y <= 0.4),
                                                                      4 * (y + 0.3) * (0.4 - y), 0.0),
        "min(max(x, -0.2), 0.6) + (x >= y) - (z != z) * 7": np.clip(x, -0.2, 0.6) + (x >= y),
        "(x > 0 and y > 0) + 2*(x < 0 or z == z) - -(y > z)": ((x > 0) & (y > 0)) + 2.0 + (y > z),
        "where(x > 0, sqrt(x), -x)": np.where(x > 0, np.sqrt(np.abs(x)), -x),
        "where(1 < 2, x, y) + where(3 <= 2, 1, 2)": x + 2.0,
    }
    for text, want in cases.items():
        e = compile_expression(text)
        np.testing.assert_allclose(e.evaluate(np, x=x, y=y, z=z, t=0.0), want, rtol=1e-15, atol=0, err_msg=text)
        single = e.evaluate(np, x=x.astype(np.float32), y=y.astype(np.float32), z=z.astype(np.float32), t=0.0)
        assert single.dtype == np.float32, text
    assert compile_expression("3 > 2").is_constant and float(compile_expression("3 > 2").evaluate()) == 1.0


def test_unknown_function_lists_allowed():
    with pytest.raises(InputError, match=r"unknown function 'sinn' \(allowed: sin, cos"):
        compile_expression("sinn(x)", where="cavity.toml: [initial] Ez")


def test_deform_variables_exclude_t():
    with pytest.raises(InputError, match="unknown name 't'"):
        compile_expression("x*t", variables=("x", "y", "z"), where="mesh.deform.x")


def test_non_string_rejected():
    with pytest.raises(InputError, match="must be a string"):
        compile_expression(3.0)  # type: ignore[arg-type]


def test_evaluates_without_python_eval(monkeypatch, rng):
    import builtins

    def forbidden(*args, **kwargs):  # pragma: no cover - must not be reached
        raise AssertionError("eval/exec/compile used on user text")

    e = compile_expression("sin(x) + 2")
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    x = rng.random(4)
    np.testing.assert_allclose(e.evaluate(np, x=x), np.sin(x) + 2)


@pytest.mark.parametrize("text", ["exp(1000*x)", "1/x", "log(x) + sqrt(-x)", "x**1000 * 1e300"])
def test_overflow_and_division_give_inf_or_nan_without_warnings(text):
    x = np.linspace(0.0, 2.0, 9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = compile_expression(text, where="initial.Ez").evaluate(np, x=x, y=x, z=x, t=0.0)
    assert caught == []
    assert value.shape == x.shape and not np.all(np.isfinite(value))  # the caller's finite check sees it
