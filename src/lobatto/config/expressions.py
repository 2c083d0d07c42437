"""Safe arithmetic expressions for case files.

A case file gives initial conditions, exact solutions and mesh deformations as
strings such as ``"sin(pi*x)*sin(pi*y)*cos(sqrt(2)*pi*t)"`` or, piecewise,
``"where(y < 0.5, 4*y*(1 - 2*y), 0)"`` (comparisons give 1 or 0; ``where``, ``min``,
``max`` act point by point). They are parsed
with :mod:`ast` in ``eval`` mode and the syntax tree is checked node by node
against a small whitelist; the accepted tree is converted into lobatto's own
node objects, which are the only thing ever evaluated. User text is never
passed to :func:`eval`, :func:`exec` or :func:`compile`.

Evaluation takes an array namespace (``numpy`` or ``cupy``) and looks the
functions up on it by name, so the same expression runs on the host or on the
device.
"""

from __future__ import annotations

import ast
import functools
import math
from typing import Sequence

import numpy as np

from lobatto.config.expression_tree import (Binary, Call, Node, NotFinite, Number, Unary, Variable, evaluate_tree,
                                            fold_constants)
from lobatto.errors import InputError

__all__ = [
    "Expression",
    "compile_expression",
    "FUNCTIONS",
    "CONSTANTS",
]

#: Allowed functions and the number of arguments each takes.
FUNCTIONS: dict[str, int] = {
    "sin": 1,
    "cos": 1,
    "tan": 1,
    "exp": 1,
    "log": 1,
    "sqrt": 1,
    "abs": 1,
    "tanh": 1,
    "sinh": 1,
    "cosh": 1,
    "arctan2": 2,
    "where": 3,
    "min": 2,
    "max": 2,
}
#: the array namespace's name of a function whose case-file name differs (element-wise)
_XP_NAMES = {"min": "minimum", "max": "maximum"}

#: Named constants.
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_UNARYOPS = {ast.UAdd: "+", ast.USub: "-"}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_BOOLOPS = {ast.And: "and", ast.Or: "or"}
_REJECTED_BINOPS = {
    ast.BitXor: "'^' is not a power operator here; use ** (for example x**2)",
    ast.FloorDiv: "operator '//' is not allowed; use /",
    ast.Mod: "operator '%' is not allowed",
    ast.MatMult: "operator '@' is not allowed",
    ast.LShift: "operator '<<' is not allowed",
    ast.RShift: "operator '>>' is not allowed",
    ast.BitOr: "operator '|' is not allowed",
    ast.BitAnd: "operator '&' is not allowed",
}
_MAX_LENGTH = 10_000


# ----------------------------------------------------------------------- expression
class Expression:
    """A validated expression. Immutable; evaluate with :meth:`evaluate`."""

    __slots__ = ("_text", "_tree", "_variables", "_used", "_where")

    def __init__(self, text: str, tree: Node, variables: tuple, used: tuple, where: str):
        self._text = text
        self._tree = tree
        self._variables = variables
        self._used = used
        self._where = where

    @property
    def text(self) -> str:
        """The expression as written in the case file."""
        return self._text

    @property
    def variables(self) -> tuple:
        """The variables the expression was allowed to use."""
        return self._variables

    @property
    def variables_used(self) -> tuple:
        """The variables the expression actually uses, in the order of ``variables``."""
        return self._used

    @property
    def is_constant(self) -> bool:
        """True when the expression uses no variable."""
        return not self._used

    @property
    def where(self) -> str:
        return self._where

    def evaluate(self, xp=np, **values):
        """Evaluate on arrays from namespace ``xp`` (numpy or cupy).

        ``values`` maps variable names to arrays or scalars; they are broadcast
        together and the result always has the broadcast shape (a constant
        expression gives ``xp.full(shape, value)``). The result's dtype is the
        floating dtype of the given arrays (float64 when none is an array).
        Variables the expression does not use may be passed and are ignored.
        Overflow, division by zero and invalid operations give inf / nan silently (no
        RuntimeWarning): the caller checks the result's finiteness.
        """
        missing = [v for v in self._used if v not in values]
        if missing:
            raise TypeError(
                f"{self._where}: expression {self._text!r} needs a value for "
                + ", ".join(repr(m) for m in missing)
            )
        shapes = []
        dtypes = []
        for v in values.values():
            shape = getattr(v, "shape", None)
            if shape is None:
                shapes.append(())
                continue
            shapes.append(tuple(shape))
            dtype = getattr(v, "dtype", None)
            if dtype is not None:
                dtypes.append(np.dtype(dtype))
        shape = np.broadcast_shapes(*shapes) if shapes else ()
        dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
        if not np.issubdtype(dtype, np.floating):
            dtype = np.dtype(np.float64)

        if isinstance(self._tree, Number):
            return xp.full(shape, self._tree.value, dtype=dtype)
        env = {name: xp.asarray(values[name], dtype=dtype) for name in self._used}
        # IEEE results (inf, nan) without NumPy's RuntimeWarnings: callers check finiteness
        # and name the field and point (a warning beside that message says nothing more)
        with np.errstate(all="ignore"):
            result = xp.asarray(evaluate_tree(xp, self._tree, env))
        if any(result is a for a in env.values()):
            result = result.copy()  # never hand back the caller's own array
        if result.dtype != dtype:
            result = result.astype(dtype)
        if tuple(result.shape) != tuple(shape):
            out = xp.empty(shape, dtype=dtype)
            out[...] = result
            result = out
        return result

    def __call__(self, xp=np, **values):
        return self.evaluate(xp, **values)

    def __repr__(self) -> str:
        return f"Expression({self._text!r})"

    def __str__(self) -> str:
        return self._text

    def __eq__(self, other) -> bool:
        if not isinstance(other, Expression):
            return NotImplemented
        return self._text == other._text and self._variables == other._variables

    def __hash__(self) -> int:
        return hash((self._text, self._variables))

    def __reduce__(self):
        return (compile_expression, (self._text, self._variables, self._where))


# -------------------------------------------------------------------------- compile
class _Checker:
    def __init__(self, text: str, variables: tuple, where: str):
        self.text = text
        self.variables = variables
        self.where = where
        self.used: set[str] = set()

    def fail(self, message: str):
        raise InputError(f"{self.where}: {message}")

    def segment(self, node: ast.AST) -> str:
        seg = None
        try:
            seg = ast.get_source_segment(self.text, node)
        except Exception:  # pragma: no cover - defensive
            seg = None
        return seg if seg else type(node).__name__

    def allowed_names(self) -> str:
        parts = []
        if self.variables:
            parts.append("variables " + ", ".join(self.variables))
        parts.append("constants " + ", ".join(CONSTANTS))
        return "; ".join(parts)

    def convert(self, node: ast.AST) -> Node:
        if isinstance(node, ast.Expression):
            return self.convert(node.body)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                if isinstance(value, str):
                    self.fail(f"strings are not allowed: {self.segment(node)}")
                self.fail(f"'{self.segment(node)}' is not a number")
            try:
                f = float(value)
            except OverflowError:
                self.fail(f"number {self.segment(node)} is too large")
            if not math.isfinite(f):
                self.fail(f"number {self.segment(node)} is not finite")
            return Number(f)
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.variables:
                self.used.add(name)
                return Variable(name)
            if name in CONSTANTS:
                return Number(CONSTANTS[name])
            if name in FUNCTIONS:
                self.fail(f"'{name}' is a function; call it as {name}(...)")
            self.fail(f"unknown name '{name}' (allowed: {self.allowed_names()})")
        if isinstance(node, ast.UnaryOp):
            op = _UNARYOPS.get(type(node.op))
            if isinstance(node.op, ast.Not):
                self.fail(f"'not' is not allowed: '{self.segment(node)}' (invert the comparison instead)")
            if op is None:
                self.fail(f"operator in '{self.segment(node)}' is not allowed (use + - * / **)")
            return Unary(op, self.convert(node.operand))
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                hint = _REJECTED_BINOPS.get(type(node.op), "operator is not allowed")
                self.fail(f"{hint}: '{self.segment(node)}'")
            return Binary(op, self.convert(node.left), self.convert(node.right))
        if isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name):
                if isinstance(func, ast.Attribute):
                    self.fail(f"attribute access is not allowed: '{self.segment(func)}'")
                self.fail(f"only named functions can be called, not '{self.segment(func)}'")
            name = func.id
            if name not in FUNCTIONS:
                self.fail(
                    f"unknown function '{name}' (allowed: {', '.join(FUNCTIONS)})"
                )
            if node.keywords:
                self.fail(f"keyword arguments are not allowed in call to {name}()")
            if any(isinstance(a, ast.Starred) for a in node.args):
                self.fail(f"argument unpacking is not allowed in call to {name}()")
            nargs = FUNCTIONS[name]
            if len(node.args) != nargs:
                self.fail(
                    f"{name}() takes {nargs} argument{'s' if nargs != 1 else ''}, "
                    f"got {len(node.args)} in '{self.segment(node)}'"
                )
            return Call(_XP_NAMES.get(name, name), tuple(self.convert(a) for a in node.args))
        if isinstance(node, ast.Attribute):
            self.fail(f"attribute access is not allowed: '{self.segment(node)}'")
        if isinstance(node, ast.Subscript):
            self.fail(f"indexing is not allowed: '{self.segment(node)}'")
        if isinstance(node, ast.Lambda):
            self.fail("lambda is not allowed")
        if isinstance(node, ast.Compare):  # a < b <= c: (a < b) and (b <= c)
            operands = [self.convert(node.left)] + [self.convert(c) for c in node.comparators]
            tests = []
            for i, op in enumerate(node.ops):
                if type(op) not in _COMPARE:
                    self.fail(f"comparison in '{self.segment(node)}' is not allowed (use < <= > >= == !=)")
                tests.append(Binary(_COMPARE[type(op)], operands[i], operands[i + 1]))
            return functools.reduce(lambda a, b: Binary("and", a, b), tests)
        if isinstance(node, ast.BoolOp):
            values = [self.convert(v) for v in node.values]
            return functools.reduce(lambda a, b: Binary(_BOOLOPS[type(node.op)], a, b), values)
        if isinstance(node, ast.IfExp):
            self.fail(f"conditional expressions are not allowed: '{self.segment(node)}' (use where(cond, a, b))")
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            self.fail(f"lists, tuples, sets and dicts are not allowed: '{self.segment(node)}'")
        if isinstance(node, (ast.JoinedStr, ast.FormattedValue)):
            self.fail(f"strings are not allowed: '{self.segment(node)}'")
        self.fail(f"'{self.segment(node)}' is not allowed ({type(node).__name__})")
        raise AssertionError  # unreachable


def compile_expression(
    text: str,
    variables: Sequence[str] = ("x", "y", "z", "t"),
    where: str = "initial.Ez",
) -> Expression:
    """Parse and validate ``text``; return an :class:`Expression`.

    Raises :class:`lobatto.errors.InputError` whose message starts with
    ``where`` and names the offending token.
    """
    variables = tuple(variables)
    if not isinstance(text, str):
        raise InputError(f"{where}: expression must be a string, got {text!r}")
    if len(text) > _MAX_LENGTH:
        raise InputError(f"{where}: expression is longer than {_MAX_LENGTH} characters")
    source = text.strip()
    if not source:
        raise InputError(f"{where}: expression is empty")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        col = f" at column {err.offset}" if err.offset else ""
        raise InputError(
            f"{where}: invalid expression {text!r}{col}: {err.msg}"
        ) from None
    except (RecursionError, MemoryError, ValueError) as err:
        raise InputError(f"{where}: expression cannot be parsed ({type(err).__name__})") from None
    checker = _Checker(source, variables, where)
    try:
        node = checker.convert(tree)
        node = fold_constants(node)
    except RecursionError:
        raise InputError(f"{where}: expression is nested too deeply") from None
    except NotFinite as err:
        raise InputError(
            f"{where}: a constant part of {source!r} evaluates to {err.args[0]} "
            "(division by zero, log of zero or overflow?)"
        ) from None
    used = tuple(v for v in variables if v in checker.used)
    return Expression(source, node, variables, used, where)
