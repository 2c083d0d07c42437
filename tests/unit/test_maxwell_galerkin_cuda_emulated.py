"""The Galerkin form's CUDA kernel (systems/maxwell/kernels/galerkin.cu), run on the CPU, equals
WeightAdjustedOperator.rhs (galerkin.py, its default skew volume term) on fresh random data.

As in test_fdm_cuda_emulated.py: the text NVRTC would receive is compiled as C++20 with a shim in
which every CUDA thread of a block is a std::thread, __syncthreads() is a std::barrier and the
dynamic shared memory a per-block buffer filled with NaN (a read of a value no phase wrote shows).
So the kernel's indexing, the face-node mapping, the flux and its barriers between the
shared-memory phases are exercised with the launch galerkin_cuda.py uses (threads per block
default_threads(Q), two blocks per element): deformed PEC and periodic boxes and the O-grid
cylinder of tests/cylwave.py, N = 1, 2, 3, 5, 7, 11 at the default rule Q = N + 1 and some
rules Q > N + 1 (RULES: odd and even Q), float64 and float32 (N <= 7). To keep it fast,
from N = 5 only one element's blocks run (the rest of `out` is not compared). What this cannot
check (shared-memory limits, registers, NVRTC) is left to test_maxwell_galerkin_cuda.py on a GPU
and to the nvcc compile test. Skipped without a C++20 compiler.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.jit.nvrtc import source_text
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell.galerkin import WeightAdjustedOperator, quadrature_points
from lobatto.systems.maxwell.galerkin_cuda import (SOURCE, default_threads, matrices, shared_values,
                                                   square_matrices, square_shared_values)

from cylwave import cylinder_rea
from test_maxwell_galerkin import BOX, PERIODIC, simulation

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

ORDERS = (1, 2, 3, 5, 7, 11)
# besides each order's default launch (two Gauss planes per pass where Q is even, else one): one
# plane per pass (Q = N + 1 even), at N = 7 with four times the default threads (idle ones in
# every pass)
EXTRA = ((1, 64, 1), (3, 64, 1), (5, 64, 1), (7, 256, 1))
# rules of more than N + 1 points (the kernel takes any Q >= N + 1), default launches: Q odd and
# even, N = 7 at the strong form's rule (galerkin.strong_points)
RULES = ((2, 5), (3, 5), (3, 6), (7, 11))

SHIM = """
#include <barrier>
#include <cstring>
#include <thread>
#include <vector>
struct lobatto_dim3 { int x = 0, y = 0, z = 0; };
thread_local lobatto_dim3 threadIdx, blockIdx, blockDim, gridDim;
static std::barrier<>* lobatto_block_barrier;
static unsigned char* lobatto_block_shared;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __syncthreads() lobatto_block_barrier->arrive_and_wait()
#define LOBATTO_DYNAMIC_SHARED(name) unsigned char* name = lobatto_block_shared
"""

#: the emulated launch: each block in turn (also test_maxwell_galerkin_cuda_media_emulated.py's)
RUN_BLOCKS = """
// each block in turn: its shared memory filled with NaN, NT threads meeting at one barrier
template <int NT, typename Body>
static void run_blocks(size_t shared_bytes, const long long* blocks, int nblocks, Body body) {
    std::vector<unsigned char> shared(shared_bytes);
    for (int n = 0; n < nblocks; ++n) {
        std::memset(shared.data(), 0xff, shared.size());  // NaN in every value
        std::barrier<> block(NT);
        lobatto_block_barrier = &block;
        lobatto_block_shared = shared.data();
        std::vector<std::thread> threads;
        for (int x = 0; x < NT; ++x)
            threads.emplace_back([=] { threadIdx.x = x; blockIdx.x = (int)blocks[n]; body(); });
        for (auto& t : threads) t.join();
    }
}
"""

LAUNCH = RUN_BLOCKS + """
template <int P, int Q, typename T, int NT, int KP>
static void launch(const T* u, const T* sums, const T* factors, const long long* elements, const T* cof,
                   const T* wj, const T* normals, const T* fw, const T* mats, T* out, T ie, T im, T ce, T ch,
                   long long E, const long long* blocks, int nblocks) {
    run_blocks<NT>(sizeof(T) * lobatto::GalerkinLayout<P, Q, KP>::SIZE, blocks, nblocks, [=] {
        lobatto::galerkin_rhs_kernel<P, Q, T, NT, 1, KP>(u, sums, factors, elements, cof, wj, normals, fw, mats, out,
                                                          ie, im, ce, ch, E);
    });
}
template <int P, typename T, int NT>
static void launch_square(const T* u, const T* sums, const T* factors, const long long* elements, const T* cof,
                          const T* wj, const T* normals, const T* fw, const T* mats, T* out, T ie, T im, T ce, T ch,
                          long long E, const long long* blocks, int nblocks) {
    run_blocks<NT>(sizeof(T) * lobatto::GalerkinSquareLayout<P>::SIZE, blocks, nblocks, [=] {
        lobatto::galerkin_square_kernel<P, T, NT, 1>(u, sums, factors, elements, cof, wj, normals, fw, mats, out, ie,
                                                     im, ce, ch, E);
    });
}
"""


def square_launches():
    """(N, threads) of the square kernel's emulated launches (Q = N + 1): default_threads, and at
    N = 3 and 7 more threads than lines (idle ones in every pass), at N = 2 fewer than points."""
    return [(n, default_threads(n + 1)) for n in ORDERS] + [(3, 96), (7, 128), (2, 32)]


def launches():
    """(N, Q, threads, planes) of the emulated launches."""
    out = []
    for n in ORDERS:
        q = quadrature_points(n)
        out.append((n, q, default_threads(q), 2 if q % 2 == 0 else 1))
        out += [(n, q, threads, planes) for order, threads, planes in EXTRA if order == n]
    return out + [(n, q, default_threads(q), 2 if q % 2 == 0 else 1) for n, q in RULES]


UPDATE = """
template <typename T>
static void update(T* u, T* residual, const T* du, T a, T b, T dt, long long n) {
    std::vector<std::thread> threads;
    for (int x = 0; x < 8; ++x)  // one block of 8 threads: the grid-stride loop
        threads.emplace_back([=] {
            threadIdx.x = x; blockIdx.x = 0; blockDim.x = 8; gridDim.x = 1;
            lobatto::galerkin_stage_update_kernel<T>(u, residual, du, a, b, dt, n);
        });
    for (auto& t : threads) t.join();
}
extern "C" void update_f64(double* u, double* r, const double* du, double a, double b, double dt, long long n) {
    update<double>(u, r, du, a, b, dt, n);
}
template <int P, typename T>
static void faces(const T* u, T* out, long long E) {
    std::vector<std::thread> threads;
    for (int x = 0; x < 8; ++x)  // one block of 8 threads: the grid-stride loop
        threads.emplace_back([=] {
            threadIdx.x = x; blockIdx.x = 0; blockDim.x = 8; gridDim.x = 1;
            lobatto::galerkin_face_values_kernel<P, T>(u, out, E);
        });
    for (auto& t : threads) t.join();
}
template <int P, typename T>
static void affine(const T* u, const T* sums, const T* factors, const long long* elements, long long count,
                   const T* constants, const T* am, T* out, T ie, T im, T ce, T ch, long long E) {
    std::vector<std::thread> threads;
    for (int x = 0; x < 8; ++x)  // one block of 8 threads: the grid-stride loop
        threads.emplace_back([=] {
            threadIdx.x = x; blockIdx.x = 0; blockDim.x = 8; gridDim.x = 1;
            lobatto::galerkin_affine_kernel<P, T>(u, sums, factors, elements, count, constants, am, out, ie, im, ce,
                                                  ch, E);
        });
    for (auto& t : threads) t.join();
}
"""


def layouts() -> list:
    """(N, Q) of the layouts whose size test_shared_size_is_the_kernels checks: the default rule
    up to N = 17 (the largest whose float64 blocks fit an H100) and RULES."""
    return [(n, quadrature_points(n)) for n in ORDERS + (14, 15, 17)] + list(RULES)


def dispatch() -> str:
    lines = ['extern "C" int layout_size(int order, int q, int planes) {']
    for n, q in layouts():
        for kp in (1, 2):
            lines.append(f"    if (order == {n} && q == {q} && planes == {kp}) "
                         f"return lobatto::GalerkinLayout<{n + 1}, {q}, {kp}>::SIZE;")
    lines.append("    return -1;\n}")
    lines.append('extern "C" int square_layout_size(int p) {')
    for n in ORDERS + (14, 15):
        lines.append(f"    if (p == {n + 1}) return lobatto::GalerkinSquareLayout<{n + 1}>::SIZE;")
    lines.append("    return -1;\n}")
    for ctype, name in (("double", "f64"), ("float", "f32")):
        p = ", ".join(f"const {ctype}* a{i}" for i in range(8))
        lines.append(f'extern "C" void square_{name}(int order, int threads, const long long* elements, {p}, '
                     f'{ctype}* out, {ctype} ie, {ctype} im, {ctype} ce, {ctype} ch, long long E, '
                     'const long long* blocks, int nblocks) {')
        for n, nt in square_launches():
            lines.append(f"    if (order == {n} && threads == {nt}) launch_square<{n + 1}, {ctype}, {nt}>"
                         "(a0, a1, a2, elements, a3, a4, a5, a6, a7, out, ie, im, ce, ch, E, blocks, nblocks);")
        lines.append("}")
    for ctype, name in (("double", "f64"), ("float", "f32")):
        p = ", ".join(f"const {ctype}* a{i}" for i in range(8))
        lines.append(f'extern "C" void run_{name}(int order, int q, int threads, int planes, '
                     f'const long long* elements, {p}, '
                     f'{ctype}* out, {ctype} ie, {ctype} im, {ctype} ce, {ctype} ch, long long E, '
                     'const long long* blocks, int nblocks) {')
        for n, q, nt, kp in launches():
            lines.append(f"    if (order == {n} && q == {q} && threads == {nt} && planes == {kp}) "
                         f"launch<{n + 1}, {q}, {ctype}, {nt}, {kp}>"
                         "(a0, a1, a2, elements, a3, a4, a5, a6, a7, out, ie, im, ce, ch, E, blocks, nblocks);")
        lines.append("}")
    lines.append('extern "C" void faces_f64(int order, const double* u, double* out, long long E) {')
    for n in ORDERS:
        lines.append(f"    if (order == {n}) faces<{n + 1}, double>(u, out, E);")
    lines.append("}")
    lines.append('extern "C" void affine_f64(int order, const double* u, const double* sums, const double* factors, '
                 "const long long* elements, long long count, const double* constants, const double* am, double* out, "
                 "double ie, double im, double ce, double ch, long long E) {")
    for n in ORDERS:
        lines.append(f"    if (order == {n}) affine<{n + 1}, double>(u, sums, factors, elements, count, constants, am, "
                     "out, ie, im, ce, ch, E);")
    lines.append("}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("galerkin_emulated")
    source = folder / "galerkin_emulated.cpp"
    source.write_text(SHIM + source_text(SOURCE) + "\n" + LAUNCH + UPDATE + dispatch() + "\n")
    library = folder / "galerkin_emulated.so"
    cmd = [CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", str(source), "-o", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip(f"{CXX} has no C++20 <barrier>")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    lib = ctypes.CDLL(str(library))
    for name in ("run_f64", "run_f32"):
        getattr(lib, name).argtypes = ([ctypes.c_int] * 4 + [ctypes.c_void_p] * 10
                                       + [ctypes.c_double if name == "run_f64" else ctypes.c_float] * 4
                                       + [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int])
    for name in ("square_f64", "square_f32"):
        getattr(lib, name).argtypes = ([ctypes.c_int] * 2 + [ctypes.c_void_p] * 10
                                       + [ctypes.c_double if name == "square_f64" else ctypes.c_float] * 4
                                       + [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int])
    lib.affine_f64.argtypes = ([ctypes.c_int] + [ctypes.c_void_p] * 4 + [ctypes.c_longlong] + [ctypes.c_void_p] * 3
                               + [ctypes.c_double] * 4 + [ctypes.c_longlong])
    lib.update_f64.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_double] * 3 + [ctypes.c_longlong]
    lib.faces_f64.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
    return lib


@pytest.fixture(scope="module")
def cylinder(tmp_path_factory):
    path = tmp_path_factory.mktemp("cylwave") / "cylwave.rea"
    assert cylinder_rea(path, m=1, layers=2, length=4.0) == 10
    return {"generator": "nek", "file": str(path), "boundaries": {"PEC": "pec"}}


def emulate(lib, operator, factors, u, sums, epsilon, mu, alpha, dtype, elements, threads, planes, square=False):
    """The kernel's out for the blocks of ``elements`` (NaN elsewhere); square: galerkin_square_kernel's."""
    mats = square_matrices(operator.order) if square else matrices(operator.order, operator.points)
    cast = [np.ascontiguousarray(a, dtype=dtype) for a in (
        u, sums, factors, operator.weighted_cofactors, operator.inverse_jacobian_weights, operator.normals,
        operator.face_weights, mats)]
    out = np.full(u.shape, np.nan, dtype=dtype)
    blocks = np.array([2 * e + g for e in elements for g in (0, 1)], dtype=np.int64)
    z = (mu / epsilon) ** 0.5
    every = np.arange(u.shape[1], dtype=np.int64)  # block pair m computes element m
    rest = (every.ctypes.data, *(a.ctypes.data for a in cast), out.ctypes.data, 1 / epsilon, 1 / mu, alpha / z,
            alpha * z, u.shape[1], blocks.ctypes.data, len(blocks))
    if square:
        (lib.square_f64 if dtype == np.float64 else lib.square_f32)(operator.order, threads, *rest)
    else:
        (lib.run_f64 if dtype == np.float64 else lib.run_f32)(operator.order, operator.points, threads, planes, *rest)
    return out


@pytest.mark.parametrize("order,q,threads,planes", launches())
def test_emulated_kernel_equals_the_array_code(tmp_path, emulated, cylinder, order, q, threads, planes):
    rng = np.random.default_rng()
    meshes = {"box": BOX, "cylinder": cylinder} | ({"periodic": PERIODIC} if order <= 5 else {})
    for label, mesh in meshes.items():
        sim = simulation(tmp_path / label, mesh, order)
        operator, factors = sim.system.galerkin, np.asarray(sim.system.device_geometry["face_factors"])
        assert operator.volume == "skew" and operator.points == quadrature_points(order)
        if q != operator.points:  # a rule of more points (RULES)
            operator = WeightAdjustedOperator(sim.system.geometry, points=q)
        e, n = sim.u.shape[1], order + 1
        u = rng.standard_normal(sim.u.shape)
        sums = rng.standard_normal((6, e, 6, n, n))
        epsilon, mu, alpha = rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0), rng.uniform(0.2, 1.0)
        if label == "box":
            assert (factors != 1).any()  # PEC faces take the boundary branch
        expected = operator.rhs(np, u, (face_values(np, u, order), sums), factors, np.empty_like(u), epsilon, mu,
                                alpha)
        # every element at low order; from N = 5 one element with PEC faces: the box's first, the
        # cylinder's last (a curved element of the ring)
        elements = range(e) if order <= 3 else [0] if label == "box" else [e - 1]
        for dtype, tolerance in ((np.float64, 1e-12), (np.float32, 2e-5)):
            if dtype == np.float32 and (order > 7 or (order > 3 and label != "box")):
                continue  # the float32 path is the same code; keep the test short
            out = emulate(emulated, operator, factors, u, sums, epsilon, mu, alpha, dtype, elements, threads, planes)
            scale = np.abs(expected[:, elements]).max()
            error = np.abs(out[:, elements] - expected[:, elements]).max()
            assert error <= tolerance * scale, (label, np.dtype(dtype).name, error, scale)
        sim.close()


@pytest.mark.parametrize("order,threads", square_launches())
def test_emulated_square_kernel_equals_the_array_code(tmp_path, emulated, cylinder, order, threads):
    """galerkin_square_kernel (Q = N + 1) against the array code: deformed PEC and periodic boxes
    and the curved cylinder, upwind and central fluxes, float64 and float32."""
    rng = np.random.default_rng()
    meshes = {"box": BOX, "cylinder": cylinder} | ({"periodic": PERIODIC} if order <= 5 else {})
    for label, mesh in meshes.items():
        sim = simulation(tmp_path / label, mesh, order)
        operator, factors = sim.system.galerkin, np.asarray(sim.system.device_geometry["face_factors"])
        assert operator.volume == "skew" and operator.points == order + 1
        e, n = sim.u.shape[1], order + 1
        u = rng.standard_normal(sim.u.shape)
        sums = rng.standard_normal((6, e, 6, n, n))
        epsilon, mu = rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0)
        alpha = 0.0 if label == "periodic" or (label == "cylinder" and order % 2) else rng.uniform(0.2, 1.0)
        expected = operator.rhs(np, u, (face_values(np, u, order), sums), factors, np.empty_like(u), epsilon, mu,
                                alpha)
        elements = range(e) if order <= 3 else [0] if label == "box" else [e - 1]
        for dtype, tolerance in ((np.float64, 1e-12), (np.float32, 2e-5)):
            if dtype == np.float32 and (order > 7 or (order > 3 and label != "box")):
                continue
            out = emulate(emulated, operator, factors, u, sums, epsilon, mu, alpha, dtype, elements, threads, 1,
                          square=True)
            scale = np.abs(expected[:, elements]).max()
            error = np.abs(out[:, elements] - expected[:, elements]).max()
            assert error <= tolerance * scale, (label, np.dtype(dtype).name, alpha, error, scale)
        sim.close()


def test_emulated_stage_update(emulated):
    """residual = a residual + dt du, u += b residual; a = 0 discards the residual (NaN here)."""
    rng = np.random.default_rng()
    u, du = rng.standard_normal(37), rng.standard_normal(37)
    for a, residual in ((0.0, np.full(37, np.nan)), (-0.4, rng.standard_normal(37))):
        expected_r = dt_du = 0.3 * du
        if a:
            expected_r = a * residual + dt_du
        expected_u = u + 0.7 * expected_r
        got_u, got_r = u.copy(), residual.copy()
        emulated.update_f64(got_u.ctypes.data, got_r.ctypes.data, du.ctypes.data, a, 0.7, 0.3, 37)
        assert np.allclose(got_r, expected_r, rtol=1e-14, atol=0)
        assert np.allclose(got_u, expected_u, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("order", [1, 2, 5])
def test_emulated_face_values(tmp_path, emulated, cylinder, order):
    """galerkin_face_values_kernel equals systems/dg.face_values (the array code's traces) on
    fresh random data, bit for bit (a copy)."""
    sim = simulation(tmp_path, cylinder, order)
    u = np.random.default_rng().standard_normal(sim.u.shape)
    expected = face_values(np, u, order)
    out = np.full(expected.shape, np.nan)
    emulated.faces_f64(order, u.ctypes.data, out.ctypes.data, u.shape[1])
    assert np.array_equal(out, expected)
    sim.close()


def test_shared_size_is_the_kernels(emulated):
    """galerkin_cuda.shared_values (what the launch asks for) equals GalerkinLayout::SIZE."""
    for n, q in layouts():
        for planes in (1, 2):
            assert emulated.layout_size(n, q, planes) == shared_values(n + 1, q, planes), (n, q, planes)
    for n in ORDERS + (14, 15):
        assert emulated.square_layout_size(n + 1) == square_shared_values(n + 1), n


class _EmulatedFunction:
    """What galerkin_cuda launches through CuPy, run by the emulated library instead: checks the
    wrapper's launch shape and argument order against the kernel's."""

    def __init__(self, lib, name):
        self.lib, self.name = lib, name
        self.max_threads_per_block = 1024
        self.max_dynamic_shared_size_bytes = 48 * 1024

    def __call__(self, grid, block, args, shared_mem=0):
        pointer = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
        if "affine" in self.name:
            p = int(self.name.split("<")[1].split(",")[0])
            count, e = int(args[4]), int(args[-1])
            assert args[3].dtype == np.int64 and args[3].shape == (count,) and block == (256,)
            assert grid[0] * block[0] >= min(count * p**3, 65536 * 256)
            self.lib.affine_f64(p - 1, *pointer[:4], count, *pointer[5:8], *(float(x) for x in args[8:12]), e)
            return
        if "face_values" in self.name:
            p = int(self.name.split("<")[1].split(",")[0])
            assert block == (256,) and grid[0] * block[0] >= min(args[1].size, 65536 * 256)
            self.lib.faces_f64(p - 1, *pointer[:2], int(args[2]))
            return
        if "update" in self.name:
            assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args[:3])
            self.lib.update_f64(*pointer[:3], *(float(x) for x in args[3:6]), int(args[6]))
            return
        e, elements = int(args[-1]), args[3]
        if "square" in self.name:
            p, ctype, nt, _ = (x.strip() for x in self.name.split("<")[1].rstrip(">").split(","))
            assert ctype == "double" and grid == (2 * elements.size,) and block == (int(nt),)
            assert shared_mem == square_shared_values(int(p)) * 8 and elements.dtype == np.int64
            assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args[:3] + args[4:10])
            blocks = np.arange(2 * elements.size, dtype=np.int64)
            self.lib.square_f64(int(p) - 1, int(nt), pointer[3], *pointer[:3], *pointer[4:10],
                                *(float(x) for x in args[10:14]), e, blocks.ctypes.data, len(blocks))
            return
        p, q, ctype, nt, _, kp = (x.strip() for x in self.name.split("<")[1].rstrip(">").split(","))
        assert ctype == "double" and grid == (2 * elements.size,) and block == (int(nt),) and elements.dtype == np.int64
        assert shared_mem == shared_values(int(p), int(q), int(kp)) * 8
        assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args[:3] + args[4:10])
        blocks = np.arange(2 * elements.size, dtype=np.int64)
        self.lib.run_f64(int(p) - 1, int(q), int(nt), int(kp), pointer[3], *pointer[:3], *pointer[4:10],
                         *(float(x) for x in args[10:14]), e, blocks.ctypes.data, len(blocks))


def test_the_wrapper_launches_the_kernel(tmp_path, emulated, monkeypatch):
    """GalerkinCuda (rhs and stage) and kernel_for, with the launches routed to the emulation."""
    import types

    from lobatto.systems.maxwell import galerkin_cuda

    module = types.SimpleNamespace(get_function=lambda name: _EmulatedFunction(emulated, name))
    monkeypatch.setattr(galerkin_cuda, "get_module", lambda source, names, options=(): module)
    backend = types.SimpleNamespace(name="cuda", xp=np, dtype=np.dtype(np.float64), max_shared_per_block=227 * 1024,
                                    asarray=lambda a, dtype=None: np.asarray(a, dtype=dtype or np.float64))
    rng = np.random.default_rng()
    order = 2  # P = 3: odd rows, padded; Q = 3: one plane per pass
    sim = simulation(tmp_path, BOX, order)
    operator, factors = sim.system.galerkin, np.asarray(sim.system.device_geometry["face_factors"])
    kernel = galerkin_cuda.kernel_for(backend, operator)
    assert kernel is not None and kernel.threads == default_threads(operator.points)
    assert kernel.square  # Q = N + 1: the square kernel; the general passes below
    general = galerkin_cuda.GalerkinCuda(backend, operator, square=False)
    assert general.launch(np.float64)[1] == 1  # Q odd: one plane per pass
    with pytest.raises(ValueError, match="N \\+ 1"):
        galerkin_cuda.GalerkinCuda(backend, WeightAdjustedOperator(sim.system.geometry, points=5), square=True)
    # the strong form (kept for comparisons) is the array code's alone
    assert galerkin_cuda.kernel_for(backend, WeightAdjustedOperator(sim.system.geometry, volume="strong")) is None
    with pytest.raises(ValueError, match="skew"):
        galerkin_cuda.GalerkinCuda(backend, WeightAdjustedOperator(sim.system.geometry, volume="strong"))
    e, n = sim.u.shape[1], order + 1
    u, residual = rng.standard_normal(sim.u.shape), rng.standard_normal(sim.u.shape)
    sums = rng.standard_normal((6, e, 6, n, n))
    epsilon, mu, alpha, a, b, dt = 1.3, 0.8, 1.0, -0.6, 0.4, 0.01
    expected = operator.rhs(np, u, (face_values(np, u, order), sums), factors, np.empty_like(u), epsilon, mu, alpha)
    for k in (kernel, general):
        out = k(u, sums, factors, np.full_like(u, np.nan), epsilon, mu, alpha)
        assert np.abs(out - expected).max() <= 1e-12 * np.abs(expected).max()
    expected_residual = a * residual + dt * expected
    expected_u = u + b * expected_residual
    traces = kernel.face_values(u, np.full((6, e, 6, n, n), np.nan))  # what attach's traces call
    assert np.array_equal(traces, face_values(np, u, order))
    kernel.stage(u, residual, sums, factors, epsilon, mu, alpha, a, b, dt)
    assert np.allclose(residual, expected_residual, rtol=0, atol=1e-12 * np.abs(expected_residual).max())
    assert np.allclose(u, expected_u, rtol=0, atol=1e-12 * np.abs(expected_u).max())
    # beyond the square block's shared memory (3176 bytes at N = 2; the general one's 2816) the general passes
    small = types.SimpleNamespace(**{**vars(backend), "max_shared_per_block": 3000})
    assert not galerkin_cuda.kernel_for(small, operator).square
    sim.close()


SHEARED = {"elements": [2, 1, 2], "boundary": "pec",  # parallelepipeds: every element affine
           "deform": {"x": "0.2*y + 0.1*z", "y": "0.1*x", "z": "-0.15*y"}}


@pytest.mark.parametrize("mesh_name,points,central", [("cylinder", None, False), ("cylinder", 5, True),
                                                     ("cylinder", 6, False), ("sheared", None, True),
                                                     ("sheared", 5, False)])
def test_affine_elements_take_the_closed_form(tmp_path, emulated, monkeypatch, cylinder, mesh_name, points,
                                              central):
    """Affine elements (the cylinder's two straight ones; every element of a sheared box) take
    galerkin_affine_kernel, the others the block kernel (over the list of curved elements; none on
    the sheared box): together the array code's rhs on fresh random data, and the stage; at
    N = 3 with the default rule Q = N + 1 = 4 and with Q = 5, 6; upwind or central flux."""
    import types

    from lobatto.systems.maxwell import galerkin_cuda

    module = types.SimpleNamespace(get_function=lambda name: _EmulatedFunction(emulated, name))
    monkeypatch.setattr(galerkin_cuda, "get_module", lambda source, names, options=(): module)
    backend = types.SimpleNamespace(name="cuda", xp=np, dtype=np.dtype(np.float64), max_shared_per_block=227 * 1024,
                                    asarray=lambda a, dtype=None: np.asarray(a, dtype=dtype or np.float64))
    rng = np.random.default_rng()
    order = 3
    sim = simulation(tmp_path, cylinder if mesh_name == "cylinder" else SHEARED, order)
    operator, factors = sim.system.galerkin, np.asarray(sim.system.device_geometry["face_factors"])
    if points is not None:
        operator = WeightAdjustedOperator(sim.system.geometry, points=points)
    e, n = sim.u.shape[1], order + 1
    kernel = galerkin_cuda.kernel_for(backend, operator)
    assert kernel.affine_elements == {"cylinder": 2, "sheared": e}[mesh_name]
    assert kernel.q == (points or order + 1) and kernel.square == (points is None)
    u, residual = rng.standard_normal(sim.u.shape), rng.standard_normal(sim.u.shape)
    sums = rng.standard_normal((6, e, 6, n, n))
    epsilon, mu, a, b, dt = rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0), -0.6, 0.4, 0.01
    alpha = 0.0 if central else rng.uniform(0.2, 1.0)
    expected = operator.rhs(np, u, (face_values(np, u, order), sums), factors, np.empty_like(u), epsilon, mu, alpha)
    out = kernel(u, sums, factors, np.full_like(u, np.nan), epsilon, mu, alpha)
    assert np.abs(out - expected).max() <= 1e-12 * np.abs(expected).max()
    expected_residual = a * residual + dt * expected
    expected_u = u + b * expected_residual
    traces = kernel.face_values(u, np.full((6, e, 6, n, n), np.nan))  # what attach's traces call
    assert np.array_equal(traces, face_values(np, u, order))
    kernel.stage(u, residual, sums, factors, epsilon, mu, alpha, a, b, dt)
    assert np.allclose(residual, expected_residual, rtol=0, atol=1e-12 * np.abs(expected_residual).max())
    assert np.allclose(u, expected_u, rtol=0, atol=1e-12 * np.abs(expected_u).max())
    sim.close()
