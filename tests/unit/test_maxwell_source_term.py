"""The sources as a stage term (systems/maxwell/source_term.py) without a GPU:

* the dipole's CUDA kernel text (source_cuda.py), compiled as C++ on the CPU, equals S =
  -w(t) profile added to residual and u (and, folded, (dt/a) S to the residual alone) and
  rewrites the traces of its element's face points as -n x E, -n x H of the new u, for E and
  H dipoles on fresh random data;
* the term's fused-path branch (what runs on CUDA: folded before the stage kernel where a is
  not 0, finished after it on the first stage, dipoles by a kernel, currents by array code)
  gives the stage path's steps to round-off, with the dipole kernel stood in by its NumPy
  equivalent. Skipped without a C++ compiler (the first only)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.config.expressions import compile_expression
from lobatto.integrators import Stepper, get_scheme
from lobatto.systems.maxwell.source_cuda import kernel_text
from lobatto.systems.maxwell.source_term import SourceTerm
from lobatto.systems.maxwell.sources import SourceSpec
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.maxwell.terms_cuda import face_point_table, point_face_table
from lobatto.systems.maxwell.tfsf_cuda import waveform_preamble
from lobatto.systems.maxwell.waveforms import waveform_value

from analytic import build_system

CXX = shutil.which("g++") or shutil.which("clang++")
WAVE = {"waveform": "modulated_gaussian", "frequency": 0.5, "t0": 0.8, "width": 0.4}


def compiled(tmp_path, order: int, field: int, fold: bool):
    preamble = waveform_preamble(WAVE["waveform"], WAVE, 1.0).replace("__device__ ", "")
    body = kernel_text(order, field).replace("FOLD", "true" if fold else "false").replace("#pragma unroll", "")
    source = f"""#include <cmath>
using namespace std;
typedef double T;
{preamble}
extern "C" void run(const T* profile, const double* clock, const long long* point_faces, const T* normals,
                    long long E, long long element, T b, T dt, T scale, int write_traces, T* u, T* residual,
                    T* traces) {{
    for (long long i = 0; i < {(order + 1) ** 3}; ++i) {{
{body}
    }}
}}
"""
    path = tmp_path / f"dipole_{field}_{fold}"
    path.with_suffix(".cpp").write_text(source)
    subprocess.run([CXX, "-O1", "-shared", "-fPIC", "-o", str(path.with_suffix(".so")), str(path.with_suffix(".cpp"))],
                   check=True)
    return ctypes.CDLL(str(path.with_suffix(".so")))


@pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")
@pytest.mark.parametrize("field", [0, 3])
@pytest.mark.parametrize("fold", [False, True])
def test_dipole_kernel_text_adds_the_source_and_rewrites_traces(field, fold, tmp_path):
    order, count, element = 3, 4, 2
    n = order + 1
    rng = np.random.default_rng(10 + field + fold)
    u, residual = rng.standard_normal((6, count, n, n, n)), rng.standard_normal((6, count, n, n, n))
    normals, traces = rng.standard_normal((3, count, 6, n, n)), rng.standard_normal((6, count, 6, n, n))
    profile, clock = rng.standard_normal((3, n, n, n)), np.array([1.1])
    faces = point_face_table(order).reshape(-1).astype(np.int64)
    a, b, dt = -0.4, 0.7, 0.05
    scale = dt / a if fold else dt
    expected_u, expected_r, expected_t = u.copy(), residual.copy(), traces.copy()
    library = compiled(tmp_path, order, field, fold)
    library.run.argtypes = ([ctypes.c_void_p] * 4 + [ctypes.c_longlong] * 2 + [ctypes.c_double] * 3 + [ctypes.c_int]
                            + [ctypes.c_void_p] * 3)
    pointer = lambda array: ctypes.c_void_p(array.ctypes.data)  # noqa: E731
    library.run(pointer(profile), pointer(clock), pointer(faces), pointer(normals), count, element, b, dt, scale, 1,
                pointer(u), pointer(residual), pointer(traces))
    s = -(waveform_value(WAVE["waveform"], WAVE, 1.1) * profile)
    expected_r[field:field + 3, element] += scale * s
    if not fold:  # u and the traces of its element's face points
        expected_u[field:field + 3, element] += (b * dt) * s
        v = expected_u[:, element].reshape(6, -1)[:, face_point_table(order)]
        nn = normals[:, element].reshape(3, -1)
        for h in range(2):
            expected_t[3 * h:3 * h + 3, element] = -np.cross(nn, v[3 * h:3 * h + 3], axis=0).reshape(3, 6, n, n)
    assert np.abs(s).max() > 0.1
    for got, want in ((u, expected_u), (residual, expected_r), (traces, expected_t)):
        assert np.abs(got - want).max() <= 1e-14 * np.abs(want).max()


class NumpyDipole:
    """DipoleAdd's contract in NumPy (the kernel checked above)."""

    def __init__(self, element, field, profile, values):
        self.element, self.field, self.profile, self.values = element, field, profile, values

    def __call__(self, u, residual, clock, a, b, dt, traces=None, normals=None, fold=False):
        s = -(waveform_value(self.values["waveform"], self.values, float(clock)) * self.profile)
        rows = slice(self.field, self.field + 3)
        residual[rows, self.element] += (dt / a if fold else dt) * s
        if not fold:
            u[rows, self.element] += (b * dt) * s


def test_fused_branch_equals_the_stage_path():
    values = {**WAVE, "position": (0.6, 0.45, 0.3), "direction": (0, 1, 1), "amplitude": 1.3}
    specs = (SourceSpec("antenna", "electric_dipole", values),
             SourceSpec("loop", "magnetic_dipole", {**values, "position": (0.2, 0.7, 0.55), "direction": (1, 0, 0)}),
             SourceSpec("sheet", "current", {"Jx": compile_expression("0"), "Jy": compile_expression("sin(3*t)*x"),
                                             "Jz": compile_expression("t*y"), "lower": (0.0, 0.0, 0.4),
                                             "upper": (1.0, 0.5, 0.9)}))
    scheme, dt = get_scheme("lsrk45"), 0.04
    results = []
    for fused in (False, True):
        system = build_system(MaxwellSystem, elements=(3, 2, 2), order=3, sources=specs)
        term = system.terms[0]
        assert isinstance(term, SourceTerm) and system.time_dependent and not system.energy_bounded
        u = system.allocate_state()
        u[1] = np.sin(3 * system.geometry.coords[0])
        if not fused:
            stepper = Stepper(system, scheme)
            for step in range(6):
                stepper.step(u, step * dt, dt)
        else:  # fused.py's order of calls, the stage kernel being the CPU's
            start = term.sources.components.start
            term.dipole_kernels = [NumpyDipole(int(term.elements[slot]), start + field, term.backend.to_host(p), v)
                                   for v, field, slot, p in term.sources.dipoles]
            residual = np.zeros_like(u)
            for step in range(6):
                for a, b, c in zip(scheme.A, scheme.B, scheme.C):
                    t = step * dt + c * dt
                    if a != 0:
                        term.fold(u, residual, t, a, b, dt)
                        system.terms = []
                        system.stage(u, residual, t, a, b, dt)
                        system.terms = [term]
                    else:
                        system.stage(u, residual, t, a, b, dt)
        results.append(u)
    stage, fused = results
    assert np.abs(stage[0]).max() > 1e-2 and np.abs(stage[3]).max() > 1e-2  # both dipoles and the current acted
    assert np.abs(fused - stage).max() <= 1e-13 * np.abs(stage).max()
