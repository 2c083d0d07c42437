"""The dispersive poles' CUDA kernel (systems/maxwell/dispersive_cuda.py, a CuPy ElementwiseKernel)
run on the CPU against dispersive.py's array code, on fresh random data: Drude, Lorentz and Debye
poles on a non-contiguous element list, a partial weight, eps_inf per point (and per component:
a diagonal medium), and the drive
w (E + stretch) that a PML hands over (Lambda E - E, dispersive.py's stretch_with); the fold
before the stage kernel (a != 0) and the finish after it (a = 0, the stage's input E read back
as u - b residual).

The kernel's text is compiled as C++ inside a loop over CuPy's index i (T = double), its
arguments as the ElementwiseKernel declares them; the same text must also compile for sm_90 with
nvcc as a __global__ template (double and float) where nvcc is on the PATH. What this cannot
check (CuPy's own argument handling, NVRTC) is left to tests/unit/test_maxwell_physics_gpu.py.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.dispersion_fit import Pole
from lobatto.systems.maxwell.dispersion_tables import Dispersion
from lobatto.systems.maxwell.dispersive import DispersiveTerm
from lobatto.systems.maxwell.dispersive_cuda import OUTPUTS, PARAMS, poles_source
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.maxwell.terms_cuda import point_face_table

CXX = shutil.which("g++") or shutil.which("clang++")
NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) on the PATH")

POLES = (Pole("drude", {"plasma_frequency": 0.7, "collision_frequency": 0.2}),
         Pole("lorentz", {"resonance_frequency": 0.9, "delta_epsilon": 1.5, "damping_frequency": 0.3}),
         Pole("debye", {"delta_epsilon": 0.8, "relaxation_time": 0.6}))
C_TYPES = {"T": "T", "int64": "long long", "int32": "int"}


def signature(pointer_const: bool = True) -> str:
    """The ElementwiseKernel's arguments as C++ parameters (raw: a pointer)."""
    out = []
    for group, const in ((PARAMS, pointer_const), (OUTPUTS, False)):
        for item in group.split(","):
            words = item.split()
            raw = words[0] == "raw"
            kind, name = C_TYPES[words[-2]], words[-1]
            out.append(f"{'const ' if const and raw else ''}{kind}{'*' if raw else ''} {name}")
    return ", ".join(out + ["long long size"])


def kernel_text(fold: bool, stretched: bool, term) -> str:
    poles = [(p.model, k, p.angular()) for p, k in zip(term.poles, term.offsets)]
    return poles_source(term.system.order, poles, term.aux_count, True, True, stretched=stretched,
                        per_component=term.per_component).replace("FOLD", "true" if fold else "false")


def compile_cpu(text: str, tmp_path, name: str):
    source = tmp_path / f"{name}.cpp"
    source.write_text("typedef double T;\nextern \"C\" void run_kernel(" + signature() + ") {\n"
                      "for (long long i = 0; i < size; ++i) {\n" + text + "\n}\n}\n")
    library = tmp_path / f"{name}.so"
    subprocess.run([CXX, "-O1", "-shared", "-fPIC", "-Wno-unknown-pragmas", str(source), "-o", str(library)],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(library)).run_kernel


@pytest.fixture(scope="module", params=[False, True], ids=["isotropic", "diagonal"])
def term(request):
    """eps_inf per point, or per component and point (a diagonal medium: (3, m, n, n, n))."""
    system = MaxwellSystem(box_mesh((4, 1, 1), upper=(1.0, 0.25, 0.25)), 2, get_backend("cpu"))
    rng = np.random.default_rng(11)
    elements = np.array([0, 2, 3])  # not contiguous: the kernel's element list is read
    shape = (3,) + (system.order + 1,) * 3
    weight = (rng.random(shape) < 0.7).astype(np.float64)
    epsilon = 1.0 + rng.random(((3,) if request.param else ()) + shape)
    t = DispersiveTerm(system, elements, Dispersion(POLES), weight, epsilon, "emulated")
    assert t.one_pass is None and t.weight is not None and not isinstance(t.minus_inv_epsilon, float)
    assert t.per_component == request.param
    return t


@pytest.mark.parametrize("stretched", [False, True])
@pytest.mark.parametrize("a, b", [(0.0, 0.1496590219993), (-0.4178904744998, 0.3792103129999)])
def test_the_poles_kernel_equals_the_array_code(term, stretched, a, b, tmp_path):
    system, rng = term.system, np.random.default_rng(5)
    fold = a != 0
    run = compile_cpu(kernel_text(fold, stretched, term), tmp_path, "poles")
    E, m, n3 = system.num_elements, term.count, (system.order + 1) ** 3
    u_in = rng.standard_normal((6, E) + (system.order + 1,) * 3)
    residual = rng.standard_normal(u_in.shape)
    aux, aux_residual = rng.standard_normal(term.aux.shape), rng.standard_normal(term.aux.shape)
    term.compiled = None  # the array code is the reference
    term.stretch = rng.standard_normal((3,) + term.rate.shape[1:]) if stretched else None
    s, r = np.zeros_like(term.rate), np.zeros_like(term.aux)
    term.aux[...] = aux
    term.rates(u_in, 0.0, s, r)
    dt = 0.037
    want_aux_residual = a * aux_residual + dt * r
    want_aux = aux + b * want_aux_residual
    want_u, want_residual = u_in.copy(), residual.copy()
    if fold:  # before the stage kernel: residual += (dt / a) S; u untouched
        u = u_in.copy()
        want_residual[0:3, term.elements] += (dt / a) * s[0:3]
    else:  # after it: u already holds u_in + b residual
        u = u_in + b * residual
        want_u = u.copy()
        want_residual[0:3, term.elements] += dt * s[0:3]
        want_u[0:3, term.elements] += b * dt * s[0:3]
    got_residual, got_aux, got_aux_residual = residual.copy(), aux.copy(), aux_residual.copy()
    stretch = term.stretch if stretched else np.zeros(1)
    faces = np.ascontiguousarray(point_face_table(system.order).reshape(-1))
    p = lambda x: x.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    run.argtypes = None
    run(p(term.weight), p(term.minus_inv_epsilon), p(stretch), p(term.elements), p(faces), p(np.zeros(1)),
        ctypes.c_longlong(E), ctypes.c_longlong(m), ctypes.c_double(a), ctypes.c_double(b), ctypes.c_double(dt),
        ctypes.c_double(dt / a if fold else dt), ctypes.c_int(0), p(u), p(got_residual), p(got_aux),
        p(got_aux_residual), p(np.zeros(1)), ctypes.c_longlong(m * n3))
    term.stretch = None
    for got, want in ((u, want_u), (got_residual, want_residual), (got_aux, want_aux),
                      (got_aux_residual, want_aux_residual)):
        assert np.max(np.abs(got - want)) <= 1e-13 * np.max(np.abs(want))
    if stretched:  # the stretch reached the drive: without it the poles' rates differ
        plain = np.zeros_like(r)
        term.rates(u_in, 0.0, np.zeros_like(s), plain)
        assert np.max(np.abs(plain - r)) > 0.1


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")
def test_the_poles_kernel_compiles_for_sm90(term, tmp_path):
    body = "\n".join("{\n" + kernel_text(fold, True, term) + "\n}" for fold in (False, True))
    source = tmp_path / "poles.cu"
    source.write_text("template <typename T>\n__global__ void poles(" + signature() + ") {\n"
                      "const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                      "if (i >= size) return;\n" + body + "\n}\n"
                      + "".join(f"template __global__ void poles<{t}>({signature().replace('T', t)});\n"
                                for t in ("double", "float")))
    done = subprocess.run([NVCC, "--ptx", "-arch=compute_90", "-Xcicc", "-O0", str(source), "-o",
                           str(tmp_path / "poles.ptx")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
