"""The CUDA Helmholtz kernel's own source, run on the CPU, equals the reference.

Without a GPU, the text NVRTC would receive (kernels/helmholtz.cu with common.cuh inlined) is
compiled as C++20 with a small shim: every CUDA thread of a block is a std::thread, shared
arrays are static, and __syncthreads() is a std::barrier over the block. So the kernel's
indexing, its barriers between the shared-memory phases and its idle threads in a short last
block are all exercised, with the launch shape helmholtz_cuda.py uses (elements per block).
What this cannot check (shared-memory limits, registers, NVRTC itself) is left to
tests/gpu/test_operators_gpu.py and the nvcc compile test. Skipped without a C++20 compiler.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import derivative_matrix
from lobatto.jit.nvrtc import source_text
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.operators import HelmholtzOperator
from lobatto.operators.helmholtz_cuda import SOURCE, default_elements_per_block

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

ORDERS = (1, 2, 3, 5, 7, 8, 15)

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
template <int N, typename T, bool MASS, int EPB>
static void launch(const T* u, T* out, const T* g, const T* mass, const T* D, T h1, T h2, long long E) {
    const int n2 = (N + 1) * (N + 1);
    for (long long b = 0; b < (E + EPB - 1) / EPB; ++b) {
        std::barrier<> block(n2 * EPB);
        lobatto_block_barrier = &block;
        std::vector<std::thread> threads;
        for (int y = 0; y < EPB; ++y)
            for (int x = 0; x < n2; ++x)
                threads.emplace_back([=] {
                    threadIdx.x = x; threadIdx.y = y; blockIdx.x = (int)b;
                    lobatto::helmholtz_apply_kernel<N, T, MASS, EPB>(u, out, g, mass, D, h1, h2, E);
                });
        for (auto& t : threads) t.join();
    }
}
"""


def dispatch(orders) -> str:
    lines = []
    for ctype, name in (("double", "f64"), ("float", "f32")):
        lines.append(f'extern "C" void run_{name}(int order, int mass, const {ctype}* u, {ctype}* out, '
                     f'const {ctype}* g, const {ctype}* m, const {ctype}* D, {ctype} h1, {ctype} h2, long long E) {{')
        lines.append("    switch (order) {")
        for n in orders:
            epb = default_elements_per_block(n)
            lines.append(f"    case {n}: if (mass) launch<{n}, {ctype}, true, {epb}>(u, out, g, m, D, h1, h2, E); "
                         f"else launch<{n}, {ctype}, false, {epb}>(u, out, g, m, D, h1, h2, E); break;")
        lines.append("    }\n}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cuda_emulated")
    source = folder / "helmholtz_emulated.cpp"
    source.write_text(SHIM + source_text(SOURCE) + "\n" + LAUNCH + dispatch(ORDERS) + "\n")
    library = folder / "helmholtz_emulated.so"
    cmd = [CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", str(source), "-o", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip(f"{CXX} has no C++20 <barrier>")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    lib = ctypes.CDLL(str(library))
    for name, scalar in (("run_f64", ctypes.c_double), ("run_f32", ctypes.c_float)):
        getattr(lib, name).argtypes = [ctypes.c_int] * 2 + [ctypes.c_void_p] * 5 + [scalar] * 2 + [ctypes.c_longlong]
    return lib


def deform(x, y, z):
    return 0.06 * np.sin(np.pi * y) * np.sin(np.pi * z), 0.05 * np.sin(np.pi * x * z), 0.04 * np.cos(x * y)


@pytest.mark.parametrize("order", ORDERS)
def test_emulated_cuda_kernel_equals_reference(emulated, order):
    mesh = box_mesh((5, 1, 1), upper=(2.0, 1.0, 1.0), deform=deform)  # 5: the last block is partly idle
    geometry = compute_geometry(mesh, order)
    rng = np.random.default_rng(order)
    shape = geometry.jacobian.shape
    assert mesh.num_elements % default_elements_per_block(order) != 0 or default_elements_per_block(order) == 1
    for dtype, run, tolerance in ((np.float64, emulated.run_f64, 1e-13), (np.float32, emulated.run_f32, 3e-5)):
        d = np.ascontiguousarray(derivative_matrix(order), dtype=dtype)
        for h1, h2 in ((1.0, 0.0), (0.7, 2.5), (1 + rng.random(shape), rng.random(shape))):
            operator = HelmholtzOperator(geometry, NumpyBackend(), h1, h2, dtype=dtype)
            u = rng.standard_normal(shape).astype(dtype)
            expected = operator.apply_local(u)
            out = np.full(shape, np.nan, dtype=dtype)
            mass = d if operator._mass is None else operator._mass
            run(order, int(operator._mass is not None), u.ctypes.data, out.ctypes.data, operator._factors.ctypes.data,
                mass.ctypes.data, d.ctypes.data, operator._h1, operator._h2, shape[0])
            scale = np.abs(expected).max()
            assert np.abs(out - expected).max() <= tolerance * scale, (dtype, np.abs(out - expected).max(), scale)
