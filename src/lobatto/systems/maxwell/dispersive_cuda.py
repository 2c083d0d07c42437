"""The dispersive poles' whole stage in one CUDA kernel (dispersive.py's rates and finish),
with each pole's coefficients compiled in. dispersive.py's array operations are the
reference.
"""

from __future__ import annotations

import numpy as np

from lobatto.systems.maxwell.terms_cuda import TRACES_OF_POINT_SOURCE, PointUpdate, element_sizes, specialise

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
for (int c = 0; c < 3; ++c) drive[c] = ((FOLD ? uu[c] : uu[c] - b * res[c]) STRETCH) * wgt;  // the stage's input E
T current[3] = {0, 0, 0};
POLES
#pragma unroll
for (int c = 0; c < 3; ++c) {
    const T s = current[c] * (MINUS_INV_EPS);
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


#: the kernel's arguments (CuPy ElementwiseKernel: inputs, outputs)
PARAMS = ("raw T weight, raw T epsilon_term, raw T stretch, raw int64 elements, raw int64 point_faces, raw T normals, "
          "int64 E, int64 M, T a, T b, T dt, T scale, int32 write_traces")
OUTPUTS = "raw T u, raw T residual, raw T aux, raw T aux_residual, raw T traces"


def poles_source(order: int, poles, aux_count: int, weighted: bool, per_point_epsilon: bool,
                 minus_inv_epsilon: float = 0.0, stretched: bool = False, per_component: bool = False,
                 dim: int = 3) -> str:
    """The kernel's text (FOLD still to be set: PointUpdate.compile_both); the arguments as
    DispersiveStep's (tests/unit/test_maxwell_poles_cuda_emulated.py runs it on the CPU)."""
    epsilon = ("epsilon_term[c * ms + at]" if per_component else "epsilon_term[at]") if per_point_epsilon else (
        f"({float(minus_inv_epsilon)!r})")
    body = "\n".join(_pole_block(model, offset, a) for model, offset, a in poles)
    return specialise(_DISPERSIVE.replace("TRACES_OF_POINT", TRACES_OF_POINT_SOURCE).replace("POLES", body)
                      .replace("WEIGHT", "weight[at]" if weighted else "T(1)")
                      .replace("STRETCH", "+ stretch[c * ms + at]" if stretched else "")
                      .replace("MINUS_INV_EPS", epsilon)
                      .replace("AUX", str(int(aux_count))), order, dim)


class DispersiveStep(PointUpdate):
    """The poles' whole stage (dispersive.py's rates and finish) in one kernel, after the
    stage kernel or folded into the residual before it, as PmlFinish. ``poles``: (model,
    offset, angular parameters); ``weight``: per point or None; ``minus_inv_epsilon``: a number
    or per point (``per_component``: (3, m, n, n, n), a diagonal eps_inf); ``stretched``: the
    drive is w (E + stretch), stretch (3, m, n, n, n) = Lambda E - E inside a PML
    (dispersive.py's stretch_with). ``dim`` = 2: the (m, 1, n, n) point arrays of a 2-D mesh."""

    def __init__(self, backend, order: int, poles, aux_count: int, weighted: bool, per_point_epsilon: bool,
                 minus_inv_epsilon: float = 0.0, stretched: bool = False, per_component: bool = False,
                 dim: int = 3):
        import hashlib

        self._given = (backend, order, poles, aux_count, weighted, per_point_epsilon, minus_inv_epsilon)
        self._per_component = per_component
        self.n3 = element_sizes(order, dim)[0]  # points per element
        self.setup_points(backend, order, dim)
        source = poles_source(order, poles, aux_count, weighted, per_point_epsilon, minus_inv_epsilon, stretched,
                              per_component, dim)
        tag = hashlib.sha1(source.encode()).hexdigest()[:12]
        self.kernels = self.compile_both(backend.xp, PARAMS, OUTPUTS, source, f"lobatto_poles_{order}_{tag}")

    def stretched(self) -> "DispersiveStep":
        """The same poles with the drive w (E + stretch)."""
        return DispersiveStep(*self._given, stretched=True, per_component=self._per_component, dim=self.dim)

    def __call__(self, u, residual, aux, aux_residual, elements, weight, epsilon_term, a, b, dt, traces=None,
                 normals=None, fold=False, stretch=None):
        m = int(elements.size)
        if not m:
            return
        self.check_shape(u)
        t = u.dtype.type
        write, traces, normals, scale = self.trace_arguments(traces, normals, fold, a, dt)
        weight = self.unused if weight is None else weight
        epsilon_term = self.unused if epsilon_term is None else epsilon_term
        stretch = self.unused if stretch is None else stretch
        self.kernels[fold](
            weight.reshape(-1), epsilon_term.reshape(-1), stretch.reshape(-1), elements, self.point_faces, normals,
            np.int64(u.shape[1]), np.int64(m), t(a), t(b), t(dt), t(scale), write, u.reshape(-1), residual.reshape(-1),
            aux.reshape(-1), aux_residual.reshape(-1), traces, size=m * self.n3)
