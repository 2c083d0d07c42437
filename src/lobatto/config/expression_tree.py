"""The syntax tree of a checked case-file expression (config/expressions.py builds it from
the whitelisted :mod:`ast` nodes): numbers, variables, unary and binary operators (the
comparisons and ``and`` / ``or`` among them: 1 for true, 0 for false) and calls of
whitelisted functions, evaluated by :func:`evaluate_tree` on an array namespace (NumPy or
CuPy), with constant sub-trees folded into numbers (:func:`fold_constants`)."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

__all__ = ["Node", "Number", "Variable", "Unary", "Binary", "Call", "evaluate_tree", "fold_constants", "NotFinite",
           "float64_numbers", "COMPARISONS"]


class Node:
    """A node of a checked expression; ``constant``: a number."""

    __slots__ = ()
    constant = False


class Number(Node):
    __slots__ = ("value",)
    constant = True

    def __init__(self, value: float):
        self.value = float(value)


class Variable(Node):
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class Unary(Node):
    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: Node):
        self.op = op
        self.operand = operand


class Binary(Node):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Node, right: Node):
        self.op = op
        self.left = left
        self.right = right


class Call(Node):
    __slots__ = ("func", "args")

    def __init__(self, func: str, args: tuple):
        self.func = func
        self.args = args


#: comparison operators: evaluated to 1.0 (true) or 0.0 (false)
COMPARISONS = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal", "==": "equal",
               "!=": "not_equal"}
#: logical operators on numbers (nonzero: true), 1.0 or 0.0
LOGICAL = {"and": "logical_and", "or": "logical_or"}


def _number(flag, a, b):
    """A truth value (bool or bool array) as 1.0 / 0.0 in the operands' floating dtype (a
    bool array would break unary minus and promote float32 to float64 in arithmetic)."""
    if not hasattr(flag, "astype"):
        return float(flag)
    dtypes = [x.dtype for x in (a, b) if getattr(getattr(x, "dtype", None), "kind", "") == "f"]
    return flag.astype(dtypes[0] if dtypes else np.float64)


def evaluate_tree(xp, node: Node, env: Mapping[str, Any]):
    """Evaluate a validated node tree. ``xp`` supplies the functions."""
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Variable):
        return env[node.name]
    if isinstance(node, Unary):
        v = evaluate_tree(xp, node.operand, env)
        return -v if node.op == "-" else +v
    if isinstance(node, Binary):
        a = evaluate_tree(xp, node.left, env)
        b = evaluate_tree(xp, node.right, env)
        op = node.op
        if op in COMPARISONS:
            return _number(getattr(xp, COMPARISONS[op])(a, b), a, b)
        if op in LOGICAL:
            return _number(getattr(xp, LOGICAL[op])(xp.not_equal(a, 0), xp.not_equal(b, 0)), a, b)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        return a**b
    if isinstance(node, Call):
        args = [evaluate_tree(xp, a, env) for a in node.args]
        if node.func == "where":  # CuPy's where takes its condition as an array only
            args[0] = xp.asarray(args[0])
        return getattr(xp, node.func)(*args)
    raise TypeError(f"unexpected node {node!r}")  # pragma: no cover


def fold_constants(node: Node) -> Node:
    """Fold constant sub-trees into numbers (evaluated with numpy float64)."""
    if isinstance(node, Unary):
        node.operand = fold_constants(node.operand)
        sub = (node.operand,)
    elif isinstance(node, Binary):
        node.left = fold_constants(node.left)
        node.right = fold_constants(node.right)
        sub = (node.left, node.right)
    elif isinstance(node, Call):
        node.args = tuple(fold_constants(a) for a in node.args)
        sub = node.args
    else:
        return node
    if all(isinstance(s, Number) for s in sub):
        with np.errstate(all="ignore"):
            env: dict[str, Any] = {}
            value = float(evaluate_tree(np, float64_numbers(node), env))
        if not math.isfinite(value):
            raise NotFinite(value)
        return Number(value)
    return node


class NotFinite(Exception):
    """A constant part of an expression that is not finite (its value is ``args[0]``)."""


def float64_numbers(node: Node) -> Node:
    """Copy of a constant tree whose numbers are numpy float64 (IEEE semantics:
    1/0 gives inf, (-1)**0.5 gives nan, never a Python exception or a complex)."""
    if isinstance(node, Number):
        n = Number(0.0)
        n.value = np.float64(node.value)
        return n
    if isinstance(node, Unary):
        return Unary(node.op, float64_numbers(node.operand))
    if isinstance(node, Binary):
        return Binary(node.op, float64_numbers(node.left), float64_numbers(node.right))
    if isinstance(node, Call):
        return Call(node.func, tuple(float64_numbers(a) for a in node.args))
    return node
