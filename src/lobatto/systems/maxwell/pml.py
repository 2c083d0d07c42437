"""A complex-frequency-shifted uniaxial PML on faces of a box-shaped domain (``[pml]``).

With the stretching s_d = 1 + sigma_d / (alpha + i omega) per direction d (kappa = 1) the
UPML is a medium (Gedney 1996) with the unchanged eps and mu, so it is impedance matched
and the ordinary DG curl and fluxes apply:

    i omega eps Lambda E = curl H      i omega mu Lambda H = -curl E
    Lambda = diag(s_y s_z / s_x, s_x s_z / s_y, s_x s_y / s_z)

Lambda of component c is a product of three first-order factors, F = 1 + g / (i omega + p):
1/s_c (g = -sigma_c, p = alpha + sigma_c), s_{c+1} and s_{c+2} (g = sigma_d, p = alpha).
A chain w_0 = E_c, w_k = F_k w_{k-1} = w_{k-1} + q_k realises Lambda E_c = w_3 with one
auxiliary field per factor,

    dq_k/dt = g_k w_{k-1} - p_k q_k,

and i omega w_3 = (curl H)_c / eps gives dE_c/dt = (curl H)_c / eps - sum_k dq_k/dt. Every
rate is local to a point; where sigma_d = 0 its factor is 1 (q_k stays 0), so no partial
fraction degenerates when a sigma vanishes or poles coincide. H is the same with mu. A layer
element holds 18 auxiliary fields (3 factors x 6 components). alpha > 0 puts every pole at
-alpha or -(alpha + sigma): no late-time growth (alpha = 0 would leave a double pole at 0
in the corners).

sigma_d(x) = sigma_max (depth / d)^m on the points of a layer's elements, depth the
distance of the point's own coordinate from the layer's inner plane, d the layer's
thickness; sigma_max = -(m + 1) ln(R0) c / (2 d) for a target normal reflection R0.
The layer elements are those whose centroid lies within ``thickness`` (or ``elements``
widths of the elements at the face) of the chosen face of the mesh's bounding box; d is
then the depth of those elements, so the layer ends on element faces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from lobatto.config import Key
from lobatto.config.generic_tables import SIDES
from lobatto.config.ranges import LARGE, SMALL, Range
from lobatto.config.toolkit import Table, key_value, show
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, collective_errors
# (LAYER_VALUES, layer_elements and memory_estimate: importable from here as before)
from lobatto.systems.maxwell.pml_memory import LAYER_VALUES, check_layer_memory, layer_elements, memory_estimate
from lobatto.systems.maxwell.terms import StageTerm
from lobatto.systems.maxwell.terms_cpu import pml_active, term_kernels

DEFAULT_ELEMENTS = 3
DEFAULT_GRADING = 3.0
DEFAULT_REFLECTION = 1e-6
#: default alpha = ALPHA_FRACTION * sigma_max of the thinnest layer (see docs)
ALPHA_FRACTION = 0.05
#: lsrk45 with the layer is stable while cfl / bound + dt (alpha + sigma_max) / RATE_REACH <= 1:
#: random fields in boxes with the layer on all sides, N = 3-7, 1-2 layers, gave 3.2-3.7 at
#: the edge of stability (benchmarks/bench_pml_reflection.py --stiffness); 3.0 keeps a margin
RATE_REACH = 3.0


#: the [pml] numbers, with their valid ranges and why (sides: a list of box sides)
PML_KEYS = {k.name: k for k in (
    Key("elements", "positive_integer", None, "layers of elements",
        range=Range(1, 100, reason="layers of elements at each face: a few absorb to the target reflection, and "
                    "a layer 100 elements deep is past any use (the depth, elements times their width, stays finite)")),
    Key("thickness", "positive", None, "the layer's depth",
        range=Range(SMALL, LARGE, reason="sigma_max follows from c / thickness")),
    Key("grading_order", "nonnegative", DEFAULT_GRADING, "grading order m",
        range=Range(0.0, 20.0, reason="sigma grows as depth^m: a larger m makes the layer a step at its outer face, "
                    "which reflects; 2 to 4 is usual")),
    Key("reflection", "positive", None, "target reflection",
        range=Range(0.0, 1.0, low_open=True, high_open=True, reason="the target normal reflection R0; sigma_max "
                    "grows with -ln R0")),
    Key("sigma_max", "positive", None, "peak conductivity",
        range=Range(SMALL, LARGE, reason="a rate the step is fitted to")),
    Key("alpha", "nonnegative", None, "frequency shift", range=Range(0.0, LARGE, reason="a rate the step is fitted to")),
)}
#: the keys of [pml]: the sides and the numbers
PML = Table("pml", (Key("sides", "list", "all", 'the box sides lined, or "all"'),) + tuple(PML_KEYS.values()))


# ============================================================================ case file
@dataclass(frozen=True)
class PmlSpec:
    """The checked ``[pml]`` table (None where a key was left out and a default is derived)."""

    sides: tuple
    elements: int | None
    thickness: float | None
    grading_order: float
    reflection: float | None
    sigma_max: float | None
    alpha: float | None
    all_sides: bool = False  # sides = "all": a 2-D mesh's four (no z layers there)

    def to_dict(self) -> dict:
        # "all" stays "all": the effective configuration of a 2-D run must run again (six sides would not)
        out = {"sides": "all" if self.all_sides else list(self.sides), "grading_order": self.grading_order}
        for key in ("elements", "thickness", "reflection", "sigma_max", "alpha"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def parse_pml(ctx, table) -> PmlSpec:
    """Check ``[pml]`` (PhysicsSpec.named_tables): one-line errors naming the key."""
    if not isinstance(table, Mapping):
        raise ctx.error(f"[pml] must be a table (sides, elements or thickness, ...), got {show(table)}")
    PML.check(ctx, table)
    sides = table.get("sides", PML["sides"].default)
    all_sides = sides == "all"
    if all_sides:
        sides = SIDES
    expected = 'a list of distinct box sides (xmin, xmax, ymin, ymax, zmin, zmax) or "all"'
    if (not isinstance(sides, (list, tuple)) or not sides or not all(isinstance(s, str) for s in sides)
            or len(set(sides)) != len(sides)):
        raise ctx.bad("pml", "sides", expected, sides)
    for side in sides:
        if side not in SIDES:
            raise ctx.bad("pml", "sides", expected, list(sides), f"'{side}' is not a side")
    if "elements" in table and "thickness" in table:
        raise ctx.error("[pml] sets both elements and thickness; give one (the layer's depth in elements, or a length)")
    if "reflection" in table and "sigma_max" in table:
        raise ctx.error("[pml] sets both reflection and sigma_max; give one (sigma_max follows from reflection)")

    def get(key: Key):
        return key_value(ctx, "pml", table, key) if key.name in table else None

    elements = get(PML_KEYS["elements"])
    thickness = get(PML_KEYS["thickness"])
    if elements is None and thickness is None:
        elements = DEFAULT_ELEMENTS
    order = key_value(ctx, "pml", table, PML_KEYS["grading_order"])
    reflection = get(PML_KEYS["reflection"])
    sigma_max = get(PML_KEYS["sigma_max"])
    if reflection is None and sigma_max is None:
        reflection = DEFAULT_REFLECTION
    alpha = get(PML_KEYS["alpha"])
    return PmlSpec(tuple(sides), elements, thickness, float(order), reflection, sigma_max, alpha, all_sides)


def mesh_sides(spec: PmlSpec, mesh, where: str = "case") -> tuple:
    """The sides lined on this mesh: on a 2-D mesh (z-invariant fields, no z faces) "all" is
    xmin..ymax and a z side is refused."""
    if mesh.dim == 3:
        return spec.sides
    if spec.all_sides:
        return SIDES[:4]
    z = [s for s in spec.sides if s in SIDES[4:]]
    if z:
        shown = "[" + ", ".join(f'"{s}"' for s in spec.sides) + "]"
        raise InputError(f"{where}: [pml] sides = {shown}: {z[0]} is not a side of a 2-D mesh (its fields do not vary "
                         "along z): give x and y sides only (xmin, xmax, ymin, ymax) or \"all\"")
    return spec.sides


# ============================================================================= the layer
def layer_profile(system, spec: PmlSpec, comm=None, where: str = "case"):
    """(elements, sigma (3, m, n, n, n) on them, {side: depth, sigma_max, R0}, alpha), collective.

    Elements and sigma (host arrays) are this rank's; the layer's geometry is found over all
    ranks, so every rank gets the same depths, sigma_max and alpha."""
    coords = system.geometry.coords
    mesh = system.mesh
    count = coords.shape[1]
    flat = coords.reshape(3, count, -1)
    low = allreduce(comm, flat.min(axis=(1, 2)) if count else np.full(3, np.inf), "min")
    high = allreduce(comm, flat.max(axis=(1, 2)) if count else np.full(3, -np.inf), "max")
    tol = 1e-9 * float(np.max(high - low))
    centroid = coords.mean(axis=(2, 3, 4))
    sigma = np.zeros_like(coords)
    in_layer = np.zeros(count, dtype=bool)
    depth_total = np.zeros(3)
    sides = {}
    for side in mesh_sides(spec, mesh, where):
        axis, upper = SIDES.index(side) // 2, side.endswith("max")
        plane = high[axis] if upper else low[axis]
        # distance from the face, per point (inward positive)
        distance = (plane - flat[axis]) if upper else (flat[axis] - plane)
        _check_boundary(system, side, axis, plane, tol, comm, where)
        if spec.thickness is not None:
            reach = spec.thickness
        else:  # elements: layers as wide as the widest element touching the face
            at_face = distance.min(axis=1) < tol if count else np.zeros(0, dtype=bool)
            width = float(allreduce(comm, float(distance[at_face].max(initial=0.0)) if count else 0.0, "max"))
            reach = spec.elements * width
        near = (plane - centroid[axis] if upper else centroid[axis] - plane) < reach if count else in_layer
        depth = float(allreduce(comm, float(distance[near].max(initial=0.0)), "max"))
        if depth <= 0:
            raise InputError(f"{where}: [pml] thickness = {reach:.6g} at {side} holds no element: no element's "
                             "centroid is that close to the face; give a larger thickness")
        # elements outside the layer must not reach into it: its inner side is a plane of faces
        stray = ~near & (distance.min(axis=1) < depth - tol) if count else near
        first = int(allreduce(comm, int(mesh.element_ids[stray].min()) if stray.any() else -1, "max"))
        if first >= 0:
            raise InputError(f"{where}: [pml] the layer at {side} is {depth:.6g} deep, but element {first} reaches "
                             "into it without being a layer element (its centroid is farther out); the layer must end "
                             "on a plane of element faces: choose thickness or elements to fit the mesh")
        depth_total[axis] += depth
        sides[side] = {"depth": depth, "axis": axis, "distance": distance, "near": near}
        in_layer |= near
    extent = high - low
    for axis in range(mesh.dim):  # (a 2-D mesh has no z extent, and no z layers)
        if depth_total[axis] >= extent[axis] - tol:
            raise InputError(f"{where}: [pml] the layers along {'xyz'[axis]} are {depth_total[axis]:.6g} deep in all, "
                             f"which fills the domain ({extent[axis]:.6g} wide); leave an interior")
    speed = system.wave_speed
    m = spec.grading_order
    described = {}
    for side, s in sides.items():
        depth = s["depth"]
        peak = spec.sigma_max
        if peak is None:  # the reflection of a normal plane wave, there and back: R0
            peak = -(m + 1) * math.log(spec.reflection) * speed / (2 * depth)
        into = np.clip(1.0 - s["distance"] / depth, 0.0, 1.0)  # 0 at the inner plane, 1 at the face
        value = peak * into ** m
        value[~s["near"]] = 0.0
        sigma[s["axis"]] += value.reshape(coords.shape[1:])
        described[side] = {"depth": depth, "sigma_max": peak,
                           "reflection_normal": math.exp(-2 * peak * depth / ((m + 1) * speed))}
    peaks = [d["sigma_max"] for d in described.values()]
    alpha = spec.alpha if spec.alpha is not None else ALPHA_FRACTION * min(peaks)
    elements = np.nonzero(in_layer)[0]
    return elements, sigma[:, elements], described, alpha


def _check_boundary(system, side, axis, plane, tol, comm, where) -> None:
    """The side must be a boundary of the mesh (not periodic): some boundary face lies on it."""
    coords = system.geometry.coords
    boundary = system.mesh.face_neighbour < 0  # (E, faces): 6, or a 2-D mesh's 4 edges
    found = 0
    for face in range(system.mesh.num_faces):
        elements = np.nonzero(boundary[:, face])[0]
        if not elements.size:
            continue
        index = (0 if face % 2 == 0 else -1)
        # face f: r (i, last axis), s (j), t (k)
        points = np.take(coords[axis][elements], index, axis=3 - face // 2)
        found += int(np.sum(np.all(np.abs(points - plane) <= tol, axis=(1, 2))))
    if int(allreduce(comm, found)) == 0:
        raise InputError(f"{where}: [pml] sides: {side} is not a boundary of the mesh (no boundary face lies on it; "
                         "is that axis periodic?)")


class PerfectlyMatchedLayer(StageTerm):
    """The UPML's auxiliary fields and its correction to dE/dt, dH/dt on the layer elements."""

    name = "pml"
    aux_count = 18  # q_k for k = 1, 2, 3 (the factors), for each of Ex, Ey, Ez, Hx, Hy, Hz
    aux_names = tuple(f"q{k}_{f}" for k in (1, 2, 3) for f in ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz"))
    energy_bounded = False  # the layer's E, H energy is not a conserved or decaying quantity
    time_dependent = False

    def __init__(self, system, elements, sigma, alpha: float, described: dict | None = None,
                 grading_order: float = DEFAULT_GRADING):
        self.setup_storage(system, elements)
        self.alpha, self.described, self.grading_order = float(alpha), described or {}, grading_order
        self.one_pass = self.compiled = None
        self.step_fit = None  # (largest rate, cfl bound) when the step is fitted to the layer
        self.stretched = []  # dispersive terms driven by Lambda E on shared elements (DispersiveTerm.stretch_with)
        if not self.count:
            return
        to_dev = system.backend.asarray
        sigma = np.asarray(sigma, dtype=np.float64)
        # per factor k: gain g_k and pole p_k for the three components (c, c+1, c+2 cyclic);
        # shape (1, 3, m, n, n, n) broadcasts over E and H
        roll1, roll2 = sigma[[1, 2, 0]], sigma[[2, 0, 1]]
        self.gain = [to_dev(-sigma)[None], to_dev(roll1)[None], to_dev(roll2)[None]]
        self.pole = to_dev(self.alpha + sigma)[None]
        # on CUDA the whole finish is one kernel (pml_cuda.py), the array operations the reference
        if system.backend.name == "cuda":
            from lobatto.systems.maxwell.pml_cuda import PmlFinish

            self.one_pass = PmlFinish(system.backend, system.order, sigma, dim=system.mesh.dim)
            self.writes_traces = self.folds = True  # the fused path's calls (terms.py)
            self._sigma = to_dev(np.ascontiguousarray(sigma))
        # on the CPU: compiled kernels (terms_cpu.py), one pass over the layer per stage
        self.compiled = term_kernels(system)
        if self.compiled is not None:
            self._sigma = np.ascontiguousarray(sigma, dtype=system.backend.dtype)
            self._active = pml_active(self._sigma)  # the directions with sigma != 0, per element
            self.folds_in_stage = True

    def hand_over_stretch(self) -> None:
        """Before this layer's fields step: the poles on its elements read Lambda E - E from
        the stage's input (dispersive.py)."""
        for term in self.stretched:
            term.take_stretch(self.aux)

    def prepare(self, u, t) -> None:
        self.hand_over_stretch()
        if self.compiled is not None and self.count:
            self.compiled.pml(u, u, self.rate, self.aux, self.aux_residual, self.aux_rate, self._sigma, self._active,
                              self.elements, self.alpha, False, 0.0, 0.0, 0.0)
        elif self.one_pass is None:
            super().prepare(u, t)

    def finish(self, u, residual, a, b, dt, traces=None) -> None:
        if self.compiled is not None and self.count:
            return self.compiled.finish(u, residual, self.rate, self.aux, self.aux_residual, self.aux_rate,
                                        self.elements, 6, a, b, dt)
        if self.one_pass is None or not self.count:
            return super().finish(u, residual, a, b, dt)
        self.one_pass(u, residual, self.aux, self.aux_residual, self._sigma, self.device_elements, self.alpha, a, b, dt,
                      traces, self.system.device_geometry["normals"] if traces is not None else None)

    def fold(self, u, residual, t, a, b, dt) -> None:
        self.hand_over_stretch()
        if self.compiled is not None and self.count:
            self.compiled.pml(u, residual, self.rate, self.aux, self.aux_residual, self.aux_rate, self._sigma,
                              self._active, self.elements, self.alpha, True, a, b, dt)
        elif self.count:
            self.one_pass(u, residual, self.aux, self.aux_residual, self._sigma, self.device_elements, self.alpha, a, b,
                          dt, fold=True)

    def limit_time_step(self, dt: float, cfl: float) -> float:
        if self.step_fit is None:
            return dt
        rate, bound = self.step_fit
        return layer_time_step(dt, rate, cfl, bound)

    @property
    def largest_rate(self) -> float:
        """alpha + the largest sigma_max of the sides (the same on every rank)."""
        return self.alpha + max((d["sigma_max"] for d in self.described.values()), default=0.0)

    def rates(self, u, t, s_out, r_out) -> None:
        shape = (2, 3) + s_out.shape[1:]
        w = self.take(u)[0:6].reshape(shape)  # E, H as (2, 3, ...)
        q = self.aux.reshape((3,) + shape)
        r = r_out.reshape((3,) + shape)
        alpha = self.alpha
        # factor 1 (1/s_c): dq1 = -sigma_c w0 - (alpha + sigma_c) q1
        r[0] = self.gain[0] * w
        r[0] -= self.pole * q[0]
        # factors 2, 3 (s_d): dq_k = sigma_d w_{k-1} - alpha q_k, w_k = w_{k-1} + q_k
        w = w + q[0]
        r[1] = self.gain[1] * w
        r[1] -= alpha * q[1]
        w += q[1]
        r[2] = self.gain[2] * w
        r[2] -= alpha * q[2]
        s = s_out.reshape(shape)
        s[...] = r[0]
        s += r[1]
        s += r[2]
        s *= -1.0

    def describe(self, comm=None) -> dict:
        out = super().describe(comm)
        out.update(sides=self.described, alpha=self.alpha, grading_order=self.grading_order)
        return out


def layer_time_step(dt_plain: float, rate: float, cfl: float, bound: float) -> float:
    """The step that keeps ``cfl`` (a step dt_plain = cfl h / c without the layer) the same
    fraction of the stability bound with the layer's largest rate (alpha + sigma_max):
    dt c / h / bound + dt rate / RATE_REACH <= cfl / bound (measured, see RATE_REACH)."""
    return dt_plain / (1.0 + bound * dt_plain * rate / (cfl * RATE_REACH))


def fit_time_step(case, term, system, comm=None) -> None:
    """The layer's rates are stiff (alpha + sigma_max ~ c / d times 10-30), and with the wave
    operator they shrink the stable step: from [time] cfl, the term shortens the system's
    steps to fit (its limit_time_step, which MaxwellSystem.stable_time_step asks); a [time]
    dt too long is refused."""
    time, rate = case.time, term.largest_rate
    bound = system.spec.cfl_bounds.get((case.discretization.flux, time.integrator))
    if bound is None or not rate > 0:
        return
    if time.dt is None:  # (the system's dt_plain already carries a Galerkin step factor)
        term.step_fit = (rate, bound)
        return
    bound *= system.cfl_bound_factor()  # a given dt: the wave's own bound (the Galerkin form's is smaller)
    spacing = float(allreduce(comm, system.geometry.min_spacing, "min"))
    cfl = time.dt * system.wave_speed / spacing
    if time.cfl_check and cfl / bound + time.dt * rate / RATE_REACH > 1 + 1e-12:
        stable = layer_time_step(bound * spacing / system.wave_speed, rate, bound, bound)
        raise InputError(f"{case.source}: [time] dt = {time.dt:.4g} is too long for the [pml] layer (its largest rate "
                         f"alpha + sigma_max = {rate:.4g}): the stable step is about {stable:.4g}; lower dt, or give "
                         "cfl instead (the step is then fitted to the layer), or make the layer thicker")


def build_pml(case, system, comm=None) -> list:
    """TERM_BUILDERS entry: the [pml] layer of a case, or nothing."""
    spec = case.tables.get("pml")
    if spec is None:
        return []
    # the poles link to a layer built before them and step after it in each stage, reading the
    # stretch it hands over (dispersive.py's stretch_with): the order of system.TERM_BUILDERS
    if any(hasattr(t, "stretch_with") for t in system.terms):
        raise RuntimeError("the [pml] layer must be built before the dispersive poles (system.TERM_BUILDERS)")
    where = getattr(case, "source", "case")
    elements, sigma, described, alpha = layer_profile(system, spec, comm, where)
    with collective_errors(comm):  # the layer found: its arrays fit (a file mesh's is known only now)
        check_layer_memory(system, spec, len(elements), where)
    term = PerfectlyMatchedLayer(system, elements, sigma, alpha, described, spec.grading_order)
    fit_time_step(case, term, system, comm)
    return [term]
