"""Heterogeneous media for Maxwell: eps, mu and conductivity sigma per point.

    eps dE/dt = curl H - sigma E + lift * F_E        mu dH/dt = -curl E + lift * F_H

The exact Riemann solution of the tangential fields at a face between medium - (own) and
medium + (neighbour), impedances Z = sqrt(mu/eps), Y = 1/Z, normal n from - to +, jumps
[q] = q- - q+ (Hesthaven & Warburton, "Nodal DG methods", sec. 6.5; derived from the
left-going wave in - and the right-going wave in +, tangential E*, H* continuous):

    E* = (Y- E- + Y+ E+ - n x [H]) / (Y- + Y+)      H* = (Z- H- + Z+ H+ + n x [E]) / (Z- + Z+)

The strong-form surface terms n x (H* - H-) and -n x (E* - E-), with the exchanged sums
S_E = -n x [E], S_H = -n x [H] (systems/dg.py), are

    F_E = (Z+ S_H - alpha n x S_E) / (Z- + Z+)      F_H = (-Y+ S_E - alpha n x S_H) / (Y- + Y+)

alpha = 1 upwind (the exact solver), alpha = 0 central (impedance-weighted averages, which
still conserve the discrete energy). Uniform media give fluxes.py's formulas.

They need the plain sums and the neighbour's impedance Z+ only. The material does not
change in time, so Z+ is found once, at set-up, by one gather–scatter sum of Z at the face
points (Z- + Z+ at an interior point; at a boundary point the ghost state lies in the same
medium, Z+ = Z-). Every stage then exchanges the same six traces as the uniform path, with
the same (tuned) ``maxwell_traces`` kernel; only the rhs differs: ``maxwell_rhs_materials``
below, a reference kernel on ``xp`` (tuned C/CUDA versions are a follow-up).

Case file: ``[physics] sigma`` (a uniform conductivity) and ``[material.<name>]`` tables
(docs/electromagnetics.md, "Materials"), parsed by ``parse_material_tables``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from lobatto.backends.base import element_bounds, reference_kernel
from lobatto.config.expressions import compile_expression
from lobatto.config.ranges import LARGE, SMALL, Range, check_number, show_value
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, collective_errors
from lobatto.mesh.topology import element_shape
from lobatto.systems.dg import add_to_faces, element_range, face_values
from lobatto.systems.maxwell import anisotropy, subcell
from lobatto.systems.maxwell.dispersion_tables import parse_dispersion
from lobatto.systems.maxwell.reference import cross, curl
from lobatto.systems.maxwell.terms_cpu import array_terms_asked

PROPERTIES = ("epsilon", "mu", "sigma")
#: the valid values of each property, in [physics] and [material.<name>] (numbers, and the
#: values of expressions at every point), with the reason
PROPERTY_RANGES = {
    "epsilon": Range(SMALL, LARGE, reason="c = 1/sqrt(epsilon mu), Z = sqrt(mu/epsilon) and 1/epsilon are computed "
                     "from it (1/epsilon in single precision too); SI values (8.85e-12) and scaled units fit"),
    "mu": Range(SMALL, LARGE, reason="c = 1/sqrt(epsilon mu), Z = sqrt(mu/epsilon) and 1/mu are computed from it "
                "(1/mu in single precision too); SI values (1.26e-6) and scaled units fit"),
    "sigma": Range(0.0, LARGE, reason="sigma/epsilon is a decay rate: the time step is fitted to it, and it multiplies "
                   "E in single precision too"),
}
SAMPLINGS = ("point", "element", "average")  # average: sub-cell averaging (subcell.py)
DISPERSION_KEYS = ("model", "poles", "data", "wavelength_unit", "fit", "material", "length_unit")  # dispersion_tables.py
TABLE_KEYS = ("where",) + PROPERTIES + ("sampling",) + DISPERSION_KEYS


# ============================================================================ case file
@dataclass(frozen=True)
class MaterialTable:
    """One ``[material.<name>]`` table: where it applies and the properties it sets."""

    name: str
    where: Any  # Expression (applies where it is > 0) or None (the region called ``name``)
    values: dict  # property -> float or Expression in x, y, z, or (eps, mu) a tuple of 3 (diagonal anisotropy)
    sampling: str = "point"  # "element": one value per element, at its centroid
    dispersion: Any = None  # dispersion_tables.Dispersion: poles where the table applies (eps is then eps_inf)


@dataclass(frozen=True)
class MaterialTables:
    """The ``[material]`` tables in file order (a later table wins where two overlap)."""

    tables: tuple

    def to_dict(self) -> dict:
        out = {}
        for t in self.tables:
            entry = {} if t.where is None else {"where": t.where.text}
            fitted = t.dispersion is not None and t.dispersion.epsilon_infinity is not None
            entry.update({k: _given(v) for k, v in t.values.items()
                          if not (fitted and k == "epsilon")})  # a fitted or library eps_inf comes again
            entry["sampling"] = t.sampling
            if t.dispersion is not None:
                entry.update(t.dispersion.to_dict())
            out[t.name] = entry
        return out


def _given(v):
    if isinstance(v, tuple):
        return [_given(c) for c in v]
    return v.text if hasattr(v, "text") else v


def parse_material_tables(ctx, value) -> MaterialTables:
    """Check ``[material.<name>]`` tables (PhysicsSpec.named_tables); region names are
    checked against the mesh when the system is built."""
    if not isinstance(value, Mapping):
        raise ctx.error("[material] must hold one table per material, for example [material.glass]")
    tables = []
    for name, table in value.items():
        where = f"material.{name}"
        if not isinstance(table, Mapping):
            raise ctx.error(f"[{where}] must be a table with keys {', '.join(TABLE_KEYS)}")
        for key in table:
            if key not in TABLE_KEYS:
                close = difflib.get_close_matches(key, TABLE_KEYS, n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ctx.error(f"unknown key '{where}.{key}'{hint}; expected one of {', '.join(TABLE_KEYS)}")
        dispersion = parse_dispersion(ctx, where, table)
        if not any(k in table for k in PROPERTIES) and dispersion is None:
            raise ctx.error(f"[{where}] sets none of {', '.join(PROPERTIES)} or a dispersion (model and poles, data, or "
                            "material)")
        values = {k: _property(ctx, where, k, table[k]) for k in PROPERTIES if k in table}
        if dispersion is not None and dispersion.epsilon_infinity is not None:
            values["epsilon"] = dispersion.epsilon_infinity
        condition = table.get("where")
        if condition is not None:
            if not isinstance(condition, str):
                raise ctx.bad(where, "where", "an expression in x, y, z (the material is where it is > 0)", condition)
            condition = compile_expression(condition, ("x", "y", "z"), where=f"{ctx.source}: [{where}] where")
        sampling = table.get("sampling", "point")
        if sampling not in SAMPLINGS:
            raise ctx.bad(where, "sampling", f"one of {', '.join(repr(s) for s in SAMPLINGS)}", sampling)
        tables.append(MaterialTable(str(name), condition, values, sampling, dispersion))
    return MaterialTables(tuple(tables))


def _property(ctx, where, key, value):
    if isinstance(value, (list, tuple)) and key in ("epsilon", "mu"):
        if len(value) != 3:
            raise ctx.bad(where, key, "a number, an expression or a list of 3 (the diagonal: x, y, z)", value)
        return tuple(_property(ctx, where, f"{key}[{i}]", v) for i, v in enumerate(value))
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ctx.bad(where, key, "a number or an expression in x, y, z", value)
    if isinstance(value, str):
        return compile_expression(value, ("x", "y", "z"), where=f"{ctx.source}: [{where}] {key}")
    return check_number(ctx, where, key, value, PROPERTY_RANGES[key.split("[")[0]])


# ====================================================================== per-point values
def material_fields(tables: MaterialTables | None, background: Mapping, mesh, coords: np.ndarray,
                    source: str = "case", comm=None) -> dict:
    """{'epsilon', 'mu', 'sigma'}: (E, n, n, n) host arrays at the GLL points.

    ``background``: the [physics] values; each table overrides them where it applies (its
    region's elements, or the points, or the elements' centroids, where ``where`` > 0).
    Collective with ``comm``: a value out of range on any rank is the same InputError on
    every rank, naming the element by global id (the lowest, of the first table and key)."""
    shape = coords.shape[1:]
    out = {k: np.full(shape, float(background[k])) for k in PROPERTIES}
    centroids = coords.mean(axis=(2, 3, 4))[:, :, None, None, None] * np.ones_like(coords)
    found = None  # (table, key, global id, message) of this rank's first value out of range
    listed = tables.tables if tables is not None else ()
    touched = np.ones(len(listed), dtype=np.int64)  # 0: the table's where is > 0 nowhere on this rank
    for i, t in enumerate(listed):
        at = centroids if t.sampling == "element" else coords
        mask = table_mask(t, mesh, coords, centroids, shape, source)
        touched[i] = int(t.where is None or bool(np.any(mask)))
        items = [(key if c is None else f"{key}[{c}]", part) for key, value in t.values.items()
                 for c, part in (enumerate(value) if isinstance(value, tuple) else [(None, value)])]
        components = {}  # key -> the components of a diagonal value so far
        for k, (label, value) in enumerate(items):
            key, component = (label, None) if "[" not in label else (label[:-3], int(label[-2]))
            v = value if isinstance(value, float) else np.broadcast_to(
                np.asarray(value.evaluate(np, x=at[0], y=at[1], z=at[2]), dtype=np.float64), shape)
            allowed = PROPERTY_RANGES[key]
            bad = mask & ~allowed.within(v)
            if np.any(bad):
                local = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
                e = int(local[np.argmin(np.asarray(mesh.element_ids)[local])])
                first = float(np.broadcast_to(v, shape)[e][bad[e]][0])
                # worded as config/schema.py's checks: a number (a constant) or an expression's values
                element = mesh.describe_element(e)
                name = key if component is None else label
                found = (i, k, int(mesh.element_ids[e]),
                         f"{source}: [material.{t.name}] {name} must be a number {allowed.describe()}, got "
                         f"{first:g} (in {element})" if isinstance(value, float) else
                         f"{source}: [material.{t.name}] {name} = \"{value.text}\" is {show_value(first)} in "
                         f"{element}; its values must be {allowed.describe()}")
                break
            if component is not None:
                components.setdefault(key, []).append(np.broadcast_to(v, shape))
                if component < 2:
                    continue
                v = np.stack(components.pop(key))  # (3,) + shape
            if t.sampling != "average":  # (averaged below, from the sub-points)
                out[key] = np.where(mask, v, out[key])
        if found is None and t.sampling == "average":
            out, problem = subcell.average(t, out, mesh, coords, shape[-1] - 1, table_level(t, mesh, source),
                                           PROPERTY_RANGES)
            if problem is not None:
                found = (i, 0, problem[0], f"{source}: [material.{t.name}] {problem[1]} is {show_value(problem[2])} at "
                         f"a sub-cell point of {mesh.describe_element(problem[3])} (sampling = \"average\"); its "
                         f"values must be {PROPERTY_RANGES[problem[1]].describe()}")
        if found is not None:
            break
    if comm is not None:
        found = min((f for f in comm.allgather(found) if f is not None), default=None)
    if found is not None:
        error = InputError(found[3])
        error.collective = comm is not None  # every rank raises this one
        raise error
    touched = allreduce(comm, touched, "max") if listed else touched
    for i, t in enumerate(listed):  # an averaged film between the points: its sub-cell shares (every rank alike)
        if not touched[i] and t.sampling == "average":
            share = subcell.shares(mesh, coords, shape[-1] - 1, table_level(t, mesh, source))
            touched[i] = allreduce(comm, int(share.any()), "max")
    check_applies(listed, touched, source, comm)
    return out


def check_applies(tables, touched, source: str, comm=None) -> None:
    """A table set nowhere on any rank (``touched``: max over the ranks): one error on every rank."""
    for t, anywhere in zip(tables, touched):
        if not anywhere:
            at = {"element": "any element's centroid (sampling = \"element\")", "point": "any point"}.get(
                t.sampling, "any point or sub-cell point (sampling = \"average\")")
            error = InputError(f"{source}: [material.{t.name}] where = {t.where.text!r} is not > 0 at {at} of the "
                               "mesh, so the table applies nowhere; check the expression (or remove the table)")
            error.collective = comm is not None
            raise error


def table_level(t: MaterialTable, mesh, source: str = "case"):
    """level(x, y, z, elements): > 0 inside table ``t`` at sub-cell points of those elements (its
    ``where``, or +-1 for a region): what subcell.py averages over."""
    if t.where is not None:
        return lambda x, y, z, part: t.where.evaluate(np, x=x, y=y, z=z) * np.ones_like(x)
    return lambda x, y, z, part: 2.0 * table_mask(t, mesh, None, None, x.shape, source, part) - 1.0


def pole_mask(t: MaterialTable, mesh, coords, centroids, shape, source: str = "case", shares=None) -> np.ndarray:
    """Where table ``t`` sets the poles (or none: epsilon without poles): ``table_mask``; averaged,
    the points whose control volume is more than half inside (``shares``: subcell.shares, given
    or found), the poles not averaged (Meep's rule, docs/electromagnetics.md): element-wise for
    faces on element faces; none where the interface halves a volume (share 1/2 up to rounding,
    which would pick a side by its last bit), as where = 0 has none with "point"."""
    if t.sampling != "average":
        return table_mask(t, mesh, coords, centroids, shape, source)
    shares = subcell.shares(mesh, coords, shape[-1] - 1, table_level(t, mesh, source)) if shares is None else shares
    return shares > 0.5 + 1e-9


def table_mask(t: MaterialTable, mesh, coords, centroids, shape, source: str = "case", part=slice(None)) -> np.ndarray:
    """Where table ``t`` applies: (E, n, n, n) booleans (its region's elements, or where its
    ``where`` is > 0 at the points or, with sampling = "element", at the elements' centroids);
    ``part``: of those elements only (``coords`` theirs)."""
    if t.where is None:
        names = tuple(mesh.region_names)
        if t.name not in names:
            close = difflib.get_close_matches(t.name, names, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise InputError(f"{source}: [material.{t.name}]: no region '{t.name}' in the mesh{hint}; its regions "
                             f"are {', '.join(names)} (or give the table a 'where' expression)")
        return np.broadcast_to((np.asarray(mesh.regions)[part] == names.index(t.name))[:, None, None, None], shape)
    at = centroids if t.sampling == "element" else coords
    return np.broadcast_to(np.asarray(t.where.evaluate(np, x=at[0], y=at[1], z=at[2])) > 0, shape)


# ============================================================================= operator
class HeterogeneousMedium:
    """The device arrays of a per-point material for one MaxwellSystem (after setup_faces):
    1/eps, 1/mu, sigma/eps at the points and the face coefficients of F_E, F_H."""

    def __init__(self, system, fields: Mapping, comm=None):
        backend, order = system.backend, system.order
        shape = (system.num_elements,) + element_shape(system.mesh.dim, order)  # (1, n, n) points in 2-D
        self.anisotropic = anisotropy.is_anisotropic(fields)
        self._device = {}  # eps and mu on the device, for the energy (made when first asked)
        if self.anisotropic:  # eps, mu (3,) + shape (anisotropy.py); sigma one value a point
            anisotropy.set_up(self, system, fields, shape, comm)
            return
        eps, mu, sigma = (np.ascontiguousarray(np.broadcast_to(np.asarray(fields[k], dtype=np.float64), shape))
                          for k in PROPERTIES)
        # (eps, mu, sigma are within PROPERTY_RANGES: material_fields checked them)
        self.epsilon, self.mu, self.sigma = eps, mu, sigma
        speed = float(np.max(1.0 / np.sqrt(eps * mu))) if eps.size else 0.0
        self.wave_speed = float(allreduce(comm, speed, "max"))
        z_own = face_values(np, np.sqrt(mu / eps), order)  # (E, 6, n, n)
        with collective_errors(comm):  # a face point with more than two sides may be on one rank only
            z_other = self.neighbour_impedance(system, z_own)
        total = z_own + z_other
        to_dev = backend.asarray
        self.arrays = {
            "inv_epsilon": to_dev(1.0 / eps),
            "inv_mu": to_dev(1.0 / mu),
            "sigma_over_epsilon": to_dev(sigma / eps) if np.any(sigma > 0) else None,
            # F_E = (a S_H - alpha b n x S_E),  F_H = -(c S_E + alpha d n x S_H), times lift
            "flux_a": to_dev(z_other / total),
            "flux_b": to_dev(1.0 / total),
            "flux_c": to_dev(z_own / total),
            "flux_d": to_dev(z_own * z_other / total),
        }
        if backend.name in ("cuda", "cpu"):  # the tuned kernels read the four as one array
            self.arrays["flux_coefficients"] = to_dev(np.stack([z_other / total, 1.0 / total, z_own / total,
                                                               z_own * z_other / total]))
        self.kernel = backend.kernel("maxwell_rhs_materials", order=order, dim=system.mesh.dim)
        # the compiled CPU stage (cpu.py; None: the rhs and array operations); LOBATTO_ARRAY_TERMS=1
        # keeps the array stage, as for the stage terms (terms_cpu.py)
        self.stage_kernel = None
        if backend.has_tuned("maxwell_stage_materials") and not array_terms_asked():
            self.stage_kernel = backend.kernel("maxwell_stage_materials", order=order, dim=system.mesh.dim)

    @staticmethod
    def neighbour_impedance(system, z_own: np.ndarray) -> np.ndarray:
        """Z+ at every face point: one gather–scatter sum of Z (and of ones, the count of
        sides); a boundary point's ghost lies in its own medium. ``z_own`` (..., E, 6, n, n):
        several impedances per point travel in one sum."""
        backend = system.backend
        lead = z_own.shape[:-4]
        rows = z_own.reshape((-1,) + z_own.shape[-4:])
        data = backend.asarray(np.stack([r.reshape(-1) for r in rows] + [np.ones(rows[0].size)]))
        system.exchange.apply(data, "sum")
        host = np.asarray(backend.to_host(data), dtype=np.float64)
        count = host[-1].reshape(z_own.shape[-4:])
        z_sum = host[:-1].reshape(z_own.shape)
        if lead:
            count = np.broadcast_to(count, z_own.shape)
        count = np.rint(count)
        if np.any(count > 2):
            raise InputError("[material]: heterogeneous materials need a conforming mesh (a face point with "
                             f"{int(count.max())} sides was found)")
        return np.where(count == 2, z_sum - z_own, z_own)

    def rhs(self, system, u, out):
        system.with_exchange(u, lambda elements, sums: self.kernel(
            u, sums, system.device_geometry, out, self.arrays, system.alpha, elements))
        return out

    def stage(self, system, u, residual, a, b, dt) -> None:
        """residual = a residual + dt L(u); u += b residual, in one compiled pass per element."""
        system.with_exchange(u, lambda elements, sums: self.stage_kernel(
            u, residual, sums, system.device_geometry, self.arrays, system.alpha, a, b, dt, elements))

    def energy(self, system, u) -> float:
        """1/2 sum M (eps |E|^2 + mu |H|^2), eps and mu per point, on this rank."""
        xp, mass = system.backend.xp, system.device_geometry["mass"]
        eps, mu = (self.device_property(system, k) for k in ("epsilon", "mu"))
        with np.errstate(all="ignore"):  # an overflow gives inf, which the driver reports
            if self.anisotropic:
                e2 = xp.sum(mass * xp.sum(eps * u[0:3] ** 2, axis=0), dtype=np.float64)
                h2 = xp.sum(mass * xp.sum(mu * u[3:6] ** 2, axis=0), dtype=np.float64)
            else:
                e2 = xp.sum(mass * eps * xp.sum(u[0:3] ** 2, axis=0), dtype=np.float64)
                h2 = xp.sum(mass * mu * xp.sum(u[3:6] ** 2, axis=0), dtype=np.float64)
        return 0.5 * float(e2 + h2)

    def device_property(self, system, key):
        if key not in self._device:
            self._device[key] = system.backend.asarray(getattr(self, key))
        return self._device[key]


# ============================================================================== kernels
@reference_kernel("maxwell_rhs_materials")
def make_rhs_materials(backend, order, dim=3):  # dim: read from the shapes
    """rhs(u, sums, geometry, out, material, alpha, elements=None): du/dt with per-point
    eps, mu, sigma (``HeterogeneousMedium.arrays``); only ``elements`` when given."""
    xp = backend.xp

    def rhs(u, sums, geometry, out, material, alpha, elements=None):
        first, stop = element_bounds(elements, u.shape[1])
        if (first, stop) != (0, u.shape[1]):
            part = slice(first, stop)
            # (the anisotropic arrays have their component first: anisotropy.py)
            sub = {k: (None if v is None else v[:, part] if v.ndim == u.ndim else v[part])
                   for k, v in material.items() if k != "flux_coefficients"}
            rhs(u[:, part], sums[:, part], element_range(geometry, part), out[:, part], sub, alpha)
            return out
        curl_h = curl(xp, u[3:6], geometry)
        minus_curl_e = -curl(xp, u[0:3], geometry)
        normals, lift, factors = geometry["normals"], geometry["lift"], geometry["face_factors"]
        sum_e = sums[0:3] * factors[0][:, :, None, None]
        sum_h = sums[3:6] * factors[1][:, :, None, None]
        m = material
        flux_e = (m["flux_a"] * sum_h - (alpha * m["flux_b"]) * cross(xp, normals, sum_e)) * lift
        flux_h = -(m["flux_c"] * sum_e + (alpha * m["flux_d"]) * cross(xp, normals, sum_h)) * lift
        add_to_faces(curl_h, flux_e, order)
        add_to_faces(minus_curl_e, flux_h, order)
        out[0:3] = curl_h * m["inv_epsilon"]
        if m["sigma_over_epsilon"] is not None:
            out[0:3] -= m["sigma_over_epsilon"] * u[0:3]
        out[3:6] = minus_curl_e * m["inv_mu"]
        return out

    return rhs


__all__ = ["HeterogeneousMedium", "MaterialTables", "material_fields", "parse_material_tables"]
