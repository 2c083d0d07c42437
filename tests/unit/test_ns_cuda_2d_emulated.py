"""The Navier–Stokes CUDA kernels' 2-D instantiations (D = 2 of kernels/differential.cu and
kernels/advection.cu), run on the CPU through their own factories, equal the 3-D reference on
the extruded twin.

As in test_operators_cuda_emulated.py: the text NVRTC would receive is compiled as C++20 with a
shim in which every CUDA thread of a block is a std::thread, shared memory is a per-block buffer
(filled with NaN bytes, so a read of an unwritten value shows) and __syncthreads() is a
std::barrier. Here NVRTC's ``get_module`` is replaced by that library, so the factories of
operators/differential_cuda.py and advection_cuda.py run as on a GPU: their layout detection,
shape checks, template names, grid, block and shared-memory sizes. 13 quads: the last block of
every kernel is partly idle.

The oracle: the 3-D NumPy reference kernels on ``extrude_quads`` of the mesh with z-constant data
(plan section 2.1). Pointwise results are equal in every plane k; the mass-weighted ones carry
the GLL weight w_k of the plane; the fine grid's contravariant velocity the Gauss weight of its
plane. Every layout the factories accept is run: velocity with 2 or 3 components, the curl's
w_z or 3-vector, metrics and fine factors 3 x 3 or 2 x 2. Skipped without a C++20 compiler.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.backends.base import TUNED_KERNELS
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import derivative_matrix, gll_weights
from lobatto.jit.nvrtc import source_text
from lobatto.mesh import compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.operators import advection_cuda, differential_cuda
from lobatto.operators.advection import Advection, default_fine_points
from planar import close, extruded, kernel_strip, padded

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

ORDERS = (3, 7)
REFERENCE = NumpyBackend()
CTYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float"}

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

#: each kernel's parameters (T the value type), as the factories pass them
PARAMETERS = {
    "curl": "const T* v, const T* metrics, const T* mass, const T* D, T* out, long long E",
    "weak_divergence_minus_curl": "const T* f, const T* w, const T* metrics, const T* mass, const T* D, T* out, "
                                  "T nu, long long E",
    "mass_minus_gradient": "const T* f, const T* p, const T* metrics, const T* mass, const T* D, T* out, long long E",
    "contravariant": "const T* u, const T* G, const T* I, T* out, long long E",
    "apply": "const T* U, const T* fields, const T* I, const T* ID, T* out, long long E, int K",
}

# the 2-D layouts each kernel is run with (differential_cuda.kernel_name / advection_cuda.kernel_name):
# curl (VC, OC, MR), weak_divergence_minus_curl (MR,), mass_minus_gradient (C, MR), contravariant (VC, OC, F).
# The first of each is the reference's (operators/*.py: 2 components, w_z, compact 2 x 2 metrics), run in float32 too.
LAYOUTS = {
    "curl": [(2, 1, 2), (2, 1, 3), (2, 3, 3), (3, 3, 3), (3, 3, 2)],
    "weak_divergence_minus_curl": [(2,), (3,)],
    "mass_minus_gradient": [(2, 2), (2, 3), (3, 2)],
    "contravariant": [(2, 2, 2), (2, 2, 3), (3, 3, 3), (2, 3, 3), (2, 3, 2)],
    "apply": [()],
}
DTYPES = ((np.float64, 1e-12), (np.float32, 2e-5))


def template_names():
    """Every instantiation the tests below make the factories ask for (float32: the first layout)."""
    for order in ORDERS:
        m = default_fine_points(order)
        for dtype, _ in DTYPES:
            for kernel, layouts in LAYOUTS.items():
                for layout in layouts if dtype == np.float64 else layouts[:1]:
                    if kernel in ("contravariant", "apply"):
                        epb = advection_cuda.default_elements_per_block(m)
                        yield kernel, advection_cuda.kernel_name(kernel, order, m, dtype, epb, 2, layout)
                        continue
                    epb = differential_cuda.default_elements_per_block(order)
                    for mass in ((False, True) if kernel == "curl" else (False,)):
                        yield kernel, differential_cuda.kernel_name(kernel, order, dtype, epb, mass, 2, layout)


def wrapper(index, kernel, name) -> str:
    """extern "C" w<index>(the kernel's parameters, grid, block x, block y, shared bytes)."""
    t = "double" if ", double" in name else "float"
    parameters = PARAMETERS[kernel].replace("T*", f"{t}*").replace("T nu", f"{t} nu")
    arguments = ", ".join(p.split()[-1] for p in parameters.split(","))
    return (f'extern "C" void w{index}({parameters}, long long grid, int bx, int by, long long shared) {{\n'
            f"    launch(grid, bx, by, shared, [=] {{ {name}({arguments}); }});\n}}")


class Function:
    """A kernel of the emulated library, called as a CuPy RawKernel is."""

    def __init__(self, symbol):
        self.symbol = symbol

    def __call__(self, grid, block, args, shared_mem=0):
        converted = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                converted.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int32):
                converted.append(ctypes.c_int(int(a)))
            elif isinstance(a, np.integer):
                converted.append(ctypes.c_longlong(int(a)))
            else:
                converted.append(ctypes.c_double(a) if a.dtype == np.float64 else ctypes.c_float(a))
        assert shared_mem > 0 and block[0] * block[1] <= 1024
        self.symbol(*converted, ctypes.c_longlong(grid[0]), ctypes.c_int(block[0]), ctypes.c_int(block[1]),
                    ctypes.c_longlong(shared_mem))


class Module:
    def __init__(self, functions):
        self.functions = functions

    def get_function(self, name):
        return self.functions[name]


class Emulated:
    """The backend the factories see: NumPy arrays, an H100's opt-in shared memory."""

    name = "emulated"
    xp = np
    max_shared_per_block = 227 * 1024

    def __init__(self):
        self.launch_overrides = {}


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
    names = list(dict.fromkeys(template_names()))
    source = folder / "ns_2d_emulated.cpp"
    source.write_text(SHIM + text + LAUNCH + "\n".join(wrapper(i, k, n) for i, (k, n) in enumerate(names)) + "\n")
    library = folder / "ns_2d_emulated.so"
    cmd = [CXX, "-std=c++20", "-O0", "-shared", "-fPIC", "-pthread", str(source), "-o", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip(f"{CXX} has no C++20 <barrier>")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    lib = ctypes.CDLL(str(library))
    return Module({name: Function(getattr(lib, f"w{i}")) for i, (_, name) in enumerate(names)})


@pytest.fixture
def backend(emulated, monkeypatch):
    """The factories' NVRTC modules are the emulated library."""
    for module in (differential_cuda, advection_cuda):
        monkeypatch.setattr(module, "get_module", lambda source, names, options=(): emulated)
    return Emulated()


MESH = kernel_strip()
TWIN = extrude_quads(MESH)


@pytest.fixture(scope="module", params=ORDERS)
def meshes(request):
    order = request.param
    return order, compute_geometry(MESH, order), compute_geometry(TWIN, order)


def layouts_of(kernel, dtype):
    return LAYOUTS[kernel] if dtype == np.float64 else LAYOUTS[kernel][:1]


def test_differential_2d_equals_the_extruded_reference(backend, meshes):
    order, g2, g3 = meshes
    n, E = order + 1, MESH.num_elements
    element, k = (E, 1, n, n), 1  # k: any plane of the twin (the data are z-constant)
    rng = np.random.default_rng(order)
    w, d3 = gll_weights(order), derivative_matrix(order)
    for dtype, tolerance in DTYPES:
        d, mass = derivative_matrix(order).astype(dtype), g2.mass.astype(dtype)
        metrics_of = (lambda rows: np.ascontiguousarray(g2.metrics[:rows, :rows], dtype=dtype))
        curl = differential_cuda.make_curl(backend, order, dim=2)
        for vc, oc, rows in layouts_of("curl", dtype):
            v = rng.standard_normal((vc,) + element)
            expected = REFERENCE.kernel("curl", order=order)(extruded(padded(v, 3), n), g3.metrics, None, d3,
                                                            np.empty((3, E, n, n, n)))[3 - oc:, :, k:k + 1]
            for weighted in (False, True):
                out = np.full((oc,) + element, np.nan, dtype=dtype)
                curl(v.astype(dtype), metrics_of(rows), mass if weighted else None, d, out)
                close(out, expected * (g2.mass if weighted else 1.0), tolerance)
                if oc == 3 and vc == 2:
                    assert not out[:2].any()  # exact zeros
        # the twin's flux along t vanishes for f_z = 0 and w = (0, 0, w_z)
        f, wz, nu = rng.standard_normal((2,) + element), rng.standard_normal(element), 0.37
        w3 = extruded(np.stack([np.zeros(element), np.zeros(element), wz]), n)
        expected = REFERENCE.kernel("weak_divergence_minus_curl", order=order)(
            extruded(padded(f, 3), n), w3, g3.metrics, g3.mass, d3, nu, np.empty((E, n, n, n)))[:, k:k + 1] / w[k]
        kernel = differential_cuda.make_weak_divergence_minus_curl(backend, order, dim=2)
        for (rows,), vorticity in zip(layouts_of("weak_divergence_minus_curl", dtype) * 2,
                                      (wz[None], np.stack([0 * wz, 0 * wz, wz]), wz)):  # (1, ..), (3, ..), (E, ..)
            out = np.full(element, np.nan, dtype=dtype)
            kernel(f.astype(dtype), vorticity.astype(dtype), metrics_of(rows), mass, d, nu, out)
            close(out, expected, tolerance)
        kernel = differential_cuda.make_mass_minus_gradient(backend, order, dim=2)
        for c, rows in layouts_of("mass_minus_gradient", dtype):
            f, p = rng.standard_normal((c,) + element), rng.standard_normal(element)
            expected = REFERENCE.kernel("mass_minus_gradient", order=order)(
                extruded(padded(f, 3), n), extruded(p, n), g3.metrics, g3.mass, d3, np.empty((3, E, n, n, n)))
            out = np.full((c,) + element, np.nan, dtype=dtype)
            kernel(f.astype(dtype), p.astype(dtype), metrics_of(rows), mass, d, out)
            close(out, expected[:c, :, k:k + 1] / w[k], tolerance)


def test_advection_2d_equals_the_extruded_reference(backend, meshes):
    order, g2, g3 = meshes
    n, E = order + 1, MESH.num_elements
    m = default_fine_points(order)
    element, fine = (E, 1, n, n), (E, 1, m, m)
    rng = np.random.default_rng(10 + order)
    twin = Advection(g3, REFERENCE)
    gauss = np.polynomial.legendre.leggauss(m)[1]
    c, k = 2, 1  # a fine plane and a GLL plane of the twin
    factors = twin.factors[:, :, :, c:c + 1] / gauss[c]  # the 2-D G = W J d r_b / d x_a
    for dtype, tolerance in DTYPES:
        interp = twin.interp.astype(dtype)
        contravariant = advection_cuda.make_contravariant(backend, order, m, dim=2)
        for vc, oc, f in layouts_of("contravariant", dtype):
            u = rng.standard_normal((vc,) + element)
            expected = twin.contravariant(extruded(padded(u, 3), n))[:, :, c:c + 1] / gauss[c]
            if f == 2:
                expected[2] = 0  # no t row in G: U_t = 0
            out = np.full((oc,) + fine, np.nan, dtype=dtype)
            contravariant(u.astype(dtype), np.ascontiguousarray(factors[:f, :f], dtype=dtype), interp, out)
            close(out, expected[:oc], tolerance)
        U3 = twin.contravariant(extruded(padded(rng.standard_normal((2,) + element), 3), n))
        apply = advection_cuda.make_apply(backend, order, m, dim=2)
        for count, uc in ((3, 2), (1, 3)):  # U's t component is never read in 2-D
            fields = rng.standard_normal((count,) + element)
            expected = twin.convective_with(U3, extruded(fields, n))[:, :, k:k + 1] / gll_weights(order)[k]
            out = np.full(fields.shape, np.nan, dtype=dtype)
            apply(np.ascontiguousarray(U3[:uc, :, c:c + 1] / gauss[c], dtype=dtype), fields.astype(dtype), interp,
                  twin.interp_derivative.astype(dtype), twin.interp_transpose.astype(dtype), out)
            close(out, expected, tolerance)


def test_the_factories_refuse_a_layout_they_do_not_know(backend):
    E, n = 2, 4
    curl = differential_cuda.make_curl(backend, 3, dim=2)
    metrics = np.zeros((3, 3, E, 1, n, n))
    with pytest.raises(TypeError, match="2 or 3 components"):
        curl(np.zeros((4, E, 1, n, n)), metrics, None, np.zeros((n, n)), np.zeros((1, E, 1, n, n)))
    with pytest.raises(TypeError, match="metrics"):
        curl(np.zeros((2, E, 1, n, n)), metrics[:1], None, np.zeros((n, n)), np.zeros((1, E, 1, n, n)))
    with pytest.raises(TypeError, match="shape"):  # a 3-D state given to a 2-D kernel
        curl(np.zeros((3, E, n, n, n)), np.zeros((3, 3, E, n, n, n)), None, np.zeros((n, n)),
             np.zeros((3, E, n, n, n)))


class Hybrid(NumpyBackend):
    """The NumPy backend with the five Navier–Stokes kernels of a 2-D mesh from the CUDA factories
    (on the emulated library): what a CUDA run calls, with everything else the reference."""

    launch_overrides: dict = {}
    max_shared_per_block = 227 * 1024
    NS = ("curl", "weak_divergence_minus_curl", "mass_minus_gradient", "advection_contravariant", "advection_apply")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = dict.fromkeys(self.NS, 0)

    def kernel(self, name, **specialisation):
        if name not in self.NS or specialisation.get("dim") != 2:
            return super().kernel(name, **specialisation)
        inner = TUNED_KERNELS[("cuda", name)](self, **specialisation)

        def counted(*args):
            self.calls[name] += 1
            return inner(*args)

        return counted


def test_the_operators_on_the_2d_kernels_equal_the_reference(backend, meshes):
    """differential.* and Advection in their 2-D layout (the reference's choice) through the CUDA
    factories, against the same calls on the reference kernels."""
    from lobatto.operators import differential

    order, g2, _ = meshes
    rng = np.random.default_rng(20 + order)
    shape = g2.jacobian.shape
    u, p = rng.standard_normal((2,) + shape), rng.standard_normal(shape)
    hybrid = Hybrid()
    ours, theirs = differential.BackendGeometry(g2, hybrid), differential.BackendGeometry(g2, REFERENCE)
    for name in ("curl", "weighted_curl"):
        close(getattr(differential, name)(ours, hybrid, u), getattr(differential, name)(theirs, REFERENCE, u), 1e-12)
    vorticity = differential.weighted_curl(theirs, REFERENCE, u)
    close(differential.weak_divergence_minus_curl(ours, hybrid, u, vorticity, 0.37),
          differential.weak_divergence_minus_curl(theirs, REFERENCE, u, vorticity, 0.37), 1e-12)
    close(differential.mass_minus_gradient(ours, hybrid, u, p),
          differential.mass_minus_gradient(theirs, REFERENCE, u, p), 1e-12)
    fields = rng.standard_normal((3,) + shape)
    close(Advection(g2, hybrid).convective(u, fields), Advection(g2, REFERENCE).convective(u, fields), 1e-12)
    assert all(hybrid.calls.values()), hybrid.calls


def test_a_2d_navier_stokes_run_on_the_2d_kernels_equals_the_reference(backend, monkeypatch, tmp_path):
    """4 BDF2 steps of a curved 2-D channel with a scalar and a body force (N = 3), every Navier–
    Stokes kernel from the CUDA factories: the fields equal the reference run's to 1e-10."""
    import lobatto.runner.simulation as simulation
    from lobatto.api import case_from_dict

    flow = {"ux": "1 - y*y", "uy": "0"}
    case = case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.05, "scalars": ["T"], "force_y": "0.3*T"},
        "scalar": {"T": {"diffusivity": 0.05, "tolerance": 1e-13}},
        "mesh": {"elements": [3, 2], "lower": [0.0, -1.0], "upper": [2.0, 1.0], "boundaries": {"xmax": "outflow"},
                 "deform": {"x": "0.03*sin(pi*x)*(1 - y*y)", "y": "0.04*sin(pi*x)*(1 - y*y)"}},
        "discretization": {"order": 3},
        "time": {"integrator": "bdf2", "dt": 1e-2, "t_end": 4e-2},
        "solver": {"pressure": {"tolerance": 1e-13}, "velocity": {"tolerance": 1e-13}},
        "boundary": {"xmin": {**flow, "T": "y"}, "ymin": {"ux": "0", "uy": "0", "T": "-1"},
                     "ymax": {"ux": "0", "uy": "0", "T": "1"}},
        "initial": {**flow, "T": "y + 0.2*sin(pi*x)"},
        "output": {"formats": [], "log_every": 0},
    }, name="channel_2d")
    states, hybrid = {}, Hybrid()
    for which in ("reference", "kernels"):
        if which == "kernels":
            monkeypatch.setattr(simulation, "get_backend", lambda *args, **kwargs: hybrid)
        sim = simulation.Simulation(case, backend="cpu", output_dir=tmp_path / which, comm=None)
        sim.run()
        states[which] = np.asarray(sim.u)
    assert all(hybrid.calls.values()), hybrid.calls
    reference, ours = states["reference"], states["kernels"]
    assert reference.shape == ours.shape and reference.shape[-3] == 1
    for c in range(reference.shape[0]):  # ux, uy, p, T, each against its own scale
        close(ours[c], reference[c], 1e-10)
