"""Sources of the Maxwell system: volume currents and point dipoles (``[source.<name>]``).

    eps dE/dt = curl H - J + ...        mu dH/dt = -curl E - M + ...

* ``current``: J(x, y, z, t) = (Jx, Jy, Jz), expressions evaluated on the backend at every
  stage time, on all elements or only on those meeting the box [lower, upper] (J is zero
  outside it).
* ``electric_dipole`` / ``magnetic_dipole``: J (resp. the magnetic current M) = amplitude *
  direction * w(t) * delta(x - position), with a waveform w. On a 2-D mesh it is a line
  source along z through (x0, y0) (z0 ignored): delta(x - x0) delta(y - y0), the amplitude a
  current (moment) per unit depth; direction z drives TM (Ez), an xy direction TE. The delta is discretised by
  the consistent discrete delta of the element that holds the point (the lowest global id
  among those that do, as for probes): nodal values phi_p(x0) / M_p, so that
  sum_p M_p delta_p g_p = g(x0) for every nodal g (with ``volume_form = "galerkin"`` its own
  mass: delta = M_W^-1 phi(x0), galerkin.py, so that g . M_W delta = g(x0)).

Both are divided by the local eps (J) or mu (M); in a diagonal medium (anisotropy.py) each
component c by its own eps_c or mu_c: the dipole's profile and the current's scale are then
(3, ...) arrays.

Every stage adds the source term S(t) on the affected elements only, after the rhs or the
stage kernel (a 2N-storage stage is linear in L: residual += dt S, u += b dt S). The sources
are a StageTerm (source_term.py), so on CUDA they ride on the fused whole-step path, folded
into the residual before the stage kernel where lsrk45's a is not 0, and a step is recorded
as a CUDA graph (the stage times come from a device clock). With a source the system depends
on t and its energy is not bounded (the driver's energy stop is off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from lobatto.config import Key
from lobatto.config.ranges import (COORDINATES, LARGE, Range, box_length, check_expression_values,
                                   check_vector, unit_vector)
from lobatto.config.toolkit import Table, choice, key_value, show
from lobatto.errors import InputError
from lobatto.mesh.locate import candidates, element_boxes, newton, tensor_weights
from lobatto.machine.parallel import allreduce, collective_errors
from lobatto.mesh.topology import element_shape
from lobatto.systems.maxwell.waveforms import AMPLITUDE, DIRECTION, WAVEFORM_KEYS, WAVEFORMS, check_waveform, waveform_value

SOURCE_TYPES = ("current", "electric_dipole", "magnetic_dipole", "plane_wave")  # plane_wave: tfsf.py
#: a current density's values (a constant, or an expression's on the mesh at 0 and t_end): as amplitude's
CURRENT_RANGE = Range(-LARGE, LARGE, reason="J/epsilon is added to dE/dt, in single precision too")
CURRENT_KEYS = tuple(Key(f"J{a}", "expression_t", "0", f"current density, {a} component", range=CURRENT_RANGE)
                     for a in "xyz")
#: the keys every [source.<name>] has
TYPE = Key("type", "choice", None, "what the source is", choices=SOURCE_TYPES, required=True)
#: the keys of a [source.<name>] of type "current"
CURRENT = Table("source.<name>", (TYPE,) + CURRENT_KEYS + (
    Key("lower", "vector", None, "lower corner of the box holding the current", range=COORDINATES),
    Key("upper", "vector", None, "upper corner of that box", range=COORDINATES)))
#: the keys of a dipole's [source.<name>]; a waveform takes some of WAVEFORM_KEYS (WAVEFORMS)
DIPOLE = Table("source.<name>", (
    TYPE,
    Key("position", "vector", None, "the point x0, a list of 3 numbers ([x0, y0] on a 2-D mesh)", required=True,
        range=COORDINATES),
    Key("direction", "vector", None, "the dipole's direction, a list of 3 numbers", required=True, range=DIRECTION),
    AMPLITUDE,
    Key("waveform", "choice", None, "w(t)", choices=tuple(WAVEFORMS), required=True),
) + tuple(WAVEFORM_KEYS.values()))
NOT_FOUND = np.iinfo(np.int64).max


# Case file ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceSpec:
    """One checked ``[source.<name>]`` table: its type and its values by key."""

    name: str
    type: str
    values: dict

    def to_dict(self) -> dict:
        plain = {k: (v.text if hasattr(v, "text") else list(v) if isinstance(v, tuple) else v)
                 for k, v in self.values.items()}
        return {"type": self.type, **plain}


class SourceTables(tuple):
    """``Case.tables["source"]``: the case's sources, in the file's order."""

    def to_dict(self) -> dict:
        return {s.name: s.to_dict() for s in self}


def parse_sources(ctx, given) -> SourceTables:
    """Check the ``[source]`` tables (PhysicsSpec.named_tables): one-line errors naming the key."""
    if not isinstance(given, Mapping):
        raise ctx.error(f"[source] must hold one table per source, for example [source.antenna], got {show(given)}")
    return SourceTables(_parse_one(ctx, name, table) for name, table in given.items())


def _parse_one(ctx, name: str, table: Any) -> SourceSpec:
    where = f"source.{name}"
    types = ", ".join(f'"{t}"' for t in SOURCE_TYPES)
    if not isinstance(table, Mapping):
        raise ctx.error(f"[{where}] must be a table with type = one of {types}, got {show(table)}")
    if "type" not in table:
        raise ctx.error(f"[{where}] type is required: one of {types}")
    kind = choice(ctx, where, table, "type", TYPE.choices, TYPE.default)
    if kind == "plane_wave":  # total-field/scattered-field injection, a StageTerm (tfsf.py)
        from lobatto.systems.maxwell.tfsf import parse_plane_wave

        return SourceSpec(name, kind, parse_plane_wave(ctx, where, table))
    if kind == "current":
        CURRENT.check(ctx, table, where)
        values = {k.name: key_value(ctx, where, table, k) for k in CURRENT_KEYS}
        if ("lower" in table) != ("upper" in table):
            raise ctx.error(f"[{where}] lower and upper go together (the box holding the current)")
        if "lower" in table:
            length = box_length(ctx, where, table)
            lower, upper = (check_vector(ctx, where, k, table[k], CURRENT[k].range, length) for k in ("lower", "upper"))
            if not all(a < b for a, b in zip(lower, upper)):
                raise ctx.bad(where, "upper", "above lower in every coordinate", list(upper))
            values.update(lower=lower, upper=upper)
        return SourceSpec(name, kind, values)
    if "waveform" not in table:
        raise ctx.error(f"[{where}] waveform is required: one of " + ", ".join(f'"{w}"' for w in WAVEFORMS))
    waveform = choice(ctx, where, table, "waveform", DIPOLE["waveform"].choices, None)
    takes = WAVEFORMS[waveform]
    for key in WAVEFORM_KEYS:
        if key in table and key not in takes:
            raise ctx.error(f"[{where}] {key} does not apply to waveform \"{waveform}\" (it takes {', '.join(takes)})")
    DIPOLE.check(ctx, table, where, only=("type", "position", "direction", "amplitude", "waveform") + takes)
    for key in ("position", "direction") + takes:
        if key not in table:
            doc = WAVEFORM_KEYS[key].doc if key in WAVEFORM_KEYS else "a list of 3 numbers"
            raise ctx.error(f"[{where}] {key} is required ({doc})")
    # position [x0, y0]: a 2-D mesh's line source (as a probe's point); refused on a 3-D mesh at set-up
    length = 2 if isinstance(table["position"], list) and len(table["position"]) == 2 else 3
    values = {k: check_vector(ctx, where, k, table[k], DIPOLE[k].range, length if k == "position" else 3)
              for k in ("position", "direction")}
    if unit_vector(values["direction"]) is None:
        raise ctx.bad(where, "direction", "a nonzero vector", list(values["direction"]))
    values["amplitude"] = key_value(ctx, where, table, AMPLITUDE)
    values["waveform"] = waveform
    values.update({key: key_value(ctx, where, table, WAVEFORM_KEYS[key]) for key in takes})
    return SourceSpec(name, kind, values)


# Run time -------------------------------------------------------------------------------
def box_corners(values) -> tuple:
    """A current's box as 3-vectors: a rectangle [x, y] (2-D) spans every z (its z is not read)."""
    lower, upper = (list(map(float, values[k])) for k in ("lower", "upper"))
    return np.array(lower + [-np.inf] * (3 - len(lower))), np.array(upper + [np.inf] * (3 - len(upper)))


def dipole_position(values) -> np.ndarray:
    """A dipole's point as 3 coordinates (z = 0 where the case gave [x0, y0]: a 2-D line source)."""
    point = [float(c) for c in values["position"]]
    return np.array(point + [0.0] * (3 - len(point)))


def locate_owner(system, point, comm):
    """(local element or None, reference coordinates) of the element with the lowest global
    id holding ``point`` (collective); None on the ranks that do not own it."""
    coords, ids = system.geometry.coords, system.mesh.element_ids
    near = candidates(element_boxes(coords), point)
    best, found = NOT_FOUND, None
    if near.size:
        result = newton(coords, near[np.argsort(ids[near], kind="stable")], point)
        if result.inside.any():
            first = int(np.argmax(result.inside))
            found = (int(result.elements[first]), result.reference[first])
            best = int(ids[found[0]])
    owner = int(allreduce(comm, np.array([best], dtype=np.int64), "min")[0])
    if owner == NOT_FOUND:
        return None, None, False
    if found is not None and best == owner:
        return found[0], found[1], True
    return None, None, True


class MaxwellSources:
    """The sources of one rank: S(t) on the affected elements (the stage term around the
    stage kernel is source_term.SourceTerm)."""

    def __init__(self, specs, system, comm=None, where: str = "case"):
        backend, geometry = system.backend, system.geometry
        xp, n = backend.xp, system.order + 1
        self.specs, self.backend = tuple(specs), backend
        currents, dipoles, elements = [], [], []
        for spec in self.specs:
            if spec.type == "current":
                on = self._current_elements(spec, geometry)
                self._check_box_holds_points(spec, geometry, on, comm, where)
                if on.size:
                    currents.append((spec, on))
                    elements.append(on)
                continue
            v = spec.values  # on a 2-D mesh the position's z is ignored: a line source along z
            element, reference, inside = locate_owner(system, dipole_position(v), comm)
            if not inside:
                shown = ", ".join(repr(float(c)) for c in v["position"])
                raise InputError(f"{where}: [source.{spec.name}] position = [{shown}] is outside the mesh: "
                                 "no element holds it")
            if element is not None:
                dipoles.append((spec, element, reference))
                elements.append(np.array([element]))
        self.elements = np.unique(np.concatenate(elements)) if elements else np.zeros(0, dtype=np.int64)
        m = self.elements.size
        self.index = _index(self.elements, xp)
        position = {int(e): i for i, e in enumerate(self.elements)}
        # the fields any source drives: E (0:3), H (3:6) or both; the buffer holds only those
        magnetic = [d[0].type == "magnetic_dipole" for d in dipoles]
        first = 3 if magnetic and all(magnetic) and not currents else 0
        self.components = slice(first, 6 if any(magnetic) else 3)
        self.buffer = backend.zeros((self.components.stop - first, m) + element_shape(system.mesh.dim, n - 1)) if m else None
        # per-point eps and mu where the system has a heterogeneous medium (materials.py)
        medium = getattr(system, "medium", None)

        def inverse(name, elements):
            """1/eps or 1/mu on ``elements``: a number, per point, or (3, ...) per component
            (a diagonal medium, anisotropy.py: J_c enters dE_c/dt = (curl H - J)_c / eps_c)."""
            if medium is None:
                return 1.0 / getattr(system, name)
            value = getattr(medium, name)
            return 1.0 / (value[:, elements] if value.ndim == 5 else value[elements])

        # current: (expressions, coordinates of its elements, 1/eps times the box's mask there
        # (a number where both are uniform; (3, ...) per component in a diagonal medium), where
        # they sit in the buffer)
        self.currents, self.current_names = [], []
        for spec, on in currents:
            x = geometry.coords[:, on]
            scale = inverse("epsilon", on)
            if "lower" in spec.values:
                lo, up = (c.reshape(3, 1, 1, 1, 1) for c in box_corners(spec.values))
                inside = np.all((x >= lo) & (x <= up), axis=0)
                if not inside.all():
                    scale = scale * inside
            scale = backend.asarray(scale) if np.ndim(scale) else float(scale)
            slot = _index(np.array([position[int(e)] for e in on]), xp)
            self.currents.append(([spec.values[f"J{a}"] for a in "xyz"], backend.asarray(x), scale, slot))
            self.current_names.append(spec.name)
        # dipole: profile direction * amplitude * phi_p(x0) / (M_p * eps or mu) in its element
        self.dipoles = []
        for spec, element, reference in dipoles:
            v = spec.values
            # (n, n, n); (1, n, n) on a 2-D mesh, where the mass is per unit depth: the discrete
            # delta in x, y of a line source along z, amplitude per unit depth (docs, "2-D")
            phi = tensor_weights(system.order, reference, system.mesh.dim)[0]
            operator = getattr(system, "galerkin", None)
            electric = spec.type == "electric_dipole"
            scale = inverse("epsilon" if electric else "mu", element)
            if operator is None:  # the lumped (diagonal) mass
                delta = phi / geometry.mass[element]
            elif operator.medium is None:  # the Galerkin form's own mass (galerkin.py): sum_p (M_W g)_p delta_p = g(x0) too
                delta = np.asarray(backend.to_host(operator.inverse_mass(xp, backend.asarray(phi), element)),
                                   dtype=np.float64)
            else:  # with a medium, M_{eps_c W}^-1 phi(x0) per component: eps is in the mass (galerkin_media.py)
                weights = operator.medium.inverse_weights[0:3] if electric else operator.medium.inverse_weights[3:6]
                delta = np.asarray(backend.to_host(operator.inverse_mass(
                    xp, backend.asarray(np.broadcast_to(phi, (3,) + phi.shape)), element, weights)), dtype=np.float64)
                scale = 1.0
            d = np.array(unit_vector(v["direction"]))
            with np.errstate(over="ignore", invalid="ignore"):  # checked below, on every rank
                # (n, n, n), or (3, n, n, n) in a diagonal medium: each component over its eps_c
                delta = delta * v["amplitude"] * scale
            field = (0 if electric else 3) - self.components.start
            self.dipoles.append((spec, field, position[element], delta, d))
        self._check_profiles(backend, comm, where)
        self.dipoles = [(spec.values, field, slot, backend.asarray(d[:, None, None, None] * delta))
                        for spec, field, slot, delta, d in self.dipoles]
        self._check_finite(0.0, comm, where)

    def _check_box_holds_points(self, spec, geometry, on, comm, where) -> None:
        """A current's box must hold GLL points of the mesh on some rank (collective): one
        outside the mesh, or between the points, would drive nothing."""
        if "lower" not in spec.values:
            return
        lo, up = (c.reshape(3, 1, 1, 1, 1) for c in box_corners(spec.values))
        x = geometry.coords[:, on]
        held = int(np.count_nonzero(np.all((x >= lo) & (x <= up), axis=0))) if on.size else 0
        if allreduce(comm, held) == 0:
            shown = lambda key: "[" + ", ".join(f"{c:g}" for c in spec.values[key]) + "]"
            error = InputError(f"{where}: [source.{spec.name}] the current's box lower = {shown('lower')}, upper = "
                               f"{shown('upper')} holds no point of the mesh (it lies outside the mesh, or between "
                               "its GLL points), so the current would drive nothing; move or widen the box")
            error.collective = comm is not None
            raise error

    def _check_profiles(self, backend, comm, where) -> None:
        """Each dipole's profile amplitude / (mass eps or mu) at its point must be finite and
        square in the working precision (collective: the owner's value, reduced)."""
        limit = float(np.sqrt(np.finfo(backend.dtype).max)) / 16
        mine = {spec.name: float(np.max(np.abs(delta))) for spec, _, _, delta, _ in self.dipoles}
        for spec in self.specs:
            if spec.type == "current":
                continue
            size = mine.get(spec.name, 0.0)
            size = allreduce(comm, size if size == size else math.inf, "max")
            if not size < limit:
                error = InputError(f"{where}: [source.{spec.name}] amplitude = {spec.values['amplitude']:.6g} gives "
                                   f"the point source a density of {size:.3g} (amplitude / (mass "
                                   f"{'epsilon' if spec.type == 'electric_dipole' else 'mu'})), beyond {limit:.3g} "
                                   f"({backend.precision}); lower the amplitude (or rescale the units)")
                error.collective = comm is not None
                raise error

    @staticmethod
    def _current_elements(spec, geometry) -> np.ndarray:
        """The elements that share a volume with the current's box (all without a box); an
        element that only touches it leaves its face points to the element inside."""
        count = geometry.coords.shape[1]
        if "lower" not in spec.values:
            return np.arange(count)
        x = geometry.coords.reshape(3, count, -1)
        lo, up = (c[:, None] for c in box_corners(spec.values))
        return np.nonzero(np.all((x.max(axis=2) > lo) & (x.min(axis=2) < up), axis=0))[0]

    def _check_finite(self, t, comm=None, where: str = "case"):
        """Each current's J within CURRENT_RANGE at time t (an expression's values are known only on
        the mesh), and J/eps finite, on every rank (collective)."""
        xp = self.backend.xp
        with collective_errors(comm), np.errstate(all="ignore"):  # a value out of range is the finding
            for name, (expressions, (x, y, z), _, _) in zip(self.current_names, self.currents):
                for a, e in zip("xyz", expressions):
                    if not e.is_constant:  # (a constant was checked with the case)
                        values = e.evaluate(xp, x=x, y=y, z=z, t=float(t))
                        check_expression_values(values, CURRENT_RANGE, f"{where}: [source.{name}] J{a}", e.text,
                                                float(t), xp)
        fine = True
        if self.currents:
            with np.errstate(all="ignore"):  # an overflow is the finding reported here
                fine = bool(self.backend.xp.isfinite(self.rate(t, dipoles=False)).all())
        if not allreduce(comm, int(fine), "min"):
            names = ", ".join(f"[source.{spec.name}]" for spec in self.specs if spec.type == "current")
            error = InputError(f"{where}: {names}: the current density J/epsilon is not finite at t = {t:.6g} at some "
                               "points")
            error.collective = comm is not None
            raise error

    def check_times(self, t_end: float, comm=None, where: str = "case") -> None:
        """Before the run: the currents and the dipoles' waveforms are finite at its end too
        (collective)."""
        for spec in self.specs:
            if spec.type != "current":
                check_waveform(spec, (0.0, t_end), where)
        self._check_finite(t_end, comm, where)

    def rate(self, t: float, dipoles: bool = True):
        """S(t) on the affected elements (components, m, n, n, n): -J/eps and -M/mu for the
        fields ``self.components``; None if none here. ``t`` a number, or a device array of
        one value (the fused path's stage clock: then the currents only, dipoles=False)."""
        buffer = self.buffer
        if buffer is None:
            return None
        xp, t = self.backend.xp, (t if hasattr(t, "shape") else float(t))
        buffer[...] = 0
        for expressions, (x, y, z), scale, slot in self.currents:
            for c, e in enumerate(expressions):
                if e.is_constant and float(e.evaluate(np)) == 0.0:
                    continue
                value = e.evaluate(xp, x=x, y=y, z=z, t=t)
                value *= scale[c] if getattr(scale, "ndim", 0) == 5 else scale  # (in place: every stage)
                buffer[c, slot] -= value
        for v, field, slot, profile in self.dipoles if dipoles else ():
            buffer[field:field + 3, slot] -= waveform_value(v["waveform"], v, t) * profile
        return buffer

    def add_to_rhs(self, out, t) -> None:
        rate = self.rate(t)
        if rate is not None:
            out[self.components, self.index] += rate

    def add_to_stage(self, u, residual, t, b, dt) -> None:
        """After a 2N-storage stage without S: residual += dt S; u += b dt S."""
        rate = self.rate(t)
        if rate is None:
            return
        rate *= dt
        residual[self.components, self.index] += rate
        rate *= b
        u[self.components, self.index] += rate

    def describe(self, comm=None, path: str = "stages") -> dict:
        """For the run summary (collective); ``path`` the stepper's (Stepper.path)."""
        how = ("on: the sources are a stage term of the fused whole-step path" if path == "whole-step" else
               f"off: this run steps by {path} (the sources are added around each stage)")
        return {"sources": [{"name": s.name, **s.to_dict()} for s in self.specs],
                "elements_with_sources": int(allreduce(comm, int(self.elements.size))), "whole_step": how}


def _index(positions: np.ndarray, xp):
    """A slice where the positions are contiguous (views, no gather), else a device index."""
    positions = np.asarray(positions, dtype=np.int64)
    if positions.size and np.array_equal(positions, np.arange(positions[0], positions[0] + positions.size)):
        return slice(int(positions[0]), int(positions[0]) + positions.size)
    return xp.asarray(positions)
