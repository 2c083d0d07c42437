"""The point dipole's CUDA kernel (sources.py, source_term.py): S = -w(t) profile on the n^3
points of the dipole's element, with the waveform evaluated in the kernel at the stage time
read from a device array (the fused path's stage clock, fused.py), so that a recorded step
(CUDA graph) replays at the time set before each replay. sources.py's array operations are
the reference (tests/unit/test_maxwell_sources_gpu.py compares).
"""

from __future__ import annotations

import hashlib

import numpy as np

from lobatto.systems.maxwell.terms_cuda import TRACES_OF_POINT_SOURCE, PointUpdate, element_sizes, specialise
from lobatto.systems.maxwell.tfsf_cuda import waveform_preamble

# one thread per point p of the element: s_c = -(w profile_c) for the three components of E
# (FIELD 0) or H (FIELD 3), into the residual (and u); then the point's traces from all six
_DIPOLE_ADD = r"""
const long long n3 = N3;
const long long p = i, e = element;
const long long g = e * n3 + p, fs = E * n3;
const T w = (T)lobatto_waveform(clock[0]);
T uu[6];
#pragma unroll
for (int c = 0; c < 3; ++c) {
    const T s = -(w * profile[c * n3 + p]);
    const long long at = (FIELD + c) * fs + g;
    residual[at] += scale * s;
    if (!FOLD) {
        uu[FIELD + c] = u[at] + (b * dt) * s;
        u[at] = uu[FIELD + c];
    }
}
if (!FOLD && write_traces) {
#pragma unroll
    for (int c = 0; c < 3; ++c) uu[OTHER + c] = u[(OTHER + c) * fs + g];
    TRACES_OF_POINT
}
"""


def kernel_text(order: int, field: int, dim: int = 3) -> str:
    """The kernel's body for ``field`` 0 (E) or 3 (H) at ``order`` on a ``dim``-D mesh, FOLD left
    to compile_both (tests/unit/test_maxwell_source_term.py compiles it as C++ on the CPU)."""
    return specialise(_DIPOLE_ADD.replace("TRACES_OF_POINT", TRACES_OF_POINT_SOURCE)
                      .replace("OTHER", str(3 - field)).replace("FIELD", str(field)), order, dim)


class DipoleAdd(PointUpdate):
    """residual += dt S, u += b dt S for one dipole, S = -w(t) profile on its element (after
    the stage kernel; with ``traces`` it rewrites the points' traces), or residual += (dt/a) S
    before it (``fold``, PointUpdate). ``element`` is the local element, ``field`` 0 (E) or 3
    (H), ``profile`` the host array (3, n, n, n): direction * amplitude * phi_p(x0) / (M_p eps
    or mu; (3, 1, n, n) on a 2-D mesh, ``dim`` = 2). The waveform and its parameters are
    compiled into the kernel (the amplitude is in the profile)."""

    def __init__(self, backend, order: int, element: int, field: int, profile, waveform: str, params: dict,
                 dim: int = 3):
        self.n3 = element_sizes(order, dim)[0]  # points per element
        self.setup_points(backend, order, dim)
        self.element, self.count = int(element), 1
        self.profile = backend.asarray(np.ascontiguousarray(np.asarray(profile).reshape(-1)))
        self.time = backend.zeros(1, dtype=np.float64)  # the stage time off the fused path
        preamble = waveform_preamble(waveform, params, 1.0)
        tag = hashlib.sha1(preamble.encode()).hexdigest()[:12]
        self.kernels = self.compile_both(
            backend.xp, "raw T profile, raw float64 clock, raw int64 point_faces, raw T normals, int64 E, "
            "int64 element, T b, T dt, T scale, int32 write_traces", "raw T u, raw T residual, raw T traces",
            kernel_text(order, field, dim), f"lobatto_dipole_add_{order}_{dim}d_{field}_{tag}", preamble=preamble)

    def __call__(self, u, residual, clock, a, b, dt, traces=None, normals=None, fold=False):
        """``clock``: a device float64 array whose first value is the stage time, or a number
        (written to a device array first)."""
        if not hasattr(clock, "shape"):
            self.time.fill(float(clock))
            clock = self.time
        self.check_shape(u)
        t = u.dtype.type
        write, traces, normals, scale = self.trace_arguments(traces, normals, fold, a, dt)
        self.kernels[fold](self.profile, clock, self.point_faces, normals, np.int64(u.shape[1]),
                           np.int64(self.element), t(b), t(dt), t(scale), write, u.reshape(-1),
                           residual.reshape(-1), traces, size=self.n3)
