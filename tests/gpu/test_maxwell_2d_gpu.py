"""Maxwell's CUDA kernels on a 2-D mesh (kernels/maxwell.cu with DIM = 2; cuda.py, fused.py and
the pointwise term kernels with dim = 2) against the NumPy reference, the CPU backend and the
extruded 3-D run.

On box_mesh((3, 2)) and a deformed one (curved quads: the split curl), N = 3 and 7:
- traces, rhs (also over a range of elements), rhs in a medium given per point (isotropic and
  diagonal) and stage of the
  CUDA factories (dim = 2) equal the NumPy reference (NumpyBackend) on fresh random data, to
  1e-12 relative in float64 and 1e-5 in float32, with the default launch and the forced ones
  the defaults do not reach at these orders (no face phase, several blocks, SPLIT 2);
- the whole fused step (fused.py, the default path on one GPU) and its CUDA-graph replay equal
  the NumPy system's step on random data;
- 20 lsrk45 steps equal the NumPy run and, where the CPU backend builds a 2-D Maxwell system,
  the CPU backend's run;
- 20 steps of the 2-D run equal those of the extruded 3-D CUDA run (mesh.extrude.extrude_quads,
  z-independent data, the same fixed dt) in every k plane, to 1e-12;
- the listed traces and the dipole's point kernel (terms_cuda, source_cuda) with dim = 2, and
  two stage terms on the fused path.

Skips, with the reason, without CuPy and a GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.backends import cuda_available
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.mesh import box_mesh
from lobatto.mesh.extrude import extrude_quads
from lobatto.mesh.topology import element_shape

OK, WHY = cuda_available()
pytestmark = [pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}"), pytest.mark.gpu]
PI = np.pi
ORDERS = (3, 7)
EPSILON, MU = 1.7, 0.8


def deform_xy(x, y, z):
    """A smooth z-independent deformation (curved quads)."""
    return 0.06 * np.sin(PI * x) * np.sin(2 * PI * y), 0.05 * np.sin(2 * PI * x) * np.cos(PI * y), 0 * z


def mesh_2d(deformed: bool, periodic=(False, False)):
    return box_mesh((3, 2), lower=(0.0, 0.0), upper=(1.5, 1.0), deform=deform_xy if deformed else None,
                    periodic=periodic)


class Fn:
    def __init__(self, f):
        self.f = f

    def evaluate(self, xp, x, y, z, t):
        return self.f(x, y) + 0 * z


#: z-independent smooth data in all six components (TE and TM at once)
INITIAL = {
    "Ex": Fn(lambda x, y: np.cos(PI * y) * np.sin(0.5 * PI * x)),
    "Ey": Fn(lambda x, y: 0.4 * np.sin(PI * x + 0.3) * np.cos(0.7 * y)),
    "Ez": Fn(lambda x, y: np.sin(PI * x / 1.5) * np.sin(PI * y)),
    "Hx": Fn(lambda x, y: 0.3 * np.cos(2 * x) * np.sin(PI * y)),
    "Hy": Fn(lambda x, y: -0.5 * np.sin(x * y)),
    "Hz": Fn(lambda x, y: np.cos(PI * x / 1.5) * np.cos(PI * y)),
}


def maxwell(mesh, order, backend, **options):
    from lobatto.systems.maxwell.system import MaxwellSystem

    system = MaxwellSystem(mesh, order, backend, epsilon=EPSILON, mu=MU, **options)
    # the system itself allocates a thin state and looks its kernels up by the mesh's dimension
    assert tuple(system.allocate_state().shape) == (6, system.num_elements) + element_shape(mesh.dim, order)
    return system


def relative(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


def tolerance(precision: str) -> float:
    return 1e-12 if precision == "float64" else 1e-5


class Kernels:
    """The CUDA factories with dim = 2, the NumPy reference system, its geometry on the device."""

    def __init__(self, order, deformed, precision):
        from lobatto.backends import get_backend

        self.cuda = get_backend("cuda", precision=precision)
        self.order, self.precision = order, precision
        self.dtype = np.float64 if precision == "float64" else np.float32
        self.mesh = mesh_2d(deformed)
        self.reference = maxwell(self.mesh, order, NumpyBackend())
        self.host_geometry = self.reference.device_geometry
        self.geometry = {k: (self.cuda.asarray(v, dtype=np.int8 if k == "affine" else self.dtype)
                             if isinstance(v, np.ndarray) else v) for k, v in self.host_geometry.items()}
        e, n = self.mesh.num_elements, order + 1
        self.u_shape, self.face_shape = (6, e, 1, n, n), (6, e, 4, 1, n)
        self.rng = np.random.default_rng(100 * order + 10 * deformed + len(precision))

    def random(self, shape):
        return self.rng.standard_normal(shape)

    def device(self, a):
        return self.cuda.asarray(np.ascontiguousarray(a), dtype=self.dtype)

    def host(self, a):
        return self.cuda.to_host(a).astype(np.float64)

    def ref(self, name):
        return self.reference.backend.kernel(name, order=self.order)

    def ours(self, name):
        fn = self.cuda.kernel(name, order=self.order, dim=2)
        assert fn.kernels.dim == 2  # the tuned CUDA factory (cuda.py), not the reference through CuPy
        return fn

    def launches(self):
        """(elements per block, threads, maxrregcount, face phase) overrides beside the default."""
        return [None, (2, 64, 0, False), (3, 96, 0, True)]

    def with_launch(self, launch):
        """Fresh factories under a launch override (the key of a 2-D mesh) and SPLIT forced
        to 2 on the second variant of a curved mesh."""
        from lobatto.systems.maxwell.cuda import MaxwellKernels

        key = (self.order, np.dtype(self.dtype).name, 2)
        self.cuda.launch_overrides.pop(key, None)
        if launch is not None:
            self.cuda.launch_overrides[key] = launch
        mk = MaxwellKernels(self.cuda, self.order, 2)
        if launch is not None and launch[3]:
            mk.split_override = 2 if bool((self.host_geometry["affine"] == 0).any()) else None
        return mk


@pytest.fixture(scope="module", params=[(o, d, p) for o in ORDERS for d in (False, True) for p in ("float64",)]
                + [(3, True, "float32")], ids=lambda c: f"N{c[0]}-{'deformed' if c[1] else 'box'}-{c[2]}")
def kernels(request):
    k = Kernels(*request.param)
    yield k
    k.cuda.launch_overrides.pop((k.order, np.dtype(k.dtype).name, 2), None)


def test_traces(kernels):
    k = kernels
    u = k.random(k.u_shape)
    expected = k.ref("maxwell_traces")(u, k.host_geometry["normals"], np.zeros(k.face_shape))
    out = k.cuda.zeros(k.face_shape)
    k.ours("maxwell_traces")(k.device(u), k.geometry["normals"], out)
    assert relative(k.host(out), expected) < tolerance(k.precision)


def test_rhs_stage_and_medium_under_every_launch(kernels):
    from lobatto.systems.maxwell.cuda import medium_arguments

    k = kernels
    e, n = k.u_shape[1], k.order + 1
    u, sums, residual = k.random(k.u_shape), k.random(k.face_shape), k.random(k.u_shape)
    factors = k.random(k.host_geometry["face_factors"].shape)  # factors of every kind of face
    host_geometry = dict(k.host_geometry, face_factors=factors)
    geometry = dict(k.geometry, face_factors=k.device(factors))
    rhs = k.ref("maxwell_rhs")(u, sums, host_geometry, np.zeros(k.u_shape), EPSILON, MU, 1.0)
    a, b, dt = -0.4, 0.3, 0.01
    r_ref = a * residual + dt * rhs
    u_ref = u + b * r_ref
    coeff = 0.5 + k.rng.random((4, e, 4, 1, n))
    medium = {"inv_epsilon": 0.5 + k.rng.random((e, 1, n, n)), "inv_mu": 0.5 + k.rng.random((e, 1, n, n)),
              "sigma_over_epsilon": k.rng.random((e, 1, n, n)), "flux_a": coeff[0], "flux_b": coeff[1],
              "flux_c": coeff[2], "flux_d": coeff[3], "flux_coefficients": coeff}
    rhs_medium = k.ref("maxwell_rhs_materials")(u, sums, host_geometry, np.zeros(k.u_shape), medium, 0.7)
    device_medium = {key: k.device(v) for key, v in medium.items()}
    # a diagonal eps, mu (anisotropy.py): per-component (3, E, 1, n, n) arrays and coefficients
    coeff3 = 0.5 + k.rng.random((3, 4, e, 4, 1, n))
    diagonal = {"inv_epsilon": 0.5 + k.rng.random((3, e, 1, n, n)), "inv_mu": 0.5 + k.rng.random((3, e, 1, n, n)),
                "sigma_over_epsilon": k.rng.random((3, e, 1, n, n)), "flux_a": coeff3[:, 0], "flux_b": coeff3[:, 1],
                "flux_c": coeff3[:, 2], "flux_d": coeff3[:, 3], "flux_coefficients": coeff3}
    rhs_diagonal = k.ref("maxwell_rhs_materials")(u, sums, host_geometry, np.zeros(k.u_shape), diagonal, 0.7)
    device_diagonal = {key: k.device(v) for key, v in diagonal.items()}
    tol = tolerance(k.precision)
    for launch in k.launches():
        mk = k.with_launch(launch)
        du, part = k.cuda.zeros(k.u_shape), k.device(np.full(k.u_shape, 5.0))
        uu = k.device(u)
        mk.launch("rhs", uu, (uu, du, k.device(sums)), geometry, (EPSILON, MU, 1.0))
        assert relative(k.host(du), rhs) < tol, launch
        uu = k.device(u)
        mk.launch("rhs", uu, (uu, part, k.device(sums)), geometry, (EPSILON, MU, 1.0), elements=(2, 5))
        part = k.host(part)
        assert relative(part[:, 2:5], rhs[:, 2:5]) < tol and np.all(part[:, :2] == 5) and np.all(part[:, 5:] == 5)
        uu, rr = k.device(u), k.device(residual)
        mk.launch("stage", uu, (uu, rr, k.device(sums)), geometry, (EPSILON, MU, 1.0), None, (a, b, dt))
        assert relative(k.host(rr), r_ref) < tol and relative(k.host(uu), u_ref) < tol, launch
        dm = k.cuda.zeros(k.u_shape)
        uu = k.device(u)
        mk.launch("rhs_medium", uu, (uu, dm, k.device(sums)), geometry, (1.0, 1.0, 0.7),
                  extra=medium_arguments(mk, uu.dtype, device_medium))
        assert relative(k.host(dm), rhs_medium) < tol, launch
        mk.launch("rhs_medium", uu, (uu, dm, k.device(sums)), geometry, (1.0, 1.0, 0.7),
                  extra=medium_arguments(mk, uu.dtype, device_diagonal))
        assert relative(k.host(dm), rhs_diagonal) < tol, launch
    k.with_launch(None)
    # the registered factories (the default launch) as the system calls them
    out = k.cuda.zeros(k.u_shape)
    k.ours("maxwell_rhs")(k.device(u), k.device(sums), geometry, out, EPSILON, MU, 1.0)
    assert relative(k.host(out), rhs) < tol
    uu, rr = k.device(u), k.device(residual)
    k.ours("maxwell_stage")(uu, rr, k.device(sums), geometry, EPSILON, MU, 1.0, a, b, dt)
    assert relative(k.host(uu), u_ref) < tol
    out = k.cuda.zeros(k.u_shape)
    k.ours("maxwell_rhs_materials")(k.device(u), k.device(sums), geometry, out, device_medium, 0.7)
    assert relative(k.host(out), rhs_medium) < tol


def test_a_three_dimensional_kernel_refuses_a_thin_state(kernels):
    k = kernels
    with pytest.raises(ValueError, match="3-D mesh"):
        k.cuda.kernel("maxwell_rhs", order=k.order)(k.cuda.zeros(k.u_shape), k.cuda.zeros(k.face_shape), k.geometry,
                                                     k.cuda.zeros(k.u_shape), EPSILON, MU, 1.0)


def numpy_steps(system, u, dt, steps):
    from lobatto.integrators import Stepper, get_scheme

    stepper = Stepper(system, get_scheme("lsrk45"))
    for i in range(steps):
        stepper.step(u, i * dt, dt)
    return u


@pytest.mark.parametrize("order,deformed,precision", [(3, False, "float64"), (3, True, "float64"),
                                                      (7, True, "float64"), (3, True, "float32")])
def test_fused_step_and_its_graph_replay_equal_the_reference_step(order, deformed, precision):
    from lobatto.backends import get_backend
    from lobatto.integrators import Stepper, get_scheme
    from lobatto.systems.maxwell.fused import FusedExchangeStepper

    backend = get_backend("cuda", precision=precision)
    mesh = mesh_2d(deformed)
    system = maxwell(mesh, order, backend)
    reference = maxwell(mesh, order, NumpyBackend())
    solver = Stepper(system, get_scheme("lsrk45"))
    assert solver.path == "whole-step"  # the fused exchange is the default path on one GPU
    rng = np.random.default_rng(order + 10 * deformed)
    u0 = rng.standard_normal((6, mesh.num_elements, 1, order + 1, order + 1))
    dt = 0.01
    expected = numpy_steps(reference, u0.copy(), dt, 2)
    u_fused, u_graph = backend.asarray(u0), backend.asarray(u0)
    fused = FusedExchangeStepper(system, Stepper(system, get_scheme("lsrk45")))
    fused_g = FusedExchangeStepper(system, Stepper(system, get_scheme("lsrk45")))
    replay = backend.capture(lambda: fused_g.step(u_graph, 0.0, dt))
    for _ in range(2):
        fused.step(u_fused, 0.0, dt)
        replay()
    assert replay.captured, replay.fallback_reason
    got = backend.to_host(u_fused).astype(np.float64)
    assert relative(got, expected) < (1e-12 if precision == "float64" else 2e-5)
    np.testing.assert_array_equal(backend.to_host(u_graph), backend.to_host(u_fused))


def run(system, dt, steps=20):
    """``steps`` lsrk45 steps from INITIAL on the system's backend (the solver's default path)."""
    from lobatto.integrators import Stepper, get_scheme

    backend = system.backend
    u = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
    stepper = Stepper(system, get_scheme("lsrk45"))
    for i in range(steps):
        stepper.step(u, i * dt, dt)
    return backend.to_host(u).astype(np.float64), stepper


CASES = [(3, False, (False, False), "upwind"), (3, True, (False, False), "upwind"),
         (7, True, (False, False), "central"), (7, False, (True, False), "upwind")]
CASE_IDS = ["N3-box", "N3-deformed", "N7-deformed-central", "N7-periodic-x"]


@pytest.mark.parametrize("order,deformed,periodic,flux", CASES, ids=CASE_IDS)
def test_twenty_steps_equal_the_numpy_run(order, deformed, periodic, flux):
    from lobatto.backends import get_backend

    mesh = mesh_2d(deformed, periodic)
    reference = maxwell(mesh, order, NumpyBackend(), flux=flux)
    dt = 0.3 * reference.geometry.min_spacing / reference.wave_speed
    expected, _ = run(reference, dt)
    got, stepper = run(maxwell(mesh, order, get_backend("cuda"), flux=flux), dt)
    assert stepper.path == "whole-step"
    assert relative(got, expected) < 1e-12


@pytest.mark.parametrize("order,deformed", [(3, True), (7, False)])
def test_twenty_steps_equal_the_cpu_backend_run(order, deformed):
    from lobatto.backends import get_backend

    mesh = mesh_2d(deformed)
    cpu_system = maxwell(mesh, order, get_backend("cpu"))
    dt = 0.3 * cpu_system.geometry.min_spacing / cpu_system.wave_speed
    expected, _ = run(cpu_system, dt)
    got, _ = run(maxwell(mesh, order, get_backend("cuda")), dt)
    assert relative(got, expected) < 1e-12


@pytest.mark.parametrize("order,deformed,periodic,flux", CASES, ids=CASE_IDS)
def test_twenty_steps_equal_the_extruded_3d_cuda_run(order, deformed, periodic, flux):
    from lobatto.backends import get_backend

    backend = get_backend("cuda")
    mesh2 = mesh_2d(deformed, periodic)
    system2 = maxwell(mesh2, order, backend, flux=flux)
    dt = 0.3 * system2.geometry.min_spacing / system2.wave_speed  # fixed: the 3-D estimate sees the z spacing
    mesh3 = extrude_quads(mesh2)
    u2, stepper2 = run(system2, dt)
    u3, stepper3 = run(maxwell(mesh3, order, backend, flux=flux), dt)
    assert stepper2.path == stepper3.path == "whole-step"
    assert u3.shape == (6, mesh2.num_elements, order + 1, order + 1, order + 1)
    # the bound: 1e-12, or twice what the NumPy oracle's own 2-D and extruded runs differ by
    # where the extruded geometry's round-off is larger (N = 7 deformed: 6.6e-13, measured on
    # a CPU; the extruded mesh's metrics carry D applied along t, 4.8e-14 at N = 7)
    n2 = run(maxwell(mesh2, order, NumpyBackend(), flux=flux), dt)[0]
    n3 = run(maxwell(mesh3, order, NumpyBackend(), flux=flux), dt)[0]
    scale = np.abs(u2).max()
    oracle = max(np.abs(n3[:, :, k] - n2[:, :, 0]).max() for k in range(order + 1)) / np.abs(n2).max()
    bound = max(1e-12, 2 * oracle)
    assert bound <= 2e-12  # (the oracle itself agrees to about 1e-12)
    for k in range(order + 1):
        assert np.abs(u3[:, :, k] - u2[:, :, 0]).max() <= bound * scale, k


def test_listed_traces_and_the_dipole_kernel_in_2d():
    """terms_cuda.ListedTraces and source_cuda.DipoleAdd with dim = 2 against NumPy: the
    traces of listed elements, and S = -w(t) profile added to one element with its traces."""
    from lobatto.backends import get_backend
    from lobatto.systems.maxwell.source_cuda import DipoleAdd
    from lobatto.systems.maxwell.terms_cuda import ListedTraces

    order = 3
    backend = get_backend("cuda")
    k = Kernels(order, True, "float64")
    reference = k.ref("maxwell_traces")
    u = k.random(k.u_shape)
    normals = k.host_geometry["normals"]
    listed = np.array([4, 1, 3])
    traces = k.cuda.asarray(np.full(k.face_shape, 7.0))
    ListedTraces(backend, order, dim=2)(k.device(u), k.geometry["normals"], traces,
                                         backend.asarray(listed, dtype=np.int64), len(listed))
    got, expected = k.host(traces), reference(u, normals, np.zeros(k.face_shape))
    assert relative(got[:, listed], expected[:, listed]) < 1e-13
    others = np.setdiff1d(np.arange(k.u_shape[1]), listed)
    assert np.all(got[:, others] == 7.0)

    profile = k.random((3, 1, order + 1, order + 1))
    dipole = DipoleAdd(backend, order, 2, 0, profile, "gaussian", {"t0": 0.1, "width": 0.05}, dim=2)
    residual = k.random(k.u_shape)
    a, b, dt, t = 0.0, 0.4, 0.01, 0.12
    w = math.exp(-0.5 * ((t - 0.1) / 0.05) ** 2)
    uu, rr, tt = k.device(u), k.device(residual), k.cuda.asarray(reference(u, normals, np.zeros(k.face_shape)))
    dipole(uu, rr, t, a, b, dt, traces=tt, normals=k.geometry["normals"])
    s = np.zeros(k.u_shape)
    s[0:3, 2] = -w * profile
    u_ref, r_ref = u + b * dt * s, residual + dt * s
    assert relative(k.host(rr), r_ref) < 1e-13 and relative(k.host(uu), u_ref) < 1e-13
    assert relative(k.host(tt), reference(u_ref, normals, np.zeros(k.face_shape))) < 1e-13
    with pytest.raises(ValueError, match="2-D mesh"):  # a 3-D state refused, not misread
        dipole(k.cuda.zeros((6, 6, order + 1, order + 1, order + 1)), rr, t, a, b, dt)


def with_terms(system):
    """A conduction term (no auxiliary fields) and a Debye-like pole on parts of the mesh (as
    tests/unit/test_maxwell_terms.py's): the fused path then rewrites the traces of the elements
    they change."""
    from lobatto.systems.maxwell.terms import StageTerm

    class Conduction(StageTerm):
        name = "conduction"

        def __init__(self, system, elements, sigma):
            self.setup_storage(system, elements)
            self.sigma = sigma

        def rates(self, u, t, s_out, r_out):
            s_out[0:3] = -(self.sigma / self.system.epsilon) * self.take(u)[0:3]
            s_out[3:6] = 0

    class Relaxation(StageTerm):
        name = "relaxation"
        aux_count = 3

        def __init__(self, system, elements, gain, tau):
            self.setup_storage(system, elements)
            self.gain, self.tau = gain, tau

        def rates(self, u, t, s_out, r_out):
            r_out[...] = (self.gain * self.take(u)[0:3] - self.aux) / self.tau
            s_out[0:3] = -r_out / self.system.epsilon
            s_out[3:6] = 0

    centroid = system.geometry.coords[0].mean(axis=(1, 2, 3))
    system.add_term(Conduction(system, np.nonzero(centroid > 0.8)[0], 1.7))
    system.add_term(Relaxation(system, np.nonzero(centroid < 0.9)[0], 2.0, 0.3))
    return system


@pytest.mark.parametrize("order", [3, 7])
def test_terms_on_the_fused_path_equal_the_numpy_run(order):
    """A conduction term and a pole on the fused path: CUDA equals the NumPy run."""
    from lobatto.backends import get_backend

    mesh = mesh_2d(True)
    u0 = np.random.default_rng(order).standard_normal((6, mesh.num_elements, 1, order + 1, order + 1))
    expected = numpy_steps(with_terms(maxwell(mesh, order, NumpyBackend())), u0.copy(), 0.01, 10)
    backend = get_backend("cuda")
    system = with_terms(maxwell(mesh, order, backend))
    from lobatto.integrators import Stepper, get_scheme

    stepper = Stepper(system, get_scheme("lsrk45"))
    assert stepper.path == "whole-step"
    u = backend.asarray(u0)
    for i in range(10):
        stepper.step(u, i * 0.01, 0.01)
    assert relative(backend.to_host(u), expected) < 1e-12
