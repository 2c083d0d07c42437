"""The TF/SF plane wave's CUDA kernels: ``SurfaceAdd``, the flux correction at the
total-field/scattered-field surface with the incident waveform evaluated in the kernel
(tfsf.py), and ``DiscreteIncidentStage``, the stage of the discrete incident wave
(tfsf_discrete.py). The array operations of tfsf.py and tfsf_discrete.py are the reference.
"""

from __future__ import annotations

import numpy as np

from lobatto.systems.maxwell.terms_cuda import (TRACES_OF_POINT_SOURCE, PointUpdate, element_sizes, face_point_table,
                                                specialise)

# the incident wave's flux correction at the TF/SF surface, one thread per volume point the
# surface touches: the sum over its face points (1 to 3) of gain_j w(time - delay_j), in a
# fixed order (deterministic), added to residual and u; then the point's traces
_SURFACE_ADD = r"""
const long long n3 = N3;
const long long e = point_element[i], p = point_local[i];
const long long g = e * n3 + p, fs = E * n3;
const double now = clock[0];
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
    surface's faces on this rank, ``gain`` (6, K, n, n), ``delay`` (K, n, n) host arrays
    ((6, K, 1, n) and (K, 1, n) on a 2-D mesh, ``dim`` = 2). The waveform and its parameters
    are compiled into the kernel."""

    def __init__(self, backend, order: int, element, face, gain, delay, waveform: str, params: dict,
                 amplitude: float, dim: int = 3):
        import hashlib

        _, nf, n2 = element_sizes(order, dim)  # n2: points per face
        self.setup_points(backend, order, dim)
        table = face_point_table(order, dim).reshape(nf, n2)
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
        self.time = backend.zeros(1, dtype=np.float64)  # the stage time when given as a number
        preamble = waveform_preamble(waveform, params, amplitude)
        tag = hashlib.sha1(preamble.encode()).hexdigest()[:12]
        source = specialise(_SURFACE_ADD.replace("TRACES_OF_POINT", TRACES_OF_POINT_SOURCE), order, dim)
        self.kernels = self.compile_both(
            backend.xp, "raw int64 point_element, raw int64 point_local, raw int64 first, raw T gain, raw T delay, "
            "raw int64 point_faces, raw T normals, raw float64 clock, int64 E, int64 J, T b, T dt, T scale, "
            "int32 write_traces",
            "raw T u, raw T residual, raw T traces", source, f"lobatto_surface_add_{order}_{dim}d_{tag}",
            preamble=preamble)

    def __call__(self, u, residual, time, a, b, dt, traces=None, normals=None, fold=False):
        """After the stage kernel, or folded into the residual before it (PointUpdate).
        ``time``: the stage time, a number or a device float64 array holding it (the fused
        path's clock, which a recorded step reads at replay)."""
        if not self.count:
            return
        if not hasattr(time, "shape"):
            self.time.fill(float(time))
            time = self.time
        self.check_shape(u)
        t = u.dtype.type
        write, traces, normals, scale = self.trace_arguments(traces, normals, fold, a, dt)
        self.kernels[fold](
            self.point_element, self.point_local, self.first, self.gain.reshape(-1), self.delay, self.point_faces,
            normals, time, np.int64(u.shape[1]), np.int64(self.contributions), t(b), t(dt), t(scale), write,
            u.reshape(-1), residual.reshape(-1), traces, size=self.count)


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

    def __init__(self, backend, order: int, elements, total, dim: int = 3):
        self.n3 = element_sizes(order, dim)[0]  # points per element
        xp = backend.xp
        self.setup_points(backend, order, dim)
        elements, total = np.asarray(elements, dtype=np.int64), np.asarray(total, dtype=bool)
        self.count, self.total_count = int(elements.size), int(np.count_nonzero(total))
        self.elements = backend.asarray(elements, dtype=np.int64)
        self.total = backend.asarray(total.astype(np.int8), dtype=np.int8)
        self.total_positions = backend.asarray(np.flatnonzero(total), dtype=np.int64)
        self.total_elements = backend.asarray(elements[total], dtype=np.int64)
        self.stage = xp.ElementwiseKernel(
            "raw T lv, raw int64 elements, raw int8 total, raw int64 point_faces, raw T normals, int64 E, int64 M, "
            "T a, T b, T dt, int32 write_traces", "raw T u, raw T residual, raw T aux, raw T aux_residual, raw T traces",
            specialise(_DISCRETE_STAGE.replace("TRACES_OF_POINT", TRACES_OF_POINT_SOURCE), order, dim),
            f"lobatto_discrete_incident_{order}_{dim}d")
        self.spread_kernel = xp.ElementwiseKernel(
            "raw T aux, raw int64 positions, raw int64 elements, int64 E, int64 M", "raw T v",
            specialise(_SPREAD, order, dim), f"lobatto_discrete_spread_{order}_{dim}d")

    def spread(self, aux, v) -> None:
        if self.total_count:
            self.spread_kernel(aux.reshape(-1), self.total_positions, self.total_elements, np.int64(v.shape[1]),
                               np.int64(self.count), v.reshape(-1), size=self.total_count * self.n3)

    def finish(self, lv, u, residual, aux, aux_residual, a, b, dt, traces=None, normals=None) -> None:
        if not self.count:
            return
        self.check_shape(u)
        t = u.dtype.type
        write, traces, normals, _ = self.trace_arguments(traces, normals, False, a, dt)
        self.stage(lv.reshape(-1), self.elements, self.total, self.point_faces, normals, np.int64(u.shape[1]),
                   np.int64(self.count), t(a), t(b), t(dt), write, u.reshape(-1), residual.reshape(-1),
                   aux.reshape(-1), aux_residual.reshape(-1), traces, size=self.count * self.n3)
