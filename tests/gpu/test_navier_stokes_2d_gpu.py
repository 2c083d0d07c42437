"""The Navier–Stokes CUDA kernels on 2-D meshes (D = 2 of kernels/differential.cu and
kernels/advection.cu) equal the NumPy reference, and a short 2-D Navier–Stokes run on CUDA
equals the CPU run.

1. Kernels (``backend.kernel(name, order=N, dim=2)``) on a deformed quad mesh, N = 3 and 7,
   float64 and float32, every layout the factories accept, against the 3-D reference on the
   extruded twin with z-constant data (plan section 2.1: pointwise results equal in every
   plane, mass-weighted ones carry the plane's GLL weight, the fine grid's the Gauss weight).
2. The operators (differential.curl, weighted_curl, weak_divergence_minus_curl,
   mass_minus_gradient, Advection) on CUDA against the same calls on the NumPy backend (the 2-D
   reference of operators/*.py).
3. A 2-D Kovasznay run, 5 BDF2 steps on a deformed mesh with a scalar, CUDA against CPU.

Skipped, with the reason, where CuPy or a CUDA device is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.backends import get_backend  # noqa: E402
from lobatto.backends.numpy_backend import NumpyBackend  # noqa: E402
from lobatto.discretization import derivative_matrix, gll_weights  # noqa: E402
from lobatto.mesh import compute_geometry  # noqa: E402
from lobatto.mesh.extrude import extrude_quads  # noqa: E402
from lobatto.operators import differential  # noqa: E402
from lobatto.operators.advection import Advection, default_fine_points  # noqa: E402
from planar import close, extruded, kernel_strip, padded  # noqa: E402

REFERENCE = NumpyBackend()


MESH = kernel_strip()
TWIN = extrude_quads(MESH)
DTYPES = ((np.float64, 1e-12), (np.float32, 2e-5))


@pytest.fixture(scope="module")
def cuda():
    return get_backend("cuda")


@pytest.fixture(scope="module", params=[3, 7])
def meshes(request):
    order = request.param
    return order, compute_geometry(MESH, order), compute_geometry(TWIN, order)


def test_differential_kernels_2d_equal_the_extruded_reference(cuda, meshes):
    order, g2, g3 = meshes
    n, E = order + 1, MESH.num_elements
    element, k = (E, 1, n, n), 2  # k: any plane of the twin
    rng = np.random.default_rng(400 + order)
    w, d3 = gll_weights(order), derivative_matrix(order)
    curl3 = REFERENCE.kernel("curl", order=order)
    for dtype, tolerance in DTYPES:
        dev = (lambda a: cuda.asarray(a, dtype=dtype))
        d = dev(derivative_matrix(order))
        mass = dev(g2.mass)
        for rows in (3, 2):  # the host's 3 x 3 metrics, or the compact r, s block
            metrics = dev(np.ascontiguousarray(g2.metrics[:rows, :rows]))
            for vc, oc in ((2, 1), (2, 3), (3, 3)):
                v = rng.standard_normal((vc,) + element)
                expected = curl3(extruded(padded(v, 3), n), g3.metrics, None, d3, np.empty((3, E, n, n, n)))
                expected = expected[3 - oc:, :, k:k + 1]
                kernel = cuda.kernel("curl", order=order, dim=2)
                for weighted in (False, True):
                    out = cuda.xp.full((oc,) + element, np.nan, dtype=dtype)
                    kernel(dev(v), metrics, mass if weighted else None, d, out)
                    close(cuda.to_host(out), expected * (g2.mass if weighted else 1.0), tolerance)
            # weak_divergence_minus_curl: the twin's t flux vanishes for f_z = 0 and w = (0, 0, w_z)
            f, wz, nu = rng.standard_normal((2,) + element), rng.standard_normal(element), 0.37
            w3 = extruded(np.stack([np.zeros(element), np.zeros(element), wz]), n)
            expected = REFERENCE.kernel("weak_divergence_minus_curl", order=order)(
                extruded(padded(f, 3), n), w3, g3.metrics, g3.mass, d3, nu, np.empty((E, n, n, n)))
            kernel = cuda.kernel("weak_divergence_minus_curl", order=order, dim=2)
            for vorticity in (wz[None], padded(wz[None], 3)[::-1].copy(), wz):  # w_z as (1, ...), (3, ...), (E, ...)
                out = cuda.xp.full(element, np.nan, dtype=dtype)
                kernel(dev(f), dev(vorticity), metrics, mass, d, nu, out)
                close(cuda.to_host(out), expected[:, k:k + 1] / w[k], tolerance)
            for c in (2, 3):
                f, p = rng.standard_normal((c,) + element), rng.standard_normal(element)
                expected = REFERENCE.kernel("mass_minus_gradient", order=order)(
                    extruded(padded(f, 3), n), extruded(p, n), g3.metrics, g3.mass, d3, np.empty((3, E, n, n, n)))
                out = cuda.xp.full((c,) + element, np.nan, dtype=dtype)
                cuda.kernel("mass_minus_gradient", order=order, dim=2)(dev(f), dev(p), metrics, mass, d, out)
                close(cuda.to_host(out), expected[:c, :, k:k + 1] / w[k], tolerance)


def test_advection_kernels_2d_equal_the_extruded_reference(cuda, meshes):
    order, g2, g3 = meshes
    n, E = order + 1, MESH.num_elements
    m = default_fine_points(order)
    element, fine = (E, 1, n, n), (E, 1, m, m)
    rng = np.random.default_rng(500 + order)
    twin = Advection(g3, REFERENCE)
    gauss = np.polynomial.legendre.leggauss(m)[1]
    c, k = 3, 1  # a fine plane and a GLL plane of the twin
    factors = twin.factors[:, :, :, c:c + 1] / gauss[c]  # the 2-D G = W J d r_b / d x_a
    for dtype, tolerance in DTYPES:
        dev = (lambda a: cuda.asarray(np.ascontiguousarray(a), dtype=dtype))
        interp, interp_derivative = dev(twin.interp), dev(twin.interp_derivative)
        contravariant = cuda.kernel("advection_contravariant", order=order, fine=m, dim=2)
        for vc, oc, f in ((2, 2, 3), (2, 2, 2), (3, 3, 3), (2, 3, 2)):
            u = rng.standard_normal((vc,) + element)
            expected = twin.contravariant(extruded(padded(u, 3), n))[:, :, c:c + 1] / gauss[c]
            if f == 2:
                expected[2] = 0  # no t row in G: U_t = 0
            out = cuda.xp.full((oc,) + fine, np.nan, dtype=dtype)
            contravariant(dev(u), dev(factors[:f, :f]), interp, out)
            close(cuda.to_host(out), expected[:oc], tolerance)
        u = rng.standard_normal((2,) + element)
        U3 = twin.contravariant(extruded(padded(u, 3), n))
        for fields_count in (3, 1):
            fields = rng.standard_normal((fields_count,) + element)
            expected = twin.convective_with(U3, extruded(fields, n))[:, :, k:k + 1] / gll_weights(order)[k]
            for uc in (2, 3):  # U's t component is never read in 2-D
                out = cuda.xp.full(fields.shape, np.nan, dtype=dtype)
                cuda.kernel("advection_apply", order=order, fine=m, dim=2)(
                    dev(U3[:uc, :, c:c + 1] / gauss[c]), dev(fields), interp, interp_derivative,
                    dev(twin.interp_transpose), out)
                close(cuda.to_host(out), expected, tolerance)


def test_operators_2d_equal_the_numpy_reference(cuda, meshes):
    order, g2, _ = meshes
    rng = np.random.default_rng(600 + order)
    shape = g2.jacobian.shape
    u, p = rng.standard_normal((2,) + shape), rng.standard_normal(shape)
    gpu, cpu = differential.BackendGeometry(g2, cuda), differential.BackendGeometry(g2, REFERENCE)
    for name in ("curl", "weighted_curl"):
        expected = getattr(differential, name)(cpu, REFERENCE, u)
        close(cuda.to_host(getattr(differential, name)(gpu, cuda, cuda.asarray(u))), expected, 1e-12)
    vorticity = differential.weighted_curl(cpu, REFERENCE, u)  # in the reference's own layout
    expected = differential.weak_divergence_minus_curl(cpu, REFERENCE, u, vorticity, 0.37)
    got = differential.weak_divergence_minus_curl(gpu, cuda, cuda.asarray(u), cuda.asarray(vorticity), 0.37)
    close(cuda.to_host(got), expected, 1e-12)
    expected = differential.mass_minus_gradient(cpu, REFERENCE, u, p)
    close(cuda.to_host(differential.mass_minus_gradient(gpu, cuda, cuda.asarray(u), cuda.asarray(p))), expected, 1e-12)
    fields = rng.standard_normal((3,) + shape)
    expected = Advection(g2, REFERENCE).convective(u, fields)
    close(cuda.to_host(Advection(g2, cuda).convective(cuda.asarray(u), cuda.asarray(fields))), expected, 1e-12)


LAMBDA = "(20 - sqrt(400 + 4*pi**2))"
KOVASZNAY = {"ux": f"1 - exp({LAMBDA}*x)*cos(2*pi*y)", "uy": f"{LAMBDA}/(2*pi)*exp({LAMBDA}*x)*sin(2*pi*y)"}


def kovasznay_2d():
    from lobatto.api import case_from_dict

    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.025, "scalars": ["T"], "force_x": "0.1*sin(pi*y)"},
        "scalar": {"T": {"diffusivity": 0.05, "tolerance": 1e-13}},
        "mesh": {"elements": [3, 2], "lower": [-0.5, -0.5], "upper": [1.0, 1.5],
                 "deform": {"x": "0.03*sin(pi*x)*sin(pi*y)", "y": "0.02*sin(2*pi*x)"}},
        "discretization": {"order": 5},
        "time": {"integrator": "bdf2", "dt": 5e-3, "t_end": 5 * 5e-3},
        "solver": {"pressure": {"tolerance": 1e-13}, "velocity": {"tolerance": 1e-13}},
        "boundary": {side: {**KOVASZNAY, "T": "x*y"} for side in ("xmin", "xmax", "ymin", "ymax")},
        "initial": {**KOVASZNAY, "p": "0", "T": "x*y + 0.1*sin(pi*x)"},
        "output": {"formats": []},
    }, name="kovasznay_2d")


def test_a_2d_navier_stokes_run_on_cuda_equals_the_cpu(tmp_path):
    from lobatto.api import Simulation

    states = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(kovasznay_2d(), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.run()
        states[backend] = sim.backend.to_host(sim.u)
    cpu, gpu = states["cpu"], states["cuda"]
    assert gpu.shape == cpu.shape and cpu.shape[-3] == 1
    for c in range(cpu.shape[0]):  # each field against its own scale (p, T and u differ in size)
        close(gpu[c], cpu[c], 1e-10)
