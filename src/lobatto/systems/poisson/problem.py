"""The data of -div(k grad u) + h u = f on one rank's elements, evaluated on the host.

Weak form, with v a test function zero on Dirichlet boundaries and n the outward normal:

    integral(k grad u . grad v + h u v) = integral(f v) + integral over Neumann sides of (g v),
    g = k du/dn (the ``flux`` of a [boundary.<name>] table), u = u_D on Dirichlet sides.

GLL quadrature turns the right-hand side into B f plus, on each Neumann face point, the
face weight w_a w_b times the surface Jacobian times g. The Dirichlet data is a field u_D
that holds the ``value`` expression on Dirichlet face points and 0 elsewhere (the copies of a
point on several elements are averaged, so it is continuous); the solver then finds
x = u - u_D, zero on those points, from A x = b - A u_D.

Everything here is local to the rank (no collective call), so it runs inside the caller's
``collective_errors`` block and a bad value on one rank is reported by all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lobatto.config.ranges import precision_range, show_value
from lobatto.discretization import gll_weights
from lobatto.errors import InputError
from lobatto.mesh.mesh import INTERIOR
from lobatto.mesh.topology import face_slice

#: the boundary kind that each key of a [boundary.<name>] table makes of its faces
KIND_OF_KEY = {"value": "dirichlet", "flux": "neumann"}


@dataclass
class ProblemData:
    """Host arrays of one rank: coefficients (a float where the expression is constant),
    the weighted right-hand side B f + Neumann term (not yet assembled), the Dirichlet faces
    and values (``dirichlet_set``: 1 where a value was given on this element)."""

    k: float | np.ndarray
    h: float | np.ndarray
    weighted_source: np.ndarray
    dirichlet_faces: np.ndarray
    dirichlet_values: np.ndarray
    dirichlet_set: np.ndarray
    neumann_faces: int


def coefficient(expression, key: str, coords, valid, dtype=None):  # key: "[physics] k", as messages name it
    """The expression's values (a float if constant), checked against ``valid`` (the key's
    config.ranges.Range) before any use; InputError naming the key and the first bad point."""
    x, y, z = coords
    with np.errstate(all="ignore"):  # a value out of range is reported below, not warned about
        values = np.asarray(expression.evaluate(np, x=x, y=y, z=z), dtype=np.float64)
    values = np.broadcast_to(values, x.shape) if values.ndim == 0 and x.size else values
    ok = valid.within(values)
    if dtype is not None:  # and what the backend's precision multiplies (float32)
        ok &= (values == 0) | precision_range(dtype).within(np.abs(values))
    if not ok.all():
        point = np.unravel_index(int(np.argmin(ok)), values.shape)
        where = ", ".join(f"{float(c[point]):.4g}" for c in coords)
        need = valid.describe()
        if dtype is not None and valid.contains(values[point]):
            need = f"0 or of magnitude {precision_range(dtype).describe()}"
        raise InputError(f"{key} = \"{expression.text}\" is {show_value(values[point])} at (x, y, z) = ({where}); "
                         f"its values must be {need}")
    if expression.is_constant:
        return float(values.reshape(-1)[0]) if values.size else float(expression.evaluate(np))
    return values


def face_kinds(kinds: list, mesh, boundary_tables: dict) -> tuple[np.ndarray, np.ndarray]:
    """(dirichlet (E, num_faces) bool, the [boundary.<name>] table name of each face or "") for this
    rank's faces: a table decides its faces' kind (value: Dirichlet, flux: Neumann); other
    boundary faces take their [mesh] boundary kind (``kinds``: that of each of
    ``mesh.boundary_names``), with zero data."""
    mesh_kinds = np.array(list(kinds) + ["interior"], dtype=object)
    kind = mesh_kinds[np.where(mesh.boundary_kind == INTERIOR, -1, mesh.boundary_kind)]
    groups = np.array(list(mesh.group_names) + [""], dtype=object)
    group = groups[np.where(mesh.face_group < 0, -1, mesh.face_group)]
    boundary = mesh.face_neighbour < 0
    named = boundary & np.isin(group, list(boundary_tables))
    for name, (key, _) in boundary_tables.items():
        kind = np.where(boundary & (group == name), KIND_OF_KEY[key], kind)
    return boundary & (kind == "dirichlet"), np.where(named, group, "")


def evaluate(case, kinds: list, mesh, geometry, case_keys, boundary_keys, dtype=None) -> ProblemData:
    """All of the rank's problem data from the case's [physics] and [boundary.<name>];
    ``kinds``: the boundary kind of each of ``mesh.boundary_names``; ``case_keys``,
    ``boundary_keys``: the spec's Keys (their ranges check the values on the mesh); ``dtype``:
    the backend's, whose range the coefficients must also keep."""
    boundary_ranges = {key.name: key.valid_range for key in boundary_keys}
    physics = case.physics
    coords = geometry.coords
    keys = {key.name: key for key in case_keys}
    k, h, f = (coefficient(getattr(physics, name), f"[physics] {name}", coords, keys[name].valid_range, dtype)
               for name in ("k", "h", "f"))
    weighted = geometry.mass * f
    tables = case.tables.get("boundary", {})
    dirichlet, table_of = face_kinds(kinds, mesh, tables)
    order = geometry.order
    w = gll_weights(order)
    # w_a w_b on every face (the weights are symmetric); w_b alone on a 2-D mesh's edges, whose
    # a axis is the thin one (per unit depth)
    face_weights = np.outer(w, w) if mesh.dim == 3 else np.outer(np.ones(1), w)
    values = np.zeros_like(weighted)
    given = np.zeros_like(weighted)
    neumann = 0
    for face in range(mesh.num_faces):
        points = face_slice(face, order)[1:]
        for name, (key, expression) in tables.items():
            rows = np.flatnonzero(table_of[:, face] == name)
            if not rows.size:
                continue
            x, y, z = (c[(rows,) + points] for c in coords)  # (faces, n, n) each ((faces, 1, n) in 2-D)
            data = coefficient(expression, f"[boundary.{name}] {key}", (x, y, z), boundary_ranges[key])
            if key == "flux":
                weighted[(rows,) + points] += face_weights * geometry.surface_jacobian[rows, face] * data
                neumann += rows.size
            else:
                values[(rows,) + points] = data
                given[(rows,) + points] = 1.0
    # faces that are Dirichlet by their [mesh] kind, without a table: u = 0 there
    for face in range(mesh.num_faces):
        rows = np.flatnonzero(dirichlet[:, face] & (table_of[:, face] == ""))
        given[(rows,) + face_slice(face, order)[1:]] = 1.0
    return ProblemData(k, h, weighted, dirichlet, values, given, neumann)
