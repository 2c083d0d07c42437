"""The CUDA fast-diagonalization kernels' own source (kernels/fdm.cu), run on the CPU, equal
the reference fdm_apply and ext_layers (each of its four modes) on fresh random data,
float64 and float32.

As in test_operators_cuda_emulated.py: the text NVRTC would receive is compiled as C++20 with
a shim in which every CUDA thread of a block is a std::thread, shared arrays are static and
__syncthreads() is a std::barrier, so the kernel's indexing and its barriers between the
shared-memory phases are exercised with the launch fdm_cuda.py uses (one block of M x M
threads per element). Skipped without a C++20 compiler.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.jit.nvrtc import source_text
from lobatto.operators import fdm  # noqa: F401  (registers the reference kernel)
from lobatto.operators.fdm_cuda import SOURCE

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

SIZES = (4, 6, 10)  # M = order + 3: orders 1, 3 and 7

SHIM = """
#include <barrier>
#include <thread>
#include <vector>
struct lobatto_dim3 { int x = 0, y = 0, z = 0; };
thread_local lobatto_dim3 threadIdx, blockIdx;
static std::barrier<>* lobatto_block_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
#define __syncthreads() lobatto_block_barrier->arrive_and_wait()
"""

LAUNCH = """
template <int M, typename T>
static void launch(const T* r, T* out, const T* sx, const T* sy, const T* sz, const T* lam, const T* coef,
                   long long E) {
    for (long long b = 0; b < E; ++b) {
        std::barrier<> block(M * M);
        lobatto_block_barrier = &block;
        std::vector<std::thread> threads;
        for (int x = 0; x < M * M; ++x)
            threads.emplace_back([=] {
                threadIdx.x = x; blockIdx.x = (int)b;
                lobatto::fdm_apply_kernel<M, T>(r, out, sx, sy, sz, lam, coef, E);
            });
        for (auto& t : threads) t.join();
    }
}

template <int M, typename T>
static void launch_layers(T* z, T* saved, int mode, long long E) {
    const int n2 = (M - 2) * (M - 2);
    for (long long b = 0; b < E; ++b) {
        std::barrier<> block(n2);
        lobatto_block_barrier = &block;
        std::vector<std::thread> threads;
        for (int x = 0; x < n2; ++x)
            threads.emplace_back([=] {
                threadIdx.x = x; blockIdx.x = (int)b;
                lobatto::ext_layers_kernel<M, T>(z, saved, mode, E);
            });
        for (auto& t : threads) t.join();
    }
}
"""


def dispatch() -> str:
    lines = []
    for ctype, name in (("double", "f64"), ("float", "f32")):
        lines.append(f'extern "C" void run_{name}(int m, const {ctype}* r, {ctype}* out, const {ctype}* sx, '
                     f'const {ctype}* sy, const {ctype}* sz, const {ctype}* lam, const {ctype}* coef, long long E) {{')
        lines.append("    switch (m) {")
        for m in SIZES:
            lines.append(f"    case {m}: launch<{m}, {ctype}>(r, out, sx, sy, sz, lam, coef, E); break;")
        lines.append("    }\n}")
        lines.append(f'extern "C" void layers_{name}(int m, {ctype}* z, {ctype}* saved, int mode, long long E) {{')
        lines.append("    switch (m) {")
        for m in SIZES:
            lines.append(f"    case {m}: launch_layers<{m}, {ctype}>(z, saved, mode, E); break;")
        lines.append("    }\n}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fdm_emulated")
    source = folder / "fdm_emulated.cpp"
    source.write_text(SHIM + source_text(SOURCE) + "\n" + LAUNCH
                      + dispatch() + "\n")
    library = folder / "fdm_emulated.so"
    cmd = [CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", str(source), "-o", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip(f"{CXX} has no C++20 <barrier>")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    lib = ctypes.CDLL(str(library))
    for name in ("run_f64", "run_f32"):
        getattr(lib, name).argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 7 + [ctypes.c_longlong]
    for name in ("layers_f64", "layers_f32"):
        getattr(lib, name).argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 2 + [ctypes.c_int, ctypes.c_longlong]
    return lib


@pytest.mark.parametrize("m", SIZES)
def test_emulated_fdm_kernel_equals_reference(emulated, m):
    rng = np.random.default_rng(m)
    E = 3
    reference = NumpyBackend().kernel("fdm_apply", size=m)
    for dtype, run, tolerance in ((np.float64, emulated.run_f64, 1e-13), (np.float32, emulated.run_f32, 3e-5)):
        r = rng.standard_normal((E, m, m, m)).astype(dtype)
        sx, sy, sz = (rng.standard_normal((E, m, m)).astype(dtype) for _ in range(3))
        lam = rng.random((E, 3, m)).astype(dtype)
        lam[1, :, 0] = 0  # element 1's constant mode: below its floor, dropped
        coef = np.array([[1.3, 0.2, 1e-6], [0.7, 0.0, 1e-6], [2.0, 5.0, 1e-6]], dtype=dtype)
        expected = reference(r, np.empty_like(r), sx, sy, sz, lam, coef)
        out = np.full_like(r, np.nan)
        run(m, r.ctypes.data, out.ctypes.data, sx.ctypes.data, sy.ctypes.data, sz.ctypes.data, lam.ctypes.data,
            coef.ctypes.data, E)
        scale = np.abs(expected).max()
        assert np.abs(out - expected).max() <= tolerance * scale, (dtype, np.abs(out - expected).max(), scale)


@pytest.mark.parametrize("m", SIZES)
def test_emulated_ext_layers_equal_reference(emulated, m):
    rng = np.random.default_rng(10 + m)
    E = 2
    reference = NumpyBackend().kernel("ext_layers", size=m)
    for dtype, run in ((np.float64, emulated.layers_f64), (np.float32, emulated.layers_f32)):
        for mode in range(4):
            z = rng.standard_normal((E, m, m, m)).astype(dtype)
            saved = rng.standard_normal((E, 6, m - 2, m - 2)).astype(dtype)
            expected_z, expected_saved = z.copy(), saved.copy()
            reference(expected_z, expected_saved, mode)
            run(m, z.ctypes.data, saved.ctypes.data, mode, E)
            # the same operations in the same order: equal to the last bit
            assert np.array_equal(z, expected_z) and np.array_equal(saved, expected_saved), (dtype, mode)
