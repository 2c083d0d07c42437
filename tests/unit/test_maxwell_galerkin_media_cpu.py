"""The Galerkin form's compiled CPU kernel (galerkin_cpu.py, kernels/galerkin.c) with a per-point
medium (galerkin_media.py) against its array code (WeightAdjustedOperator.rhs, the reference) on
fresh random data and fresh random media: eps jumping across every element face and varying inside
the elements, mu varying, a diagonal eps (three components differing), sigma > 0 on some elements
and 0 on others; curved and affine elements mixed (the affine ones leave the closed form), PEC and
periodic faces, upwind and central fluxes, Q = N + 1 (square_rhs) and N + 2, odd and even Q,
float64 and float32. Then the energy identities through the kernel, and a few time steps on the
CPU backend against the NumPy oracle backend's."""

from __future__ import annotations

import numpy as np
import pytest

from cylwave import cylinder_rea
from lobatto.api import Simulation, case_from_dict
from lobatto.backends import get_backend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.integrators import Stepper, get_scheme
from lobatto.jit import c as cbuild
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell import galerkin, galerkin_cpu
from lobatto.systems.maxwell.galerkin import quadrature_points
from lobatto.systems.maxwell.system import MaxwellSystem

pytestmark = pytest.mark.skipif(not cbuild.available(), reason="no C compiler (the array code runs instead)")

BOX = {"elements": [2, 1, 2], "boundary": "pec",
       "deform": {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)*(1+x)",
                  "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)*(1+y*y)"}}
PERIODIC = {"elements": [2, 2, 1], "periodic": [True, True, True],
            "deform": {"x": "0.1*sin(2*pi*y)*sin(2*pi*z)", "y": "0.08*sin(2*pi*x)*sin(2*pi*z)",
                       "z": "0.06*sin(2*pi*x)*sin(2*pi*y)"}}
SHEARED = {"elements": [2, 1, 2], "boundary": "pec",  # affine: the closed form without a medium
           "deform": {"x": "0.2*y + 0.1*z", "y": "0.1*x", "z": "-0.15*y"}}
TOLERANCE = {"float64": 1e-13, "float32": 2e-5}  # relative to the largest value, as test_maxwell_galerkin_cpu's


@pytest.fixture(scope="module", autouse=True)
def compiled_libraries():
    """The libraries the tests load, compiled side by side (a cold cache costs 1-2.5 s each)."""
    cbuild.prebuild([galerkin_cpu.galerkin_spec(order, quadrature_points(order) + extra, precision)
                     for order in (2, 3) for extra in (0, 1) for precision in ("float64", "float32")])


@pytest.fixture(scope="module")
def cylinder(tmp_path_factory):
    """The O-grid cylinder of tests/cylwave.py: curved elements and two straight (affine) ones,
    a PEC wall, periodic in z."""
    path = tmp_path_factory.mktemp("cylwave") / "cylwave.rea"
    assert cylinder_rea(path, m=1, layers=2, length=4.0) == 10
    return {"generator": "nek", "file": str(path), "boundaries": {"PEC": "pec"}}


def mesh_of(tmp_path, mesh, order):
    data = {"mesh": mesh, "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "time": {"t_end": 1.0, "cfl": 0.3}, "output": {"formats": []}}
    sim = Simulation(case_from_dict(data, name="galerkin_media_cpu"), backend="cpu", output_dir=str(tmp_path),
                     comm=None)
    sim.close()
    return sim.system.mesh, sim.system.geometry


def random_medium(geometry, rng, anisotropic: bool, conductor: bool, constant=None) -> dict:
    """eps, mu, sigma at the GLL nodes: per element a random level (so a jump across every
    element face) times a smooth random variation inside, none on the elements of the mask
    ``constant`` (None: none, "all": every element); sigma > 0 on about half the elements
    (at least one) and 0 on the others (at least one) when ``conductor``."""
    x, y, z = geometry.coords
    E = x.shape[0]
    inside = np.ones((E, 1, 1, 1)) if constant is None else 0.0 + ~np.broadcast_to(constant, (E,))[:, None, None, None]

    def varying(low, high, amplitude):
        level = rng.uniform(low, high, E)[:, None, None, None]
        k = rng.uniform(1.0, 3.0, 3)
        return level * (1.0 + inside * amplitude * np.sin(k[0] * x + rng.uniform(0, 6)) * np.cos(k[1] * y - k[2] * z))

    eps = varying(1.0, 4.0, 0.3)
    if anisotropic:  # a diagonal eps: three components that differ
        eps = np.stack([eps, varying(1.0, 4.0, 0.2), varying(0.5, 2.0, 0.4)])
    sigma = 0.0
    if conductor:
        lossy = rng.random(E) < 0.5
        lossy[0], lossy[-1] = True, False
        sigma = np.where(lossy, rng.uniform(0.2, 1.5, E), 0.0)[:, None, None, None] * (1.0 + 0.5 * inside * x * x)
    return {"epsilon": eps, "mu": varying(0.5, 2.0, 0.25), "sigma": sigma + 0 * x}


def media_system(mesh, order, medium, backend, flux="upwind", points=None):
    system = MaxwellSystem(mesh, order, backend, epsilon=2.3, mu=0.4, flux=flux, material=medium,
                           volume_form="galerkin")
    if points is not None:
        galerkin.attach(system, points=points)
    return system


def array_rhs(system, u, sums, alpha):
    """The array code's rhs (what attach() falls back to), the reference."""
    own = face_values(np, u, system.order)
    return system.galerkin.rhs(np, u, (own, sums), system.device_geometry["face_factors"], np.empty_like(u),
                               system.epsilon, system.mu, alpha)


def random_inputs(system, rng):
    """u and exchange sums (own + a random neighbour value: the jumps are not zero anywhere)."""
    dtype = system.backend.dtype
    n, E = system.order + 1, system.num_elements
    u = rng.standard_normal((6, E, n, n, n)).astype(dtype)
    sums = (face_values(np, u, system.order) + rng.standard_normal((6, E, 6, n, n))).astype(dtype)
    return u, sums


@pytest.mark.parametrize("extra", [0, 1])  # Q = N + 1 (square_rhs), N + 2 (the general passes)
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("order", [2, 3])  # Q = 3, 4 and 4, 5: odd and even
def test_kernel_equals_array_code_with_a_medium(tmp_path, cylinder, order, precision, extra):
    rng = np.random.default_rng()
    backend = get_backend("cpu", precision=precision)
    # (mesh, a diagonal eps, a conductor, the elements with a constant medium, those in closed form):
    # an affine element takes it where its medium and its faces' fluxes are constant (the cylinder's
    # two straight elements; on the sheared box, with element 0's medium varying, only the element
    # that shares no face with it)
    but_first = np.array([False, True, True, True])
    cases = ((BOX, False, True, None, 0), (PERIODIC, True, True, None, 0), (SHEARED, True, False, None, 0),
             (SHEARED, True, True, "all", 4), (SHEARED, False, True, but_first, 1), (cylinder, True, True, None, 0),
             (cylinder, False, False, None, 0), (cylinder, True, True, "all", 2))
    for number, (mesh, anisotropic, conductor, constant, closed) in enumerate(cases):
        mesh, geometry = mesh_of(tmp_path / str(number), mesh, order)
        constant = np.ones(geometry.coords.shape[1], dtype=bool) if isinstance(constant, str) else constant
        system = media_system(mesh, order, random_medium(geometry, rng, anisotropic, conductor, constant), backend,
                              points=order + 1 + extra if extra else None)
        operator = system.galerkin
        assert operator.points == order + 1 + extra and operator.medium is not None
        assert operator.medium.inverse_weights.dtype == np.dtype(precision)
        assert (operator.medium.loss_weights is not None) == conductor
        assert system.rhs_kernel.__module__ == galerkin_cpu.__name__  # attach() chose the C kernel
        assert system.rhs_kernel.affine_elements == closed, number
        for alpha in (system.alpha, 0.0):  # upwind and central
            u, sums = random_inputs(system, rng)
            ref = array_rhs(system, u, sums, alpha)
            out = np.full_like(u, np.nan)
            system.rhs_kernel(u, sums, system.device_geometry, out, system.epsilon, system.mu, alpha)
            scale = np.abs(ref).max()
            assert np.abs(out - ref).max() <= TOLERANCE[precision] * scale, (number, alpha)


def test_medium_changes_the_rhs(tmp_path, cylinder):
    """The medium reaches the kernel: its rhs is not the scalar eps, mu one (which the array code
    would give if the medium's arrays were ignored), and the elements' range is honoured."""
    rng = np.random.default_rng()
    mesh, geometry = mesh_of(tmp_path, cylinder, 3)
    backend = get_backend("cpu")
    system = media_system(mesh, 3, random_medium(geometry, rng, True, True), backend)
    plain = MaxwellSystem(mesh, 3, backend, epsilon=2.3, mu=0.4, volume_form="galerkin")
    u, sums = random_inputs(system, rng)
    args = (system.device_geometry, system.epsilon, system.mu, system.alpha)
    with_medium = system.rhs_kernel(u, sums, args[0], np.empty_like(u), *args[1:])
    without = plain.rhs_kernel(u, sums, args[0], np.empty_like(u), *args[1:])
    assert np.abs(with_medium - without).max() > 0.1 * np.abs(without).max()
    out = np.full_like(u, np.nan)
    system.rhs_kernel(u, sums, args[0], out, *args[1:], elements=(2, 5))
    assert np.isnan(out[:, :2]).all() and np.isnan(out[:, 5:]).all()
    assert np.array_equal(out[:, 2:5], with_medium[:, 2:5])


@pytest.mark.parametrize("extra", [0, 1])
def test_energy_identities_through_the_kernel(tmp_path, extra):
    """Central flux: without a conductor the energy in M_{eps W}, M_{mu W} is conserved to
    round-off, with one its rate is exactly -E . M_sigma E (Gauss-integrated); upwind decays."""
    rng = np.random.default_rng()
    order = 3
    mesh, geometry = mesh_of(tmp_path, BOX, order)
    points = order + 1 + extra if extra else None
    for conductor in (False, True):
        medium = random_medium(geometry, rng, True, conductor)
        system = media_system(mesh, order, medium, get_backend("cpu"), flux="central", points=points)
        assert system.rhs_kernel.__module__ == galerkin_cpu.__name__
        u = rng.standard_normal(system.allocate_state().shape)
        du = system.rhs(u, 0.0, np.empty_like(u))
        rate = 0.5 * (system.energy(u + du) - system.energy(u - du))  # u . M du: the energy is quadratic
        scale = 2 * np.sqrt(system.energy(u) * system.energy(du))
        op = system.galerkin
        loss = 0.0
        if conductor:
            gauss = np.einsum("ai,bj,ck,...ijk->...abc", op.v, op.v, op.v, u[0:3])
            loss = float(np.sum(op.medium.loss_weights * gauss**2))
            assert loss > 1e-3 * scale  # measured about 6e-3: far above the round-off asked below
        assert abs(rate + loss) <= 1e-12 * scale, (conductor, rate, loss, scale)
        upwind = media_system(mesh, order, medium, get_backend("cpu"), flux="upwind", points=points)
        du = upwind.rhs(u, 0.0, np.empty_like(u))
        assert 0.5 * (upwind.energy(u + du) - upwind.energy(u - du)) < -1e-2 * scale - loss


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_steps_equal_the_numpy_backend(tmp_path, cylinder, precision):
    """Four LSRK steps of the whole system with a medium (diagonal eps, a conductor) on the compiled
    CPU backend (the C rhs) and on the NumPy oracle backend (the array code)."""
    rng = np.random.default_rng()
    order = 3
    mesh, geometry = mesh_of(tmp_path, cylinder, order)
    medium = random_medium(geometry, rng, True, True)
    start = rng.standard_normal((6, geometry.coords.shape[1]) + (order + 1,) * 3)
    results = []
    for backend in (get_backend("cpu", precision=precision), NumpyBackend(precision=precision)):
        system = media_system(mesh, order, medium, backend)
        compiled = system.rhs_kernel.__module__ == galerkin_cpu.__name__
        assert compiled == backend.uses_tuned  # the oracle: the array code
        u = backend.asarray(start.copy())  # (asarray may not copy: the steps write in place)
        stepper = Stepper(system, get_scheme("lsrk45"))
        dt = 0.02
        for n in range(4):
            stepper.step(u, n * dt, dt)
        results.append(np.asarray(backend.to_host(u), dtype=np.float64))
    assert np.abs(results[0] - start).max() > 1e-2  # the steps changed the state
    tolerance = 1e-13 if precision == "float64" else 2e-5
    assert np.abs(results[0] - results[1]).max() <= tolerance * np.abs(results[1]).max()


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_energy_products_with_a_medium_equal_array_code(tmp_path, cylinder, precision):
    """galerkin_energy (per element CG in C) with the medium's w / (J eps_c), w / (J mu_c) one
    component apart, against WeightAdjustedOperator.energy_products (M_{eps_c W}, M_{mu_c W}), at
    Q = N + 2 (at N + 1 the products have a closed form)."""
    rng = np.random.default_rng()
    order = 3
    mesh, geometry = mesh_of(tmp_path, cylinder, order)
    system = media_system(mesh, order, random_medium(geometry, rng, True, True),
                          get_backend("cpu", precision=precision), points=order + 2)
    operator = system.galerkin
    kernel = galerkin_cpu.energy_kernel(system.backend, operator)
    u = rng.standard_normal((6, system.num_elements) + (order + 1,) * 3).astype(precision)
    u[1, 0] = 0  # a zero component of one element: its CG stops at once
    ref = galerkin.WeightAdjustedOperator.energy_products(operator, np, u)
    got = kernel(np, u)
    assert got.dtype == np.float64 and got.shape == (6,)
    assert np.abs(got - ref).max() <= (1e-13 if precision == "float64" else 1e-5) * ref.max()
    operator.medium = None  # the same operator without its medium: other products (the kernel reads the medium)
    plain = galerkin_cpu.energy_kernel(system.backend, operator)(np, u)
    assert np.abs(plain - got).max() > 1e-2 * ref.max()


@pytest.mark.parametrize("points", [None, 5])  # Q = N + 1 (square_rhs) and a larger rule (the general path)
def test_threads_agree_with_a_medium(tmp_path, cylinder, points):
    """OpenMP over elements with a medium: one and two threads give the same rhs, bit for bit."""
    rng = np.random.default_rng()
    mesh, geometry = mesh_of(tmp_path, cylinder, 3)
    system = media_system(mesh, 3, random_medium(geometry, rng, True, True), get_backend("cpu"), points=points)
    u, sums = random_inputs(system, rng)
    results = []
    try:
        for threads in (1, 2):
            cbuild.set_num_threads(threads)
            results.append(system.rhs_kernel(u, sums, system.device_geometry, np.empty_like(u), system.epsilon,
                                              system.mu, system.alpha))
    finally:
        cbuild.set_num_threads(None)
    assert np.array_equal(results[0], results[1])
