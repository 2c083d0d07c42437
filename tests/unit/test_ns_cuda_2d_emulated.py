"""The Navier–Stokes CUDA kernels' 2-D instantiations (D = 2 of kernels/differential.cu and
kernels/advection.cu), run on the CPU, equal the 3-D reference on the extruded twin.

As in test_operators_cuda_emulated.py: the text NVRTC would receive is compiled as C++20 with a
shim in which every CUDA thread of a block is a std::thread, shared memory is a per-block buffer
(filled with NaN bytes, so a read of an unwritten value shows) and __syncthreads() is a
std::barrier, with the launch shapes and shared-memory sizes the factories use. 13 quads: the
last block of every kernel is partly idle.

The oracle (the 2-D reference of operators/differential.py and advection.py is the ns2d
branch's): the 3-D NumPy reference kernels on ``extrude_quads`` of the mesh with z-constant data
(plan section 2.1). Pointwise results are equal in every plane k; the mass-weighted ones carry the
GLL weight w_k of the plane; the fine grid's contravariant velocity the Gauss weight of its plane.
Every layout the factories accept is run: velocity with 2 or 3 components, the curl's w_z or
3-vector, metrics and fine factors 3 x 3 or 2 x 2. Skipped without a C++20 compiler.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import derivative_matrix, gll_weights
from lobatto.jit.nvrtc import source_text
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.operators import advection_cuda, differential_cuda
from lobatto.operators.advection import Advection, default_fine_points

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

ORDERS = (3, 7)
REFERENCE = NumpyBackend()
CTYPES = {np.float64: "double", np.float32: "float"}

SHIM = """
#include <barrier>
#include <cstring>
#include <thread>
#include <vector>
struct lobatto_dim3 { int x = 0, y = 0, z = 0; };
thread_local lobatto_dim3 threadIdx, blockIdx;
static std::barrier<>* lobatto_block_barrier;
static unsigned char* lobatto_dynamic_shared;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
#define __align__(x)
#define __syncthreads() lobatto_block_barrier->arrive_and_wait()
"""

LAUNCH = """
template <class F>
static void launch(long long blocks, int tx, int ty, long long shared, F body) {
    std::vector<double> smem(shared / 8 + 2);
    for (long long b = 0; b < blocks; ++b) {
        std::memset(smem.data(), 0xFF, smem.size() * sizeof(double));  // NaN in float and double
        std::barrier<> block(tx * ty);
        lobatto_block_barrier = &block;
        lobatto_dynamic_shared = reinterpret_cast<unsigned char*>(smem.data());
        std::vector<std::thread> threads;
        for (int y = 0; y < ty; ++y)
            for (int x = 0; x < tx; ++x)
                threads.emplace_back([=] { threadIdx.x = x; threadIdx.y = y; blockIdx.x = (int)b; body(); });
        for (auto& t : threads) t.join();
    }
}
"""

# (kernel, order, dtype, layout): curl (VC, OC, MR), weak_divergence_minus_curl (MR,),
# mass_minus_gradient (C, MR), contravariant (VC, OC, F), apply ()
LAYOUTS = {
    "curl": [(2, 1, 3), (2, 1, 2), (2, 3, 3), (3, 3, 3), (3, 3, 2)],
    "weak_divergence_minus_curl": [(3,), (2,)],
    "mass_minus_gradient": [(2, 3), (3, 2)],
    "contravariant": [(2, 2, 3), (2, 2, 2), (3, 3, 3), (2, 3, 3), (2, 3, 2)],
    "apply": [()],
}


def instances():
    for order in ORDERS:
        for dtype in (np.float64, np.float32):
            for kernel, layouts in LAYOUTS.items():
                for layout in layouts if dtype == np.float64 else layouts[:1]:
                    yield kernel, order, dtype, layout


def symbol(kernel, order, dtype, layout, mass=False):
    tail = "_".join(map(str, layout))
    return f"{kernel}{'_mass' if mass else ''}_{order}_{CTYPES[dtype]}_{tail}"


def wrapper(kernel, order, dtype, layout) -> str:
    """extern "C" launchers of one instance (the curl with and without the mass)."""
    t, n = CTYPES[dtype], order + 1
    lay = "".join(f", {x}" for x in layout)
    if kernel in ("contravariant", "apply"):
        m = default_fine_points(order)
        epb = advection_cuda.default_elements_per_block(m)
        threads = m * m
    else:
        epb = differential_cuda.default_elements_per_block(order)
        threads = n * n
    go = f"launch((E + {epb} - 1) / {epb}, {threads}, {epb}, shared, [=] {{ lobatto::"
    if kernel == "curl":
        return "\n".join(
            f'extern "C" void {symbol(kernel, order, dtype, layout, mass)}(const {t}* v, const {t}* metrics, '
            f"const {t}* mass, const {t}* D, {t}* out, long long E, long long shared) {{\n"
            f"    {go}curl_kernel<{order}, {t}, {'true' if mass else 'false'}, {epb}, 2{lay}>"
            f"(v, metrics, mass, D, out, E); }});\n}}" for mass in (False, True))
    if kernel == "weak_divergence_minus_curl":
        return (f'extern "C" void {symbol(kernel, order, dtype, layout)}(const {t}* f, const {t}* w, const {t}* metrics, '
                f"const {t}* mass, const {t}* D, {t}* out, {t} nu, long long E, long long shared) {{\n"
                f"    {go}weak_divergence_minus_curl_kernel<{order}, {t}, {epb}, 2{lay}>"
                f"(f, w, metrics, mass, D, out, nu, E); }});\n}}")
    if kernel == "mass_minus_gradient":
        return (f'extern "C" void {symbol(kernel, order, dtype, layout)}(const {t}* f, const {t}* p, const {t}* metrics, '
                f"const {t}* mass, const {t}* D, {t}* out, long long E, long long shared) {{\n"
                f"    {go}mass_minus_gradient_kernel<{order}, {t}, {epb}, 2{lay}>(f, p, metrics, mass, D, out, E); }});\n}}")
    m = default_fine_points(order)
    if kernel == "contravariant":
        return (f'extern "C" void {symbol(kernel, order, dtype, layout)}(const {t}* u, const {t}* G, const {t}* I, '
                f"{t}* out, long long E, long long shared) {{\n"
                f"    {go}advection_contravariant_kernel<{order}, {m}, {t}, {epb}, 2{lay}>(u, G, I, out, E); }});\n}}")
    return (f'extern "C" void {symbol(kernel, order, dtype, layout)}(const {t}* U, const {t}* fields, const {t}* I, '
            f"const {t}* ID, {t}* out, long long E, int K, long long shared) {{\n"
            f"    {go}advection_apply_kernel<{order}, {m}, {t}, {epb}, 2>(U, fields, I, ID, out, E, K); }});\n}}")


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ns_2d_emulated")
    text = ""
    for source in (differential_cuda.SOURCE, advection_cuda.SOURCE):
        body = source_text(source)
        if text:  # common.cuh once: drop the second copy, between source_text's markers
            begin, end = body.index("// ---- begin common.cuh"), body.index("// ---- end common.cuh")
            body = body[:begin] + body[end:]
        dynamic = "extern __shared__ __align__(16) unsigned char smem_raw[];"
        assert dynamic in body
        text += body.replace(dynamic, "unsigned char* smem_raw = lobatto_dynamic_shared;") + "\n"
    source = folder / "ns_2d_emulated.cpp"
    source.write_text(SHIM + text + LAUNCH + "\n".join(wrapper(*i) for i in instances()) + "\n")
    library = folder / "ns_2d_emulated.so"
    cmd = [CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", str(source), "-o", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip(f"{CXX} has no C++20 <barrier>")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    return ctypes.CDLL(str(library))


def call(lib, name, *args):
    """The launcher ``name`` on NumPy arrays (pointers), floats of the kernel's dtype and ints."""
    converted = []
    for a in args:
        if isinstance(a, ctypes.c_int):
            converted.append(a)
        elif isinstance(a, np.ndarray):
            assert a.flags.c_contiguous
            converted.append(ctypes.c_void_p(a.ctypes.data))
        elif isinstance(a, np.floating):
            converted.append(ctypes.c_double(a) if a.dtype == np.float64 else ctypes.c_float(a))
        else:
            converted.append(ctypes.c_longlong(a))
    getattr(lib, name)(*converted)


def deform_xy(x, y, z):
    return 0.06 * np.sin(np.pi * x) * np.sin(2 * np.pi * y), 0.05 * np.sin(2 * np.pi * x) * np.cos(np.pi * y), 0 * z


MESH = box_mesh((13, 1), upper=(2.0, 1.0), periodic=(True, False), deform=deform_xy)
TWIN = extrude_quads(MESH)


def extruded(a2, n):
    """(..., E, 1, n, n) -> the z-constant (..., E, n, n, n) of the twin."""
    return np.ascontiguousarray(np.repeat(a2, n, axis=-3))


def close(got, expected, dtype):
    tolerance = 1e-12 if dtype == np.float64 else 2e-5
    error, scale = np.abs(got - expected).max(), np.abs(expected).max()
    assert np.isfinite(got).all() and scale > 0 and error <= tolerance * scale, (error, scale)


@pytest.fixture(scope="module", params=ORDERS)
def meshes(request):
    order = request.param
    return order, compute_geometry(MESH, order), compute_geometry(TWIN, order)


def test_emulated_differential_2d_equals_extruded_reference(emulated, meshes):
    order, g2, g3 = meshes
    n, E = order + 1, MESH.num_elements
    rng = np.random.default_rng(order)
    w = gll_weights(order)
    element = (E, 1, n, n)
    D3 = derivative_matrix(order)
    for kernel, o, dtype, layout in instances():
        if o != order or kernel not in ("curl", "weak_divergence_minus_curl", "mass_minus_gradient"):
            continue
        rows = layout[-1]
        metrics = np.ascontiguousarray(g2.metrics[:rows, :rows], dtype=dtype)
        mass, d = g2.mass.astype(dtype), np.ascontiguousarray(derivative_matrix(order), dtype=dtype)
        epb = differential_cuda.default_elements_per_block(order)
        shared = differential_cuda.shared_bytes(kernel, order, np.dtype(dtype).itemsize, epb, 2, layout)
        k = 1  # a plane of the twin (any: the data are z-constant)
        if kernel == "curl":
            vc, oc, _ = layout
            v = rng.standard_normal((vc,) + element)
            v3 = extruded(np.concatenate([v, np.zeros((3 - vc,) + element)]), n)
            expected = REFERENCE.kernel("curl", order=order)(v3, g3.metrics, None, D3, np.empty_like(v3))
            for weighted in (False, True):
                out = np.full((oc,) + element, np.nan, dtype=dtype)
                call(emulated, symbol(kernel, order, dtype, layout, weighted), v.astype(dtype), metrics,
                     mass if weighted else d, d, out, E, shared)
                plane = expected[3 - oc:, :, k:k + 1] * (g2.mass if weighted else 1.0)
                close(out, plane, dtype)
                if oc == 3 and vc == 2:
                    assert not out[:2].any()  # exact zeros
        elif kernel == "weak_divergence_minus_curl":
            # the twin's flux along t vanishes for f_z = 0 and w = (0, 0, w_z) (z-constant)
            f, wz, nu = rng.standard_normal((2,) + element), rng.standard_normal(element), 0.37
            f3 = extruded(np.concatenate([f, np.zeros((1,) + element)]), n)
            w3 = extruded(np.stack([np.zeros(element), np.zeros(element), wz]), n)
            expected = REFERENCE.kernel("weak_divergence_minus_curl", order=order)(
                f3, w3, g3.metrics, g3.mass, D3, nu, np.empty(f3.shape[1:]))
            out = np.full(element, np.nan, dtype=dtype)
            call(emulated, symbol(kernel, order, dtype, layout), f.astype(dtype), wz.astype(dtype), metrics, mass, d,
                 out, dtype(nu), E, shared)
            close(out, expected[:, k:k + 1] / w[k], dtype)
        else:
            c = layout[0]
            f, p = rng.standard_normal((c,) + element), rng.standard_normal(element)
            f3 = extruded(np.concatenate([f, np.zeros((3 - c,) + element)]), n)
            expected = REFERENCE.kernel("mass_minus_gradient", order=order)(
                f3, extruded(p, n), g3.metrics, g3.mass, D3, np.empty_like(f3))
            out = np.full((c,) + element, np.nan, dtype=dtype)
            call(emulated, symbol(kernel, order, dtype, layout), f.astype(dtype), p.astype(dtype), metrics, mass, d,
                 out, E, shared)
            close(out, expected[:c, :, k:k + 1] / w[k], dtype)


def test_emulated_advection_2d_equals_extruded_reference(emulated, meshes):
    order, g2, g3 = meshes
    n, E = order + 1, MESH.num_elements
    m = default_fine_points(order)
    epb = advection_cuda.default_elements_per_block(m)
    rng = np.random.default_rng(10 + order)
    twin = Advection(g3, REFERENCE)
    gauss = np.polynomial.legendre.leggauss(m)[1]
    w = gll_weights(order)
    element, fine = (E, 1, n, n), (E, 1, m, m)
    c = 2  # a fine plane of the twin
    factors = twin.factors[:, :, :, c:c + 1] / gauss[c]  # the 2-D mesh's G = W J d r_b / d x_a (z-constant twin)
    for kernel, o, dtype, layout in instances():
        if o != order or kernel not in ("contravariant", "apply"):
            continue
        interp = np.ascontiguousarray(twin.interp, dtype=dtype)
        if kernel == "contravariant":
            vc, oc, f = layout
            u = rng.standard_normal((vc,) + element)
            u3 = extruded(np.concatenate([u, np.zeros((3 - vc,) + element)]), n)
            expected = twin.contravariant(u3)[:, :, c:c + 1] / gauss[c]
            if f == 2:  # U_t needs G's t row: 0 without it
                expected[2:] = 0
            out = np.full((oc,) + fine, np.nan, dtype=dtype)
            block, per = advection_cuda.shared_values(order, m, "contravariant", 2, 3 if layout == (3, 3, 3) else 2)
            call(emulated, symbol(kernel, order, dtype, layout), u.astype(dtype),
                 np.ascontiguousarray(factors[:f, :f], dtype=dtype), interp, out, E,
                 (block + epb * per) * np.dtype(dtype).itemsize)
            close(out[:2], expected[:2], dtype)
            if oc == 3:
                assert np.abs(out[2] - expected[2]).max() <= 1e-12 * np.abs(expected[:2]).max()
        else:
            k = 2  # fields
            u = rng.standard_normal((2,) + element)
            u3 = extruded(np.concatenate([u, np.zeros((1,) + element)]), n)
            fields = rng.standard_normal((k,) + element)
            contravariant = twin.contravariant(u3)
            expected = twin.convective_with(contravariant, extruded(fields, n))[:, :, 1:2] / w[1]
            U = np.ascontiguousarray(contravariant[:2, :, c:c + 1] / gauss[c], dtype=dtype)
            out = np.full((k,) + element, np.nan, dtype=dtype)
            block, per = advection_cuda.shared_values(order, m, "apply", 2)
            call(emulated, symbol(kernel, order, dtype, layout), U, fields.astype(dtype), interp,
                 np.ascontiguousarray(twin.interp_derivative, dtype=dtype), out, E, ctypes.c_int(k),
                 (block + epb * per) * np.dtype(dtype).itemsize)
            close(out, expected, dtype)
