"""CUDA kernels for the terms around the Maxwell stage (terms.py), where their array-operation
versions would cost more than the step they ride on.

* ``ListedTraces``: the face traces (-n x E, -n x H) of a list of elements, read from and
  written to the full arrays in place (the fused whole-step path rewrites the traces of the
  elements a term changed; gathering them into compact copies and back cost more).
* ``PmlFinish``: the PML's whole ``finish`` in one pass over the layer's points
  (pml.py): the stage's input state is u - b residual (a 2N-storage stage has just added b
  residual to it), from which S and the auxiliary rates follow pointwise; then residual,
  u and the auxiliary fields are updated. A factor whose sigma is 0 keeps its auxiliary
  field at 0, so it is neither read nor written: a face layer touches 6 of the 18.
* ``SurfaceAdd``: the TF/SF correction with the incident waveform evaluated in the kernel.
* ``DiscreteIncidentStage``: the stage of TF/SF's discrete incident wave (tfsf_discrete.py).

They rewrite, on the fused path, the traces of the points they change, so the terms need no
separate trace pass (ListedTraces) after them.

The array-operation versions (terms.py, pml.py) are the reference; tests/unit/
test_maxwell_terms_gpu.py and test_maxwell_pml_gpu.py compare.
"""

from __future__ import annotations

import numpy as np

from lobatto.mesh.topology import NUM_FACES, face_slice

_TRACES = r"""
const long long n2 = N2, n3 = N3;
const long long el = i / (6 * n2);
const long long rest = i - el * 6 * n2;          // f * n2 + ab
const long long e = elements[el];
const long long vol = e * n3 + face_points[rest];
const long long fs = E * n3;                      // field stride of u
const long long fp = e * 6 * n2 + rest;           // this face point in (E, 6, n, n)
const long long ts = E * 6 * n2;                  // component stride of traces and normals
const T nx = normals[fp], ny = normals[ts + fp], nz = normals[2 * ts + fp];
for (int h = 0; h < 2; ++h) {
    const T vx = u[(3 * h) * fs + vol], vy = u[(3 * h + 1) * fs + vol], vz = u[(3 * h + 2) * fs + vol];
    out[(3 * h) * ts + fp] = -(ny * vz - nz * vy);
    out[(3 * h + 1) * ts + fp] = -(nz * vx - nx * vz);
    out[(3 * h + 2) * ts + fp] = -(nx * vy - ny * vx);
}
"""

_PML_FINISH = r"""
// one thread per point of a layer element whose non-zero sigma directions are MASK (bits x, y, z)
const long long n3 = N3;
const long long gi = i / n3, p = i - gi * n3;
const long long el = group[gi];                     // in the layer's compact arrays
const long long e = elements[el];
const long long g = e * n3 + p, at = el * n3 + p;
const long long fs = E * n3, ms = M * n3;
T sig[3];
#pragma unroll
for (int d = 0; d < 3; ++d) sig[d] = ((MASK >> d) & 1) ? sigma[d * ms + at] : T(0);
// every load before any store: the raw arrays may alias as far as the compiler knows
T uu[6], res[6], q[3][6], qres[3][6];
#pragma unroll
for (int f = 0; f < 6; ++f) {
    uu[f] = u[f * fs + g];
    res[f] = residual[f * fs + g];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        if (ACTIVE(k, f)) {
            q[k][f] = aux[(k * 6 + f) * ms + at];
            qres[k][f] = aux_residual[(k * 6 + f) * ms + at];
        }
    }
}
#pragma unroll
for (int f = 0; f < 6; ++f) {
    T w = FOLD ? uu[f] : uu[f] - b * res[f];  // the stage's input state
    T s = 0;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        if (!ACTIVE(k, f)) continue;  // sigma is 0 there: its auxiliary field stays 0
        const T sd = sig[(f % 3 + k) % 3];
        const T rate = (k == 0) ? (-sd * w - (alpha + sd) * q[k][f]) : (sd * w - alpha * q[k][f]);
        w += q[k][f];
        s -= rate;
        const T r = a * qres[k][f] + dt * rate;
        aux_residual[(k * 6 + f) * ms + at] = r;
        aux[(k * 6 + f) * ms + at] = q[k][f] + b * r;
    }
    residual[f * fs + g] = res[f] + scale * s;
    if (!FOLD) {
        uu[f] += (b * dt) * s;
        u[f * fs + g] = uu[f];
    }
}
if (!FOLD && write_traces) {
    TRACES_OF_POINT
}
"""

# the traces (-n x E, -n x H) at the face points of volume point p of element e, from uu[6]:
# point_faces (n^3, 3) lists the point's slots f n^2 + ab on its element's faces (-1: none)
_TRACES_OF_POINT = r"""
const long long ts = E * 6 * N2;
#pragma unroll
for (int slot = 0; slot < 3; ++slot) {
    const long long fslot = point_faces[p * 3 + slot];
    if (fslot < 0) break;
    const long long fp = e * 6 * N2 + fslot;
    const T nx = normals[fp], ny = normals[ts + fp], nz = normals[2 * ts + fp];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const T vx = uu[3 * h], vy = uu[3 * h + 1], vz = uu[3 * h + 2];
        traces[(3 * h) * ts + fp] = -(ny * vz - nz * vy);
        traces[(3 * h + 1) * ts + fp] = -(nz * vx - nx * vz);
        traces[(3 * h + 2) * ts + fp] = -(nx * vy - ny * vx);
    }
}
"""


def face_point_table(order: int) -> np.ndarray:
    """(6 n^2,) offsets in an element's n^3 points of face f's point (a, b), at f n^2 + a n + b."""
    n = order + 1
    volume = np.arange(n**3).reshape(n, n, n)
    return np.concatenate([volume[face_slice(f, order)].reshape(-1) for f in range(NUM_FACES)]).astype(np.int64)


class ListedTraces:
    """traces(u, normals, out, elements, count): the traces of ``count`` listed elements."""

    def __init__(self, backend, order: int):
        n = order + 1
        xp = backend.xp
        self.n2, self.xp = n * n, xp
        self.table = backend.asarray(face_point_table(order), dtype=np.int64)
        source = _TRACES.replace("N2", str(n * n)).replace("N3", str(n**3))
        self.kernel = xp.ElementwiseKernel(
            "raw T u, raw T normals, raw int64 elements, raw int64 face_points, int64 E", "raw T out", source,
            f"lobatto_listed_traces_{order}")

    def __call__(self, u, normals, out, elements, count: int):
        if count:
            # flat views: a raw CArray of many dimensions unravels every index with divisions
            self.kernel(u.reshape(-1), normals.reshape(-1), elements, self.table, np.int64(u.shape[1]), out.reshape(-1),
                        size=count * 6 * self.n2)


def point_face_table(order: int) -> np.ndarray:
    """(n^3, 3): for each of an element's points, its slots f n^2 + ab on the element's faces
    (an interior point has none, a face point one, an edge point two, a corner three), -1 after."""
    n = order + 1
    table = np.full((n**3, 3), -1, dtype=np.int64)
    filled = np.zeros(n**3, dtype=np.int64)
    for slot, point in enumerate(face_point_table(order)):
        table[point, filled[point]] = slot
        filled[point] += 1
    return table


class PointUpdate:
    """What the terms' kernels share. Each is compiled twice (FOLD): after the stage kernel it
    adds dt S to the residual and b dt S to u, and given the fused path's trace buffer it
    rewrites the traces of the points it changed; before the stage kernel, for a stage whose
    a is not 0, it adds (dt / a) S to the residual alone, which the kernel's a * residual turns
    into dt S, so u is neither read back nor its traces rewritten."""

    def setup_points(self, backend, order: int) -> None:
        self.unused = backend.zeros(1)  # stands for traces and normals when none are written
        self.point_faces = backend.asarray(point_face_table(order).reshape(-1), dtype=np.int64)

    @staticmethod
    def compile_both(xp, params: str, outputs: str, source: str, name: str, **options) -> dict:
        """{fold: kernel} for fold False and True."""
        return {fold: xp.ElementwiseKernel(params, outputs, source.replace("FOLD", "true" if fold else "false"),
                                           f"{name}_{'fold' if fold else 'finish'}", **options)
                for fold in (False, True)}

    def trace_arguments(self, traces, normals, fold: bool, a, dt) -> tuple:
        """(write flag, traces, normals, scale of S in the residual) for a launch."""
        write = traces is not None and not fold
        if not write:
            traces = normals = self.unused
        return np.int32(write), traces.reshape(-1), normals.reshape(-1), (dt / a if fold else dt)


class PmlFinish(PointUpdate):
    """finish(u, residual, aux, aux_residual, sigma, elements, alpha, a, b, dt, traces) for
    pml.py's layout: aux (3 factors, 6 components, m, n, n, n), sigma (3, m, n, n, n). The
    layer's elements are grouped by which sigma directions are non-zero on them (a face
    layer one, an edge two, a corner three), and each group's kernel is compiled for its
    directions: it reads only the auxiliary fields that can be non-zero, with no branches.
    Rewriting the traces itself saves a pass over the layer's faces (ListedTraces)."""

    def __init__(self, backend, order: int, sigma_host: np.ndarray):
        n = order + 1
        self.n3 = n**3
        self.setup_points(backend, order)
        active = np.any(np.asarray(sigma_host).reshape(3, sigma_host.shape[1], -1) != 0, axis=2)  # (3, m)
        masks = active[0] * 1 + active[1] * 2 + active[2] * 4
        self.groups = []
        for mask in np.unique(masks):
            if mask == 0:
                continue  # sigma is 0 on the whole element: the layer leaves it alone
            members = np.nonzero(masks == mask)[0]
            kernels = self.compile_both(
                backend.xp, "raw T sigma, raw int64 group, raw int64 elements, raw int64 point_faces, raw T normals, "
                "int64 E, int64 M, T alpha, T a, T b, T dt, T scale, int32 write_traces",
                "raw T u, raw T residual, raw T aux, raw T aux_residual, raw T traces",
                (_PML_FINISH.replace("TRACES_OF_POINT", _TRACES_OF_POINT)
                 .replace("ACTIVE(k, f)", "((MASK >> (((f) % 3 + (k)) % 3)) & 1)")
                 .replace("MASK", str(int(mask))).replace("N3", str(n**3)).replace("N2", str(n * n))),
                f"lobatto_pml_{order}_{int(mask)}")
            self.groups.append((kernels, backend.asarray(members, dtype=np.int64), int(members.size)))

    def __call__(self, u, residual, aux, aux_residual, sigma, elements, alpha, a, b, dt, traces=None, normals=None,
                 fold=False):
        """After the stage kernel, or folded into the residual before it (PointUpdate)."""
        m = int(elements.size)
        if not m:
            return
        t = u.dtype.type
        write, traces, normals, scale = self.trace_arguments(traces, normals, fold, a, dt)
        for kernels, members, count in self.groups:
            kernels[fold](
                sigma.reshape(-1), members, elements, self.point_faces, normals, np.int64(u.shape[1]),
                np.int64(m), t(alpha), t(a), t(b), t(dt), t(scale), write, u.reshape(-1), residual.reshape(-1),
                aux.reshape(-1), aux_residual.reshape(-1), traces, size=count * self.n3)


# the incident wave's flux correction at the TF/SF surface, one thread per volume point the
# surface touches: the sum over its face points (1 to 3) of gain_j w(time - delay_j), in a
# fixed order (deterministic), added to residual and u; then the point's traces
_SURFACE_ADD = r"""
const long long n3 = N3;
const long long e = point_element[i], p = point_local[i];
const long long g = e * n3 + p, fs = E * n3;
T s[6] = {0, 0, 0, 0, 0, 0};
for (long long j = first[i]; j < first[i + 1]; ++j) {
    const T w = lobatto_waveform(now - delay[j]);
#pragma unroll
    for (int c = 0; c < 6; ++c) s[c] += gain[c * J + j] * w;
}
T uu[6];
#pragma unroll
for (int c = 0; c < 6; ++c) {
    residual[c * fs + g] += scale * s[c];
    if (!FOLD) {
        uu[c] = u[c * fs + g] + (b * dt) * s[c];
        u[c * fs + g] = uu[c];
    }
}
if (!FOLD && write_traces) {
    TRACES_OF_POINT
}
"""

# w(tau) of waveforms.waveform_array, times the amplitude; parameters are compiled in
_WAVEFORMS = {
    "gaussian": "const double s = (tau - T0) / WIDTH; return AMPLITUDE * exp(-0.5 * s * s);",
    "modulated_gaussian": "const double s = tau - T0; const double r = s / WIDTH;\n"
                          "return AMPLITUDE * sin(TWO_PI_F * s) * exp(-0.5 * r * r);",
    "ricker": "const double x = PI_F * (tau - T0); const double a = x * x;\n"
              "return AMPLITUDE * (1.0 - 2.0 * a) * exp(-a);",
    "continuous": "double on;\n"
                  "if (RAMP == 0.0) { on = tau >= 0 ? 1.0 : 0.0; }\n"
                  "else { const double r = sin(HALF_PI_RAMP * fmin(fmax(tau, 0.0), RAMP)); on = r * r; }\n"
                  "return AMPLITUDE * on * sin(TWO_PI_F * tau);",
}


def waveform_preamble(waveform: str, params: dict, amplitude: float) -> str:
    import math

    values = {"AMPLITUDE": amplitude, "T0": params.get("t0", 0.0), "WIDTH": params.get("width", 1.0),
              "TWO_PI_F": 2 * math.pi * params.get("frequency", 0.0), "PI_F": math.pi * params.get("frequency", 0.0),
              "RAMP": params.get("ramp", 0.0),
              "HALF_PI_RAMP": 0.5 * math.pi / params["ramp"] if params.get("ramp") else 0.0}
    body = _WAVEFORMS[waveform]
    for key in sorted(values, key=len, reverse=True):
        body = body.replace(key, f"({float(values[key])!r})")
    return f"__device__ double lobatto_waveform(const double tau) {{\n{body}\n}}\n"


class SurfaceAdd(PointUpdate):
    """residual += dt S, u += b dt S for the TF/SF correction S = sum_j gain_j w(t - delay_j)
    over the face points j of the surface, one thread per touched volume point (tfsf.py), and
    with ``traces`` the rewrite of those points' traces. ``element`` (K,), ``face`` (K,) the
    surface's faces on this rank, ``gain`` (6, K, n, n), ``delay`` (K, n, n) host arrays.
    The waveform and its parameters are compiled into the kernel."""

    def __init__(self, backend, order: int, element, face, gain, delay, waveform: str, params: dict,
                 amplitude: float):
        import hashlib

        n = order + 1
        n2 = n * n
        self.setup_points(backend, order)
        table = face_point_table(order).reshape(6, n2)
        element, face = np.asarray(element, dtype=np.int64), np.asarray(face, dtype=np.int64)
        points = table[face]  # (K, n2) local volume point of each face point
        key_element = np.repeat(element, n2)
        key_point = points.reshape(-1)
        order_by = np.lexsort((np.repeat(face, n2), key_point, key_element))  # by point, then face
        keys = np.stack([key_element[order_by], key_point[order_by]])
        new = np.ones(keys.shape[1], dtype=bool)
        new[1:] = np.any(keys[:, 1:] != keys[:, :-1], axis=0)
        starts = np.nonzero(new)[0]
        self.count = int(starts.size)
        self.first = backend.asarray(np.append(starts, keys.shape[1]), dtype=np.int64)
        self.point_element = backend.asarray(keys[0, starts], dtype=np.int64)
        self.point_local = backend.asarray(keys[1, starts], dtype=np.int64)
        self.gain = backend.asarray(np.ascontiguousarray(np.asarray(gain).reshape(6, -1)[:, order_by]))
        self.delay = backend.asarray(np.ascontiguousarray(np.asarray(delay).reshape(-1)[order_by]))
        self.contributions = int(keys.shape[1])
        preamble = waveform_preamble(waveform, params, amplitude)
        tag = hashlib.sha1(preamble.encode()).hexdigest()[:12]
        source = (_SURFACE_ADD.replace("TRACES_OF_POINT", _TRACES_OF_POINT)
                  .replace("N3", str(n**3)).replace("N2", str(n2)))
        self.kernels = self.compile_both(
            backend.xp, "raw int64 point_element, raw int64 point_local, raw int64 first, raw T gain, raw T delay, "
            "raw int64 point_faces, raw T normals, int64 E, int64 J, T now, T b, T dt, T scale, int32 write_traces",
            "raw T u, raw T residual, raw T traces", source, f"lobatto_surface_add_{order}_{tag}", preamble=preamble)

    def __call__(self, u, residual, time: float, a, b, dt, traces=None, normals=None, fold=False):
        """After the stage kernel, or folded into the residual before it (PointUpdate)."""
        if not self.count:
            return
        t = u.dtype.type
        write, traces, normals, scale = self.trace_arguments(traces, normals, fold, a, dt)
        self.kernels[fold](
            self.point_element, self.point_local, self.first, self.gain.reshape(-1), self.delay, self.point_faces,
            normals, np.int64(u.shape[1]), np.int64(self.contributions), t(time), t(b), t(dt), t(scale), write,
            u.reshape(-1), residual.reshape(-1), traces, size=self.count)


# the poles of dispersive.py in one pass over the dispersive elements' points; the pole
# blocks are generated with their coefficients compiled in
_DISPERSIVE = r"""
const long long n3 = N3;
const long long el = i / n3, p = i - el * n3;
const long long e = elements[el];
const long long g = e * n3 + p, at = el * n3 + p;
const long long fs = E * n3, ms = M * n3;
T uu[6], res[3], drive[3], q[AUX], qr[AUX], rate[AUX];
#pragma unroll
for (int c = 0; c < 3; ++c) {
    uu[c] = u[c * fs + g];
    res[c] = residual[c * fs + g];
}
#pragma unroll
for (int k = 0; k < AUX; ++k) {
    q[k] = aux[k * ms + at];
    qr[k] = aux_residual[k * ms + at];
}
const T wgt = WEIGHT;
#pragma unroll
for (int c = 0; c < 3; ++c) drive[c] = (FOLD ? uu[c] : uu[c] - b * res[c]) * wgt;  // the stage's input E
T current[3] = {0, 0, 0};
POLES
const T minus_inv_eps = MINUS_INV_EPS;
#pragma unroll
for (int c = 0; c < 3; ++c) {
    const T s = current[c] * minus_inv_eps;
    residual[c * fs + g] = res[c] + scale * s;
    if (!FOLD) {
        uu[c] += (b * dt) * s;
        u[c * fs + g] = uu[c];
    }
}
#pragma unroll
for (int k = 0; k < AUX; ++k) {
    const T r = a * qr[k] + dt * rate[k];
    aux_residual[k * ms + at] = r;
    aux[k * ms + at] = q[k] + b * r;
}
if (!FOLD && write_traces) {
#pragma unroll
    for (int c = 3; c < 6; ++c) uu[c] = u[c * fs + g];
    TRACES_OF_POINT
}
"""


def _pole_block(model: str, offset: int, a: dict) -> str:
    c = lambda value: f"({float(value)!r})"
    k = offset
    if model == "drude":  # J
        return (f"for (int c = 0; c < 3; ++c) {{ rate[{k} + c] = {c(a['omega_p'] ** 2)} * drive[c] - {c(a['gamma'])} "
                f"* q[{k} + c]; current[c] += q[{k} + c]; }}")
    if model == "lorentz":  # P, J
        w2 = a["omega0"] ** 2
        return (f"for (int c = 0; c < 3; ++c) {{ rate[{k} + c] = q[{k + 3} + c]; rate[{k + 3} + c] = "
                f"{c(a['delta'] * w2)} * drive[c] - {c(w2)} * q[{k} + c] - {c(a['gamma'])} * q[{k + 3} + c]; "
                f"current[c] += q[{k + 3} + c]; }}")
    if model == "debye":  # P, J = dP/dt
        return (f"for (int c = 0; c < 3; ++c) {{ rate[{k} + c] = ({c(a['delta'])} * drive[c] - q[{k} + c]) * "
                f"{c(1.0 / a['tau'])}; current[c] += rate[{k} + c]; }}")
    raise ValueError(f"unknown pole model {model!r}")


class DispersiveStep(PointUpdate):
    """The poles' whole stage (dispersive.py's rates and finish) in one kernel, after the
    stage kernel or folded into the residual before it, as PmlFinish. ``poles``: (model,
    offset, angular parameters); ``weight``: per point or None; ``minus_inv_epsilon``: a number
    or per point."""

    def __init__(self, backend, order: int, poles, aux_count: int, weighted: bool, per_point_epsilon: bool,
                 minus_inv_epsilon: float = 0.0):
        import hashlib

        n = order + 1
        self.n3 = n**3
        self.setup_points(backend, order)
        body = "\n".join(_pole_block(model, offset, a) for model, offset, a in poles)
        source = (_DISPERSIVE.replace("TRACES_OF_POINT", _TRACES_OF_POINT).replace("POLES", body)
                  .replace("WEIGHT", "weight[at]" if weighted else "T(1)")
                  .replace("MINUS_INV_EPS", "epsilon_term[at]" if per_point_epsilon else f"({float(minus_inv_epsilon)!r})")
                  .replace("AUX", str(int(aux_count))).replace("N3", str(n**3)).replace("N2", str(n * n)))
        tag = hashlib.sha1(source.encode()).hexdigest()[:12]
        self.kernels = self.compile_both(
            backend.xp, "raw T weight, raw T epsilon_term, raw int64 elements, raw int64 point_faces, raw T normals, "
            "int64 E, int64 M, T a, T b, T dt, T scale, int32 write_traces",
            "raw T u, raw T residual, raw T aux, raw T aux_residual, raw T traces", source, f"lobatto_poles_{order}_{tag}")

    def __call__(self, u, residual, aux, aux_residual, elements, weight, epsilon_term, a, b, dt, traces=None,
                 normals=None, fold=False):
        m = int(elements.size)
        if not m:
            return
        t = u.dtype.type
        write, traces, normals, scale = self.trace_arguments(traces, normals, fold, a, dt)
        weight = self.unused if weight is None else weight
        epsilon_term = self.unused if epsilon_term is None else epsilon_term
        self.kernels[fold](
            weight.reshape(-1), epsilon_term.reshape(-1), elements, self.point_faces, normals, np.int64(u.shape[1]),
            np.int64(m), t(a), t(b), t(dt), t(scale), write, u.reshape(-1), residual.reshape(-1), aux.reshape(-1),
            aux_residual.reshape(-1), traces, size=m * self.n3)


# the discrete incident wave of TF/SF (tfsf_discrete.py), one thread per point of the term's
# elements: on a total-field element v's 2N-storage stage with rate L_bg(v) (the analytic
# correction of the surface is added after, by SurfaceAdd on v); on a scattered-field element
# S = -L_bg(v) into residual and u, then the point's traces
_DISCRETE_STAGE = r"""
const long long n3 = N3;
const long long el = i / n3, p = i - el * n3;
const long long e = elements[el];
const long long g = e * n3 + p, at = el * n3 + p;
const long long fs = E * n3, ms = M * n3;
if (total[el]) {
#pragma unroll
    for (int c = 0; c < 6; ++c) {
        const T r = a * aux_residual[c * ms + at] + dt * lv[c * fs + g];
        aux_residual[c * ms + at] = r;
        aux[c * ms + at] += b * r;
    }
} else {
    T uu[6];
#pragma unroll
    for (int c = 0; c < 6; ++c) {
        const T s = -lv[c * fs + g];
        residual[c * fs + g] += dt * s;
        uu[c] = u[c * fs + g] + (b * dt) * s;
        u[c * fs + g] = uu[c];
    }
    if (write_traces) {
        TRACES_OF_POINT
    }
}
"""

# v on the total-field elements, from the term's compact auxiliary fields into the full array
_SPREAD = r"""
const long long n3 = N3;
const long long k = i / n3, p = i - k * n3;
const long long at = positions[k] * n3 + p, g = elements[k] * n3 + p;
const long long fs = E * n3, ms = M * n3;
#pragma unroll
for (int c = 0; c < 6; ++c) v[c * fs + g] = aux[c * ms + at];
"""


class DiscreteIncidentStage(PointUpdate):
    """tfsf_discrete.py's stage on CUDA, in two kernels instead of array operations over the
    term's elements: ``spread`` writes v (the compact auxiliary fields on the total-field
    elements) into the full array the background operator reads; ``finish`` steps v with
    L_bg(v) on the total-field elements and adds S = -L_bg(v) on the scattered-field ones,
    rewriting their traces on the fused path. The surface's analytic correction is added by
    SurfaceAdd kernels (on u and on v)."""

    def __init__(self, backend, order: int, elements, total):
        n = order + 1
        self.n3 = n**3
        xp = backend.xp
        self.setup_points(backend, order)
        elements, total = np.asarray(elements, dtype=np.int64), np.asarray(total, dtype=bool)
        self.count, self.total_count = int(elements.size), int(np.count_nonzero(total))
        self.elements = backend.asarray(elements, dtype=np.int64)
        self.total = backend.asarray(total.astype(np.int8), dtype=np.int8)
        self.total_positions = backend.asarray(np.flatnonzero(total), dtype=np.int64)
        self.total_elements = backend.asarray(elements[total], dtype=np.int64)
        self.stage = xp.ElementwiseKernel(
            "raw T lv, raw int64 elements, raw int8 total, raw int64 point_faces, raw T normals, int64 E, int64 M, "
            "T a, T b, T dt, int32 write_traces", "raw T u, raw T residual, raw T aux, raw T aux_residual, raw T traces",
            _DISCRETE_STAGE.replace("TRACES_OF_POINT", _TRACES_OF_POINT).replace("N3", str(self.n3))
            .replace("N2", str(n * n)), f"lobatto_discrete_incident_{order}")
        self.spread_kernel = xp.ElementwiseKernel(
            "raw T aux, raw int64 positions, raw int64 elements, int64 E, int64 M", "raw T v",
            _SPREAD.replace("N3", str(self.n3)), f"lobatto_discrete_spread_{order}")

    def spread(self, aux, v) -> None:
        if self.total_count:
            self.spread_kernel(aux.reshape(-1), self.total_positions, self.total_elements, np.int64(v.shape[1]),
                               np.int64(self.count), v.reshape(-1), size=self.total_count * self.n3)

    def finish(self, lv, u, residual, aux, aux_residual, a, b, dt, traces=None, normals=None) -> None:
        if not self.count:
            return
        t = u.dtype.type
        write, traces, normals, _ = self.trace_arguments(traces, normals, False, a, dt)
        self.stage(lv.reshape(-1), self.elements, self.total, self.point_faces, normals, np.int64(u.shape[1]),
                   np.int64(self.count), t(a), t(b), t(dt), write, u.reshape(-1), residual.reshape(-1),
                   aux.reshape(-1), aux_residual.reshape(-1), traces, size=self.count * self.n3)
