"""Maxwell's CUDA kernels (systems/maxwell/kernels/maxwell.cu) for a 2-D mesh (DIM = 2), run on
the CPU, equal the reference kernels (reference.py, materials.py) on fresh random data; so do
the listed traces and the dipole kernel (terms_cuda, source_cuda) with dim = 2.

As in test_maxwell_galerkin_cuda_emulated.py: the text NVRTC would receive is compiled as C++20
with a shim in which every CUDA thread of a block is a std::thread, __syncthreads() a
std::barrier and the dynamic shared memory one buffer filled with NaN before each block (a read
of a value no phase wrote shows, and a write past the bytes the launch allocates fails). The
launch is the one cuda.py makes (cuda_launch.default_launch with dim = 2: elements per block,
threads, shared bytes, face phase, SPLIT), and the forced variants the defaults do not reach at
these orders (no face phase, SPLIT 2). Checked: the traces,
the rhs (also over a range of elements), the rhs in a medium given per point, the stage, and the
stage with the face exchange folded in (partner ids of face_point_ids, partners on another rank
read from ghost rows, the traces it writes for the next stage), on box_mesh((3, 2)) at N = 3 and
a deformed one at N = 3 and 7, float64 to 1e-12 and float32 (N = 3) to 1e-5 relative. What this
cannot check (NVRTC, registers, shared-memory limits, the CuPy launch) is
tests/gpu/test_maxwell_2d_gpu.py's on a GPU. Skipped without a C++20 compiler.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.jit.nvrtc import source_text
from lobatto.mesh import box_mesh, face_point_ids
from lobatto.systems.maxwell.cuda import SOURCE
from lobatto.systems.maxwell.cuda_launch import LaunchConfig, default_launch, shared_bytes, split_mode
from lobatto.systems.maxwell.fused import partner_map
from lobatto.systems.maxwell.system import MaxwellSystem
from planar import deform_xy

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

MAX_SHARED = 227 * 1024  # an H100's per-block limit (what cuda.py reads from the device)

SHIM = """
#include <barrier>
#include <cstring>
#include <thread>
#include <vector>
struct lobatto_dim3 { int x = 0, y = 0, z = 0; };
thread_local lobatto_dim3 threadIdx, blockIdx, blockDim, gridDim;
static std::barrier<>* lobatto_block_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __align__(x)
#define __syncthreads() lobatto_block_barrier->arrive_and_wait()
"""

LAUNCHER = """
namespace lobatto { alignas(16) unsigned char lobatto_smem[1 << 20]; }
// Every byte NaN before each block; returns 1 if a block wrote past the `shared` bytes the
// launch allocates (a read there gives NaN, which the comparison shows).
template <typename F>
static int run_blocks(int grid, int threads, long long shared, F body) {
    const long long size = sizeof(lobatto::lobatto_smem);
    for (int bx = 0; bx < grid; ++bx) {
        std::memset(lobatto::lobatto_smem, 0xff, size);
        std::barrier<> block(threads);
        lobatto_block_barrier = &block;
        std::vector<std::thread> ts;
        for (int x = 0; x < threads; ++x)
            ts.emplace_back([=] { threadIdx.x = x; blockIdx.x = bx; blockDim.x = threads; gridDim.x = grid; body(); });
        for (auto& t : ts) t.join();
        for (long long b = shared; b < size; ++b)
            if (lobatto::lobatto_smem[b] != 0xff) return 1;
    }
    return 0;
}
"""

# one C entry per kernel kind: p the pointer arguments in the kernel's order, s the scalars
# (inv_eps, inv_mu, ce, ch, a, b, dt), then the launch
ENTRY = {
    "rhs": """lobatto::maxwell_rhs_kernel<{N}, 2, T, {FP}, {SP}>((const T*)p[0], (T*)p[1], (const T*)p[2], GEOM,
              E, first, stop, epb, (T)s[0], (T)s[1], (T)s[2], (T)s[3]);""",
    "rhs_medium": """lobatto::maxwell_rhs_medium_kernel<{N}, 2, T, {FP}, {SP}>((const T*)p[0], (T*)p[1], (const T*)p[2],
              GEOM, E, first, stop, epb, (T)s[0], (T)s[1], (T)s[2], (T)s[3], (const T*)p[12], (const T*)p[13],
              (const T*)p[14], (const T*)p[15], has_sigma, cs);""",
    "stage": """lobatto::maxwell_stage_kernel<{N}, 2, T, {FP}, {SP}>((T*)p[0], (T*)p[1], (const T*)p[2], GEOM,
              E, first, stop, epb, (T)s[0], (T)s[1], (T)s[2], (T)s[3], (T)s[4], (T)s[5], (T)s[6]);""",
    "stage_pairs": """lobatto::maxwell_stage_pairs_kernel<{N}, 2, T, {FP}, false, {SP}>((T*)p[0], (T*)p[1], (const T*)p[2],
              (const T*)p[16], (T*)p[17], (const int*)p[18], has_sigma, GEOM, E, first, stop, epb, (T)s[0], (T)s[1],
              (T)s[2], (T)s[3], (T)s[4], (T)s[5], (T)s[6]);""",
    "stage_ghosts": """lobatto::maxwell_stage_pairs_kernel<{N}, 2, T, {FP}, true, {SP}>((T*)p[0], (T*)p[1], (const T*)p[2],
              (const T*)p[16], (T*)p[17], (const int*)p[18], has_sigma, GEOM, E, first, stop, epb, (T)s[0], (T)s[1],
              (T)s[2], (T)s[3], (T)s[4], (T)s[5], (T)s[6]);""",
}
GEOM = ("(const T*)p[3], (const T*)p[4], (const T*)p[5], (const signed char*)p[6], use_affine, (const T*)p[7], "
        "(const T*)p[8], (const T*)p[9], (const T*)p[10]")


def entry_name(kind, order, ctype, cfg):
    return f"{kind}_{order}_{ctype}_{int(cfg.face_phase)}_{cfg.split}"


def build(tmp_path, order, ctype, configs):
    """A library with one entry per (kind, launch configuration), and the traces kernel."""
    parts = [SHIM, source_text(SOURCE), LAUNCHER, f"typedef {ctype} T;"]
    for kind, cfg in configs:
        call = ENTRY[kind].format(N=order, FP="true" if cfg.face_phase else "false", SP=cfg.split).replace("GEOM", GEOM)
        parts.append(
            f'extern "C" int {entry_name(kind, order, ctype, cfg)}(void** p, const double* s, long long E, '
            "long long first, long long stop, int epb, int use_affine, int has_sigma, long long cs, int grid, "
            "int threads, long long shared) {\n"
            f"    return run_blocks(grid, threads, shared, [=] {{ {call} }});\n}}")
    parts.append(
        f'extern "C" void traces_{order}_{ctype}(const T* u, const T* normals, T* out, long long E) {{\n'
        f"    run_blocks(3, 32, 0, [=] {{ lobatto::maxwell_traces_kernel<{order}, 2, T>(u, normals, out, E); }});\n}}")
    source = tmp_path / f"mx2d_{order}_{ctype}.cpp"
    source.write_text("\n".join(parts))
    library = tmp_path / f"mx2d_{order}_{ctype}.so"
    subprocess.run([CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-Wno-unknown-pragmas", str(source),
                    "-o", str(library)], check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(library))


class Case:
    """A 2-D MaxwellSystem on the NumPy backend (the reference), its geometry in ``dtype``, the
    emulated kernels of its order, and fresh random data."""

    def __init__(self, tmp_path, order, deformed, dtype):
        mesh = box_mesh((3, 2), lower=(0, 0), upper=(1.5, 1.0), deform=deform_xy if deformed else None)
        self.system = MaxwellSystem(mesh, order, NumpyBackend(), epsilon=1.7, mu=0.8)
        self.order, self.dtype, self.mesh = order, np.dtype(dtype), mesh
        self.ctype = "double" if self.dtype == np.float64 else "float"
        self.geometry = {k: (np.ascontiguousarray(v, dtype=self.dtype) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
                             else v) for k, v in self.system.device_geometry.items()}
        self.curved = bool((self.geometry["affine"] == 0).any())
        self.rng = np.random.default_rng(7 + order + 10 * deformed)
        e, n = mesh.num_elements, order + 1
        self.u_shape, self.face_shape = (6, e, 1, n, n), (6, e, 4, 1, n)
        split = split_mode(order, self.dtype.itemsize, MAX_SHARED, self.curved, dim=2)
        default = default_launch(order, self.dtype, MAX_SHARED, split, dim=2)
        # the defaults (one block holds the 6 elements), then blocks of 4 (the last of 2):
        # no face phase, and SPLIT 2 (J a^b read from device
        # memory) with it on the curved mesh
        self.configs = [default, self.forced(4, False, split)]
        if self.curved:
            self.configs.append(self.forced(4, True, 2))
        self.lib = build(tmp_path, order, self.ctype,
                         [(kind, cfg) for kind in ENTRY for cfg in self.configs])

    def forced(self, epb, face_phase, split):
        smem = shared_bytes(self.order, self.dtype.itemsize, epb, face_phase, split, dim=2)
        return LaunchConfig(epb, 96, smem, None, face_phase, split)

    def random(self, shape):
        return np.ascontiguousarray(self.rng.standard_normal(shape), dtype=self.dtype)

    def compact(self):
        m = self.geometry["metrics"]
        return np.ascontiguousarray(m[:, :, :, 0, 0, 0].reshape(9, -1).T)

    def launch(self, kind, cfg, arrays, scalars=(), elements=None, has_sigma=0, cs=0):
        g = self.geometry
        e = self.u_shape[1]
        first, stop = (0, e) if elements is None else elements
        slots = [None] * 19
        for i, a in arrays.items():
            slots[i] = a
        slots[3:11] = [g["metrics"], g["jacobian"], self.compact(), g["affine"], g["normals"], g["lift"],
                       g["face_factors"], g["derivative"]]
        dummy = np.zeros(9, dtype=self.dtype)
        pointers = (ctypes.c_void_p * 19)(*[(dummy if a is None else a).ctypes.data for a in slots])
        s = (ctypes.c_double * 7)(*(list(scalars) + [0.0] * (7 - len(scalars))))
        grid = -(-(stop - first) // cfg.elements_per_block)
        fn = getattr(self.lib, entry_name(kind, self.order, self.ctype, cfg))
        beyond = fn(pointers, s, ctypes.c_longlong(e), ctypes.c_longlong(first), ctypes.c_longlong(stop),
                    ctypes.c_int(cfg.elements_per_block), ctypes.c_int(1), ctypes.c_int(has_sigma), ctypes.c_longlong(cs),
                    ctypes.c_int(grid), ctypes.c_int(cfg.threads), ctypes.c_longlong(cfg.shared_bytes))
        assert beyond == 0, f"{kind} wrote past its {cfg.shared_bytes} bytes of shared memory ({cfg})"

    def material(self, epsilon, mu, alpha):
        import math

        z = math.sqrt(mu / epsilon)
        return 1.0 / epsilon, 1.0 / mu, alpha / z, alpha * z

    def reference(self, name):
        return self.system.backend.kernel(name, order=self.order)

    def reference_stage(self, u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt):
        """The 2N-storage stage the kernel fuses: residual = a residual + dt rhs(u); u += b residual."""
        du = self.reference("maxwell_rhs")(u, sums, geometry, np.zeros_like(u), epsilon, mu, alpha)
        residual *= a
        residual += dt * du
        u += b * residual

    def tolerance(self):
        return 1e-12 if self.dtype == np.float64 else 1e-5


CASES = [(3, False, np.float64), (3, True, np.float64), (7, True, np.float64), (3, True, np.float32)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"N{c[0]}-{'deformed' if c[1] else 'box'}-{np.dtype(c[2]).name}")
def case(request, tmp_path_factory):
    order, deformed, dtype = request.param
    return Case(tmp_path_factory.mktemp("mx2d"), order, deformed, dtype)


def relative(a, b):
    return float(np.abs(np.asarray(a, dtype=np.float64) - b).max() / np.abs(b).max())


def test_traces(case):
    u = case.random(case.u_shape)
    out = np.full(case.face_shape, np.nan, dtype=case.dtype)
    getattr(case.lib, f"traces_{case.order}_{case.ctype}")(
        u.ctypes.data_as(ctypes.c_void_p), case.geometry["normals"].ctypes.data_as(ctypes.c_void_p),
        out.ctypes.data_as(ctypes.c_void_p), ctypes.c_longlong(case.u_shape[1]))
    expected = case.reference("maxwell_traces")(u.astype(np.float64), case.system.device_geometry["normals"],
                                                np.zeros(case.face_shape))
    assert relative(out, expected) < case.tolerance()


def test_rhs_and_a_range_of_elements(case):
    u, sums = case.random(case.u_shape), case.random(case.face_shape)
    geometry = dict(case.system.device_geometry)
    geometry["face_factors"] = case.random(geometry["face_factors"].shape).astype(np.float64)  # factors of every kind
    case.geometry["face_factors"] = np.ascontiguousarray(geometry["face_factors"], dtype=case.dtype)
    try:
        expected = case.reference("maxwell_rhs")(u.astype(np.float64), sums.astype(np.float64), geometry,
                                                 np.zeros(case.u_shape), 1.7, 0.8, 1.0)
        for cfg in case.configs:
            out = np.full(case.u_shape, np.nan, dtype=case.dtype)
            case.launch("rhs", cfg, {0: u, 1: out, 2: sums}, case.material(1.7, 0.8, 1.0))
            assert relative(out, expected) < case.tolerance(), cfg
            part = np.full(case.u_shape, 5.0, dtype=case.dtype)
            case.launch("rhs", cfg, {0: u, 1: part, 2: sums}, case.material(1.7, 0.8, 1.0), elements=(2, 5))
            assert relative(part[:, 2:5], expected[:, 2:5]) < case.tolerance(), cfg
            assert np.all(part[:, :2] == 5.0) and np.all(part[:, 5:] == 5.0)
    finally:
        case.geometry["face_factors"] = np.ascontiguousarray(case.system.device_geometry["face_factors"],
                                                             dtype=case.dtype)


@pytest.mark.parametrize("diagonal", [False, True], ids=["isotropic", "diagonal"])
def test_rhs_in_a_medium_given_per_point(case, diagonal):
    """eps, mu, sigma per point (materials.py), or per component and point (a diagonal eps, mu:
    anisotropy.py's (3, E, 1, n, n) arrays and (3, 4, E, 4, 1, n) flux coefficients)."""
    e, n = case.u_shape[1], case.order + 1
    u, sums = case.random(case.u_shape), case.random(case.face_shape)
    positive = lambda shape: np.ascontiguousarray(0.5 + case.rng.random(shape), dtype=case.dtype)  # noqa: E731
    lead = (3,) if diagonal else ()
    coeff = positive(lead + (4, e, 4, 1, n))
    medium = {"inv_epsilon": positive(lead + (e, 1, n, n)), "inv_mu": positive(lead + (e, 1, n, n)),
              "sigma_over_epsilon": positive(lead + (e, 1, n, n)), "flux_coefficients": coeff}
    for k, name in enumerate(("flux_a", "flux_b", "flux_c", "flux_d")):
        medium[name] = coeff[:, k] if diagonal else coeff[k]
    as64 = {k: v.astype(np.float64) for k, v in medium.items()}
    expected = case.reference("maxwell_rhs_materials")(u.astype(np.float64), sums.astype(np.float64),
                                                       case.system.device_geometry, np.zeros(case.u_shape), as64, 0.7)
    for cfg in case.configs:
        out = np.full(case.u_shape, np.nan, dtype=case.dtype)
        case.launch("rhs_medium", cfg, {0: u, 1: out, 2: sums, 12: medium["inv_epsilon"], 13: medium["inv_mu"],
                                        14: medium["sigma_over_epsilon"], 15: coeff},
                    (1.0, 1.0, 0.7, 0.0), has_sigma=1, cs=e * n * n if diagonal else 0)
        assert relative(out, expected) < case.tolerance(), cfg


def test_stage(case):
    u, residual, sums = case.random(case.u_shape), case.random(case.u_shape), case.random(case.face_shape)
    a, b, dt = -0.4, 0.3, 0.01
    u_ref, r_ref = u.astype(np.float64), residual.astype(np.float64)
    case.reference_stage(u_ref, r_ref, sums.astype(np.float64), case.system.device_geometry, 1.7, 0.8, 1.0, a, b, dt)
    for cfg in case.configs:
        uu, rr = u.copy(), residual.copy()
        case.launch("stage", cfg, {0: uu, 1: rr, 2: sums}, case.material(1.7, 0.8, 1.0) + (a, b, dt))
        assert relative(rr, r_ref) < case.tolerance(), cfg
        assert relative(uu, u_ref) < case.tolerance(), cfg


def test_stage_with_the_exchange_folded_in(case):
    """MODE 2: the sums are the own trace plus the partner's (face_point_ids), boundary factors
    applied; the traces of the updated u are written for the next stage. MODE 3: partners on
    other ranks read from the ghost rows."""
    system = case.system
    u, residual = case.random(case.u_shape), case.random(case.u_shape)
    a, b, dt = -0.4, 0.3, 0.01
    u_ref, r_ref = u.astype(np.float64), residual.astype(np.float64)
    sums = system.exchange_traces(u_ref).copy()
    case.reference_stage(u_ref, r_ref, sums, system.device_geometry, 1.7, 0.8, 1.0, a, b, dt)
    traces_after = case.reference("maxwell_traces")(u_ref, system.device_geometry["normals"], np.zeros(case.face_shape))
    partner = np.ascontiguousarray(partner_map(face_point_ids(case.mesh, case.order)), dtype=np.int32)
    traces_before = np.ascontiguousarray(
        case.reference("maxwell_traces")(u.astype(np.float64), system.device_geometry["normals"],
                                         np.zeros(case.face_shape)), dtype=case.dtype)
    for cfg in case.configs:
        uu, rr = u.copy(), residual.copy()
        trace_out = np.full(case.face_shape, np.nan, dtype=case.dtype)
        case.launch("stage_pairs", cfg, {0: uu, 1: rr, 2: traces_before, 17: trace_out, 18: partner},
                    case.material(1.7, 0.8, 1.0) + (a, b, dt), has_sigma=1)  # has_sigma: write_traces here
        assert relative(rr, r_ref) < case.tolerance(), cfg
        assert relative(uu, u_ref) < case.tolerance(), cfg
        assert relative(trace_out, traces_after) < case.tolerance(), cfg
    # MODE 3: a third of the paired points have their partner on "another rank" (code -2 - m,
    # its trace in ghost row m); their partners' slots of trace_in are NaN, so a read there shows
    shared = np.flatnonzero(partner >= 0)[::3]
    flat = traces_before.reshape(6, -1)
    ghosts = np.ascontiguousarray(flat[:, partner[shared]].T)  # (m, 6)
    coded = partner.copy()
    coded[shared] = -2 - np.arange(len(shared), dtype=np.int32)
    trace_in = traces_before.copy()
    trace_in.reshape(6, -1)[:, partner[shared]] = np.nan
    for cfg in case.configs:
        uu, rr = u.copy(), residual.copy()
        trace_out = np.full(case.face_shape, np.nan, dtype=case.dtype)
        case.launch("stage_ghosts", cfg, {0: uu, 1: rr, 2: trace_in, 16: ghosts, 17: trace_out, 18: coded},
                    case.material(1.7, 0.8, 1.0) + (a, b, dt), has_sigma=1)
        assert relative(rr, r_ref) < case.tolerance(), cfg
        assert relative(uu, u_ref) < case.tolerance(), cfg
        assert relative(trace_out, traces_after) < case.tolerance(), cfg


# The pointwise kernels (CuPy ElementwiseKernels: a body run for each index i) with dim = 2: the
# listed traces (terms_cuda._TRACES) and the dipole (source_cuda), whose TRACES_OF_POINT block
# rewrites the traces of the points it changed through point_face_table(order, 2).
C_TYPES = {"T": "T", "int64": "long long", "int32": "int", "float64": "double"}


def elementwise(params: str, outputs: str, body: str, tmp_path, name: str, preamble: str = ""):
    """The ElementwiseKernel's body in a loop over i as a C++ function of its arguments (raw: a
    pointer), in their order, then the size."""
    args = []
    for group in (params, outputs):
        for item in group.split(","):
            words = item.split()
            args.append(f"{C_TYPES[words[-2]]}{'*' if words[0] == 'raw' else ''} {words[-1]}")
    source = tmp_path / f"{name}.cpp"
    source.write_text("#include <cmath>\nusing std::exp; using std::sin; using std::fmin; using std::fmax;\n"
                      "typedef double T;\n" + preamble.replace("__device__ ", "") + "\nextern \"C\" void run_kernel("
                      + ", ".join(args + ["long long size"]) + ") {\nfor (long long i = 0; i < size; ++i) {\n"
                      + body + "\n}\n}\n")
    library = tmp_path / f"{name}.so"
    subprocess.run([CXX, "-O1", "-shared", "-fPIC", "-Wno-unknown-pragmas", str(source), "-o", str(library)],
                   check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(library)).run_kernel


def pointer(a):
    return ctypes.c_void_p(a.ctypes.data)


@pytest.mark.parametrize("order", [2, 5])
def test_listed_traces_and_the_dipole_kernel_in_2d(order, tmp_path):
    from lobatto.systems.maxwell import terms_cuda
    from lobatto.systems.maxwell.source_cuda import kernel_text
    from lobatto.systems.maxwell.terms_cuda import face_point_table, point_face_table, specialise
    from lobatto.systems.maxwell.tfsf_cuda import waveform_preamble

    mesh = box_mesh((3, 2), deform=deform_xy)
    system = MaxwellSystem(mesh, order, NumpyBackend())
    traces = system.backend.kernel("maxwell_traces", order=order)
    normals = system.device_geometry["normals"]
    e, n = mesh.num_elements, order + 1
    rng = np.random.default_rng(order)
    u = rng.standard_normal((6, e, 1, n, n))
    assert sorted(face_point_table(order, 2)) == sorted(
        np.concatenate([np.arange(n), np.arange(n) * n, np.arange(n) * n + order, order * n + np.arange(n)]))
    table = point_face_table(order, 2)
    assert table.shape == (n * n, 3) and np.all(table[:, 2] == -1)  # a corner lies on two edges
    assert np.count_nonzero(table >= 0) == 4 * n

    run = elementwise("raw T u, raw T normals, raw int64 elements, raw int64 face_points, int64 E", "raw T out",
                      specialise(terms_cuda._TRACES, order, 2), tmp_path, "listed")
    listed = np.array([4, 1, 3], dtype=np.int64)
    out = np.full((6, e, 4, 1, n), 7.0)
    faces = np.ascontiguousarray(face_point_table(order, 2))
    run(pointer(u), pointer(normals), pointer(listed), pointer(faces), ctypes.c_longlong(e), pointer(out),
        ctypes.c_longlong(len(listed) * 4 * n))
    expected = traces(u, normals, np.zeros((6, e, 4, 1, n)))
    assert np.abs(out[:, listed] - expected[:, listed]).max() <= 1e-14 * np.abs(expected).max()
    assert np.all(np.delete(out, listed, axis=1) == 7.0)

    params = ("raw T profile, raw float64 clock, raw int64 point_faces, raw T normals, int64 E, int64 element, "
              "T b, T dt, T scale, int32 write_traces")
    preamble = waveform_preamble("gaussian", {"t0": 0.1, "width": 0.05}, 1.0)
    run = elementwise(params, "raw T u, raw T residual, raw T traces",
                      kernel_text(order, 3, dim=2).replace("FOLD", "false"), tmp_path, "dipole", preamble)
    profile = rng.standard_normal((3, 1, n, n))
    residual = rng.standard_normal(u.shape)
    b, dt, t, element = 0.4, 0.01, 0.12, 2
    got_u, got_r, got_t = u.copy(), residual.copy(), expected.copy()
    run(pointer(profile), pointer(np.array([t])), pointer(np.ascontiguousarray(table.reshape(-1))), pointer(normals),
        ctypes.c_longlong(e), ctypes.c_longlong(element), ctypes.c_double(b), ctypes.c_double(dt), ctypes.c_double(dt),
        ctypes.c_int(1), pointer(got_u), pointer(got_r), pointer(got_t), ctypes.c_longlong(n * n))
    s = np.zeros(u.shape)
    s[3:6, element] = -np.exp(-0.5 * ((t - 0.1) / 0.05) ** 2) * profile  # field 3: H
    want_u, want_r = u + b * dt * s, residual + dt * s
    assert np.abs(got_u - want_u).max() <= 1e-14 * np.abs(want_u).max()
    assert np.abs(got_r - want_r).max() <= 1e-14 * np.abs(want_r).max()
    want_t = traces(want_u, normals, np.zeros_like(expected))
    assert np.abs(got_t - want_t).max() <= 1e-14 * np.abs(want_t).max()


def test_launch_and_byte_models_by_dimension():
    """2-D blocks hold TARGET_BLOCK_POINTS // n^2 elements (fewer only where shared memory runs
    short); the 3-D models are the formulas they were (dim = 3 the default)."""
    from lobatto.systems.maxwell.cuda_launch import TARGET_BLOCK_POINTS, stage_bytes, traces_bytes

    for order in (1, 2, 3, 7, 14, 15):
        n = order + 1
        for dtype in (np.float64, np.float32):
            for split in (0, 1, 2):
                cfg = default_launch(order, dtype, MAX_SHARED, split, dim=2)
                assert 1 <= cfg.elements_per_block <= max(1, TARGET_BLOCK_POINTS // n**2)
                assert cfg.shared_bytes == shared_bytes(order, np.dtype(dtype).itemsize, cfg.elements_per_block,
                                                        cfg.face_phase, split, dim=2) <= MAX_SHARED
                if split != 1 or split_mode(order, np.dtype(dtype).itemsize, MAX_SHARED, True) == 1:
                    assert default_launch(order, dtype, MAX_SHARED, split) == default_launch(
                        order, dtype, MAX_SHARED, split, dim=3)
        assert default_launch(order, np.float64, MAX_SHARED, 0, dim=2).elements_per_block == max(
            1, TARGET_BLOCK_POINTS // n**2) or order <= 2
        assert split_mode(order, 8, MAX_SHARED, True, dim=2) == 1  # a 2-D element's J a^b always fits
        # 3-D: u and residual 24 n^3, metrics 10 n^3, faces 60 n^2 + 12 (the formulas before dim)
        assert stage_bytes(order, 8) == 8.0 * (24 * n**3 + 10 * n**3 + 60 * n**2 + 12)
        assert traces_bytes(order, 8) == 8.0 * (6 * (n**3 - max(n - 2, 0) ** 3) + 54 * n**2)
        # 2-D: 24 n^2, metrics 5 n^2 (b, a < 2 and J), 4 faces of n points: 40 n + 8
        assert stage_bytes(order, 8, dim=2) == 8.0 * (24 * n**2 + 5 * n**2 + 40 * n + 8)
