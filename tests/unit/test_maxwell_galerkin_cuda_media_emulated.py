"""The Galerkin form's CUDA kernels with a per-point medium (galerkin_rhs_media_kernel,
galerkin_square_media_kernel in systems/maxwell/kernels/galerkin.cu), run on the CPU, equal
WeightAdjustedOperator.rhs with its GalerkinMedium (galerkin.py, galerkin_media.py) on fresh
random data and random media.

The emulation of test_maxwell_galerkin_cuda_emulated.py (every CUDA thread a std::thread,
__syncthreads() a std::barrier, shared memory filled with NaN): the media instantiations' face
flux (a, b, c, d per Gauss face point, the source triple's jumps and own values apart), the
per-component weight rows w / (J eps_c), w / (J mu_c) and the conductor's loss w J sigma (LOSS:
the square kernel's in-place interpolation of E, the general kernel's extra plane pass). Media:
eps jumping across every element face and varying inside the elements, isotropic or diagonal,
mu varying, sigma > 0 on about half the elements (or none: LOSS off); the deformed PEC box, the
O-grid cylinder of tests/cylwave.py (2 of its 10 elements affine: with a medium they take the
block kernel too) and the periodic box with the central flux; Q = N + 1 (the square kernel and
the general passes) and rules of more points; float64 and float32. And GalerkinCuda's rhs and
stage (kernel_for, the launch's names and argument order) through the emulation.
"""

from __future__ import annotations

import ctypes
import subprocess
import types

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.jit.nvrtc import source_text
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell.galerkin import WeightAdjustedOperator
from lobatto.systems.maxwell.galerkin_cuda import (SOURCE, default_threads, matrices, shared_values,
                                                   square_matrices, square_shared_values)
from lobatto.systems.maxwell.galerkin_media import GalerkinMedium
from lobatto.systems.maxwell.system import MaxwellSystem

from test_maxwell_galerkin import BOX, PERIODIC, cylinder, simulation  # noqa: F401  (cylinder: a fixture)
from test_maxwell_galerkin_cuda_emulated import CXX, RUN_BLOCKS, SHIM

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

#: (N, threads) of the square media kernel's launches (Q = N + 1): default_threads, and at N = 3
#: more threads than lines (idle ones in every pass)
SQUARE = [(n, default_threads(n + 1)) for n in (1, 2, 3, 4, 7)] + [(3, 96)]
#: (N, Q, threads, planes) of the general media kernel's: Q = N + 1 with one and two planes per
#: pass, and rules of more points (odd and even Q)
GENERAL = [(1, 2, 64, 2), (2, 3, 64, 1), (3, 4, 64, 2), (3, 4, 64, 1), (3, 5, 64, 1), (4, 6, 64, 2), (7, 8, 64, 1)]

LAUNCH = RUN_BLOCKS + """
template <int P, int Q, typename T, int NT, int KP, bool LOSS>
static void media(const T* u, const T* sums, const T* factors, const long long* elements, const T* cof, const T* iw,
                  const T* normals, const T* fw, const T* mats, T* out, const T* flux, const T* loss, T alpha,
                  long long E, const long long* blocks, int nblocks) {
    run_blocks<NT>(sizeof(T) * lobatto::GalerkinLayout<P, Q, KP>::SIZE, blocks, nblocks, [=] {
        lobatto::galerkin_rhs_media_kernel<P, Q, T, NT, 1, KP, LOSS>(u, sums, factors, elements, cof, iw, normals, fw,
                                                                     mats, out, flux, loss, alpha, E);
    });
}
template <int P, typename T, int NT, bool LOSS>
static void square_media(const T* u, const T* sums, const T* factors, const long long* elements, const T* cof,
                         const T* iw, const T* normals, const T* fw, const T* mats, T* out, const T* flux,
                         const T* loss, T alpha, long long E, const long long* blocks, int nblocks) {
    run_blocks<NT>(sizeof(T) * lobatto::GalerkinSquareLayout<P, true>::SIZE, blocks, nblocks, [=] {
        lobatto::galerkin_square_media_kernel<P, T, NT, 1, LOSS>(u, sums, factors, elements, cof, iw, normals, fw,
                                                                 mats, out, flux, loss, alpha, E);
    });
}
"""

ARGS = "const long long* elements, {p}, {t}* out, const {t}* flux, const {t}* loss, {t} alpha, long long E, " \
       "const long long* blocks, int nblocks"
CALL = "(a0, a1, a2, elements, a3, a4, a5, a6, a7, out, flux, loss, alpha, E, blocks, nblocks);"


def dispatch() -> str:
    lines = ['extern "C" int square_media_size(int p) {']
    for n, _ in SQUARE:
        lines.append(f"    if (p == {n + 1}) return lobatto::GalerkinSquareLayout<{n + 1}, true>::SIZE;")
    lines.append("    return -1;\n}")
    for ctype, name in (("double", "f64"), ("float", "f32")):
        args = ARGS.format(p=", ".join(f"const {ctype}* a{i}" for i in range(8)), t=ctype)
        lines.append(f'extern "C" void square_{name}(int order, int threads, int loss_on, {args}) {{')
        for n, nt in SQUARE:
            for on in (0, 1):
                lines.append(f"    if (order == {n} && threads == {nt} && loss_on == {on}) "
                             f"square_media<{n + 1}, {ctype}, {nt}, {'true' if on else 'false'}>" + CALL)
        lines.append("}")
        lines.append(f'extern "C" void general_{name}(int order, int q, int threads, int planes, int loss_on, '
                     f'{args}) {{')
        for n, q, nt, kp in GENERAL:
            for on in (0, 1):
                lines.append(f"    if (order == {n} && q == {q} && threads == {nt} && planes == {kp} "
                             f"&& loss_on == {on}) "
                             f"media<{n + 1}, {q}, {ctype}, {nt}, {kp}, {'true' if on else 'false'}>" + CALL)
        lines.append("}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("galerkin_media_emulated")
    source = folder / "galerkin_media_emulated.cpp"
    source.write_text(SHIM + source_text(SOURCE) + "\n" + LAUNCH + dispatch() + "\n")
    library = folder / "galerkin_media_emulated.so"
    cmd = [CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", str(source), "-o", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip(f"{CXX} has no C++20 <barrier>")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    lib = ctypes.CDLL(str(library))
    for kind, leading in (("square", 3), ("general", 5)):
        for name, real in (("f64", ctypes.c_double), ("f32", ctypes.c_float)):
            getattr(lib, f"{kind}_{name}").argtypes = ([ctypes.c_int] * leading + [ctypes.c_void_p] * 12 + [real]
                                                       + [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int])
    return lib


def random_media(coords, rng, diagonal=False, conductor=True) -> dict:
    """eps a random level per element (so it jumps across every element face) times a smooth
    variation inside, diagonal or isotropic; mu likewise; sigma > 0 on about half the elements."""
    x, y, z = coords
    e = x.shape[0]

    def level(low, high):
        return rng.uniform(low, high, e)[:, None, None, None]

    eps = level(1.0, 4.0) * (1.0 + 0.3 * np.sin(2.0 * x + 3.0 * y) * np.cos(z))
    if diagonal:
        eps = np.stack([eps, level(0.5, 2.0) * eps, 1.0 + level(0.0, 2.0) * (1.0 + 0.2 * np.cos(3.0 * z))])
    mu = level(0.5, 2.0) * (1.0 + 0.25 * np.sin(2 * np.pi * x) * np.cos(np.pi * y))
    sigma = np.zeros_like(x)
    if conductor:
        on = rng.random(e) < 0.5
        on[rng.integers(e)] = True  # at least one conducting element
        sigma = np.where(on[:, None, None, None], level(0.2, 1.5) * (1.0 + 0.5 * np.cos(2.0 * x)), 0.0)
    return {"epsilon": eps, "mu": mu, "sigma": sigma}


def medium_case(tmp_path, mesh, order, rng, flux="upwind", diagonal=False, conductor=True, points=None):
    """(operator with its GalerkinMedium, face factors, alpha) of random media on ``mesh``; the
    NumPy array code (CPU, float64) is the reference."""
    sim = simulation(tmp_path, mesh, order, flux=flux)
    base = sim.system
    material = random_media(base.geometry.coords, rng, diagonal, conductor)
    system = MaxwellSystem(base.mesh, order, get_backend("cpu"), geometry=base.geometry, material=material,
                           flux=flux, volume_form="galerkin")
    operator = system.galerkin
    if points is not None and points != operator.points:
        operator = WeightAdjustedOperator(system.geometry, points=points)
        operator.medium = GalerkinMedium(operator, system)
    factors = np.asarray(base.device_geometry["face_factors"])
    sim.close()
    assert operator.medium is not None and (operator.medium.loss_weights is not None) == conductor
    return operator, factors, system.alpha


def emulate(lib, operator, factors, u, sums, alpha, dtype, elements, threads, planes=1, square=True):
    """The media kernel's out for the blocks of ``elements`` (NaN elsewhere)."""
    medium = operator.medium
    mats = square_matrices(operator.order) if square else matrices(operator.order, operator.points)
    loss = medium.loss_weights
    cast = [np.ascontiguousarray(a, dtype=dtype) for a in (
        u, sums, factors, operator.weighted_cofactors, medium.inverse_weights, operator.normals,
        operator.face_weights, mats, medium.flux, medium.flux if loss is None else loss)]
    out = np.full(u.shape, np.nan, dtype=dtype)
    blocks = np.array([2 * e + g for e in elements for g in (0, 1)], dtype=np.int64)
    every = np.arange(u.shape[1], dtype=np.int64)
    pointers = [a.ctypes.data for a in cast]
    rest = (every.ctypes.data, *pointers[:8], out.ctypes.data, *pointers[8:], alpha, u.shape[1], blocks.ctypes.data,
            len(blocks))
    name = "f64" if dtype == np.float64 else "f32"
    on = int(loss is not None)
    if square:
        getattr(lib, f"square_{name}")(operator.order, threads, on, *rest)
    else:
        getattr(lib, f"general_{name}")(operator.order, operator.points, threads, planes, on, *rest)
    return out


def compare(lib, operator, factors, alpha, rng, threads, planes, square, elements, dtypes):
    order, e = operator.order, operator.weighted_cofactors.shape[2]
    n = order + 1
    u = rng.standard_normal((6, e, n, n, n))
    sums = rng.standard_normal((6, e, 6, n, n))
    expected = operator.rhs(np, u, (face_values(np, u, order), sums), factors, np.empty_like(u), 1.0, 1.0, alpha)
    scale = np.abs(expected[:, elements]).max()
    for dtype, tolerance in dtypes:
        out = emulate(lib, operator, factors, u, sums, alpha, dtype, elements, threads, planes, square)
        error = np.abs(out[:, elements] - expected[:, elements]).max()
        assert error <= tolerance * scale, (np.dtype(dtype).name, error, scale)


DTYPES = ((np.float64, 1e-12), (np.float32, 5e-5))


@pytest.mark.parametrize("order,threads", SQUARE)
def test_emulated_square_media_kernel_equals_the_array_code(tmp_path, emulated, cylinder, order, threads):
    """Upwind on the PEC box and the cylinder, central on the periodic box; the conductor on and
    off; isotropic and diagonal eps."""
    rng = np.random.default_rng()
    cases = [("box", BOX, "upwind", False, True), ("cylinder", cylinder, "upwind", True, True),
             ("periodic", PERIODIC, "central", True, False)]
    for label, mesh, flux, diagonal, conductor in cases:
        operator, factors, alpha = medium_case(tmp_path / label, mesh, order, rng, flux, diagonal, conductor)
        e = operator.weighted_cofactors.shape[2]
        elements = range(e) if order <= 3 else [0] if label != "cylinder" else [e - 1]
        dtypes = DTYPES if order <= 4 or label == "box" else DTYPES[:1]
        compare(emulated, operator, factors, alpha, rng, threads, 1, True, elements, dtypes)


@pytest.mark.parametrize("order,q,threads,planes", GENERAL)
def test_emulated_general_media_kernel_equals_the_array_code(tmp_path, emulated, cylinder, order, q, threads, planes):
    """The general passes (any Q >= N + 1): at Q = N + 1 and rules of more points."""
    rng = np.random.default_rng()
    cases = [("cylinder", cylinder, "upwind", True, True), ("periodic", PERIODIC, "central", False, False)]
    if order <= 3:
        cases.append(("box", BOX, "upwind", False, True))
    for label, mesh, flux, diagonal, conductor in cases:
        operator, factors, alpha = medium_case(tmp_path / label, mesh, order, rng, flux, diagonal, conductor,
                                               points=q)
        assert operator.points == q
        e = operator.weighted_cofactors.shape[2]
        elements = range(e) if order <= 3 else [0, e - 1]
        compare(emulated, operator, factors, alpha, rng, threads, planes, False, elements,
                DTYPES if order <= 3 else DTYPES[:1])


def test_square_media_shared_size_is_the_kernels(emulated):
    for n, _ in SQUARE:
        assert emulated.square_media_size(n + 1) == square_shared_values(n + 1, medium=True), n
    assert square_shared_values(4, medium=True) > square_shared_values(4)  # 9 face components below N = 11
    assert square_shared_values(13, medium=True) == square_shared_values(13)


class _MediaFunction:
    """What galerkin_cuda launches through CuPy, run by the emulated media kernels: checks the
    wrapper's names, launch shape and argument order against the kernels'."""

    max_threads_per_block = 1024
    max_dynamic_shared_size_bytes = 48 * 1024

    def __init__(self, lib, name):
        self.lib, self.name = lib, name

    def __call__(self, grid, block, args, shared_mem=0):
        if "update" in self.name:  # the stage's update (its kernel: test_maxwell_galerkin_cuda_emulated.py)
            u, residual, du, a, b, dt, _ = args
            residual[...] = a * residual + dt * du if a else dt * du
            u += b * residual
            return
        assert "media" in self.name, self.name  # a medium: no affine closed form, no uniform kernel
        fields = [x.strip() for x in self.name.split("<")[1].rstrip(">").split(",")]
        elements, e = args[3], int(args[-1])
        assert grid == (2 * elements.size,) and elements.dtype == np.int64 and elements.size == e
        assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args[:3] + args[4:12])
        pointers = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
        blocks = np.arange(2 * elements.size, dtype=np.int64)
        on = int(fields[-1] == "true")
        tail = (pointers[3], *pointers[:3], *pointers[4:12], float(args[12]), e, blocks.ctypes.data, len(blocks))
        if "square" in self.name:
            p, ctype, nt = int(fields[0]), fields[1], int(fields[2])
            assert ctype == "double" and block == (nt,) and shared_mem == square_shared_values(p, True) * 8
            self.lib.square_f64(p - 1, nt, on, *tail)
        else:
            p, q, ctype, nt, kp = int(fields[0]), int(fields[1]), fields[2], int(fields[3]), int(fields[5])
            assert ctype == "double" and block == (nt,) and shared_mem == shared_values(p, q, kp) * 8
            self.lib.general_f64(p - 1, q, nt, kp, on, *tail)


@pytest.mark.parametrize("points,conductor", [(None, True), (None, False), (5, True)])
def test_the_wrapper_launches_the_media_kernels(tmp_path, emulated, monkeypatch, cylinder, points, conductor):
    """kernel_for takes the medium (no longer None); GalerkinCuda's rhs and stage equal the array
    code's on the cylinder (its affine elements in the block kernel), N = 3, Q = 4 (the square
    kernel, and the general passes) and Q = 5."""
    from lobatto.systems.maxwell import galerkin_cuda

    module = types.SimpleNamespace(get_function=lambda name: _MediaFunction(emulated, name))
    monkeypatch.setattr(galerkin_cuda, "get_module", lambda source, names, options=(): module)
    backend = types.SimpleNamespace(name="cuda", xp=np, dtype=np.dtype(np.float64), max_shared_per_block=227 * 1024,
                                    asarray=lambda a, dtype=None: np.asarray(a, dtype=dtype or np.float64))
    rng = np.random.default_rng()
    order = 3
    operator, factors, alpha = medium_case(tmp_path, cylinder, order, rng, "upwind", True, conductor, points)
    kernel = galerkin_cuda.kernel_for(backend, operator)
    assert kernel is not None and kernel.affine_elements == 0 and kernel.square == (points is None)
    kernels = [kernel] + ([galerkin_cuda.GalerkinCuda(backend, operator, square=False)] if points is None else [])
    e, n = operator.weighted_cofactors.shape[2], order + 1
    u, residual = rng.standard_normal((6, e, n, n, n)), rng.standard_normal((6, e, n, n, n))
    sums = rng.standard_normal((6, e, 6, n, n))
    expected = operator.rhs(np, u, (face_values(np, u, order), sums), factors, np.empty_like(u), 1.0, 1.0, alpha)
    for k in kernels:  # epsilon and mu are the medium's: the scalars passed are not read
        out = k(u, sums, factors, np.full_like(u, np.nan), 7.0, 0.1, alpha)
        assert np.abs(out - expected).max() <= 1e-12 * np.abs(expected).max()
    a, b, dt = -0.6, 0.4, 0.01
    expected_residual = a * residual + dt * expected
    expected_u = u + b * expected_residual
    kernel.stage(u, residual, sums, factors, 7.0, 0.1, alpha, a, b, dt)
    assert np.allclose(residual, expected_residual, rtol=0, atol=1e-12 * np.abs(expected_residual).max())
    assert np.allclose(u, expected_u, rtol=0, atol=1e-12 * np.abs(expected_u).max())
