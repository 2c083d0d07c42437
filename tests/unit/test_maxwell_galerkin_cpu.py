"""The Galerkin volume form's compiled CPU kernel (galerkin_cpu.py, kernels/galerkin.c) against its
array code (galerkin.WeightAdjustedOperator.rhs with the skew volume term, the reference) on fresh
random data: deformed boxes with PEC and periodic faces and the O-grid cylinder of
tests/cylwave.py (circle sides, PEC wall, periodic in z), N = 1, 2, 3, 5, Q = N + 1 (the default)
and N + 2, float64 and float32; the energy identity through the kernel; and a few time steps of
a Simulation along either path."""

from __future__ import annotations

import numpy as np
import pytest

from cylwave import cylinder_rea
from lobatto.api import Simulation, case_from_dict
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.jit import c as cbuild
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell import galerkin_cpu
from lobatto.systems.maxwell import galerkin
from lobatto.systems.maxwell.galerkin import WeightAdjustedOperator, quadrature_points

pytestmark = pytest.mark.skipif(not cbuild.available(), reason="no C compiler (the array code runs instead)")

BOX = {"elements": [2, 1, 2], "boundary": "pec",
       "deform": {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
                  "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}}
PERIODIC = {"elements": [2, 2, 1], "periodic": [True, True, True],
            "deform": {"x": "0.1*sin(2*pi*y)*sin(2*pi*z)", "y": "0.08*sin(2*pi*x)*sin(2*pi*z)",
                       "z": "0.06*sin(2*pi*x)*sin(2*pi*y)"}}
GENERAL = {**BOX, "elements": [2, 2, 2],  # components that differ (the box's c g(x, y, z) map is special)
           "deform": {"x": BOX["deform"]["x"], "y": f"({BOX['deform']['y']})*(1+x)",
                      "z": f"({BOX['deform']['z']})*(1+y*y)"}}
SHEARED = {"elements": [2, 1, 2], "boundary": "pec",  # affine elements (parallelepipeds): the closed form
           "deform": {"x": "0.2*y + 0.1*z", "y": "0.1*x", "z": "-0.15*y"}}
TOLERANCE = {"float64": 1e-13, "float32": 2e-5}  # relative to the largest value (measured: 2e-15, 7e-7)


@pytest.fixture(scope="module", autouse=True)
def compiled_libraries():
    """The libraries the tests load, compiled side by side (a cold cache costs 1-2.5 s each)."""
    cbuild.prebuild([galerkin_cpu.galerkin_spec(order, quadrature_points(order) + extra, precision)
                     for order in (1, 2, 3, 5) for extra in (0, 1) for precision in ("float64", "float32")]
                    + [galerkin_cpu.galerkin_spec(4, 8, "float64")])


@pytest.fixture(scope="module")
def cylinder(tmp_path_factory):
    path = tmp_path_factory.mktemp("cylwave") / "cylwave.rea"
    assert cylinder_rea(path, m=1, layers=2, length=4.0) == 10
    return {"generator": "nek", "file": str(path), "boundaries": {"PEC": "pec"}}


def simulation(tmp_path, mesh, order, precision="float64", flux="upwind"):
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": "galerkin"},
            "physics": {"equations": "maxwell", "epsilon": 1.7, "mu": 0.6},
            "time": {"t_end": 1.0, "cfl": 0.3}, "backend": {"precision": precision}, "output": {"formats": []}}
    return Simulation(case_from_dict(data, name="galerkin_cpu"), backend="cpu", output_dir=str(tmp_path), comm=None)


def array_rhs(system):
    """The array code's rhs with the system's rhs-kernel signature (what attach() falls back to)."""
    operator, order = system.galerkin, system.order

    def rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None):
        own = face_values(np, u, order)
        return operator.rhs(np, u, (own, sums), geometry["face_factors"], out, epsilon, mu, alpha)

    return rhs


def random_inputs(system, rng):
    """u and exchange sums (own + a random neighbour value: the jumps are not zero anywhere)."""
    dtype = system.backend.dtype
    n, E = system.order + 1, system.num_elements
    u = rng.standard_normal((6, E, n, n, n)).astype(dtype)
    sums = (face_values(np, u, system.order) + rng.standard_normal((6, E, 6, n, n))).astype(dtype)
    return u, sums


@pytest.mark.parametrize("extra", [0, 1])  # Q = N + 1 (the default), N + 2 (odd and even Q)
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_kernel_equals_array_code(tmp_path, cylinder, order, precision, extra):
    rng = np.random.default_rng()
    flat = 4 if order == 1 else 0  # at N = 1 the sine maps move no node: the boxes' elements are flat
    for mesh, affine in ((BOX, flat), (PERIODIC, flat), (SHEARED, 4), (cylinder, 2)):
        system = simulation(tmp_path, mesh, order, precision).system
        if extra:
            galerkin.attach(system, points=order + 1 + extra)
        assert system.galerkin.points == order + 1 + extra and system.galerkin.volume == "skew"
        assert system.rhs_kernel.__module__ == galerkin_cpu.__name__  # attach() chose the C kernel
        assert system.rhs_kernel.affine_elements == affine  # the cylinder's middle ones are straight
        if mesh is BOX:  # a PEC wall's faces (factors not 1) are among them
            assert np.any(system.device_geometry["face_factors"] != 1)
        for alpha in (system.alpha, 0.0):  # the chosen (upwind) flux and the central one
            u, sums = random_inputs(system, rng)
            args = (system.device_geometry, None, system.epsilon, system.mu, alpha)
            ref = array_rhs(system)(u, sums, args[0], np.empty_like(u), *args[2:])
            out = np.full_like(u, np.nan)
            system.rhs_kernel(u, sums, args[0], out, *args[2:])
            scale = np.abs(ref).max()
            assert np.abs(out - ref).max() <= TOLERANCE[precision] * scale, (mesh, alpha)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_energy_products_equal_array_code(tmp_path, cylinder, precision):
    """galerkin_energy (per element CG in C) against WeightAdjustedOperator.energy_products, at a
    rule of N + 2 points (at N + 1 the products have a closed form and no C kernel is installed)."""
    rng = np.random.default_rng()
    for mesh, order in ((BOX, 2), (cylinder, 5)):
        system = simulation(tmp_path, mesh, order, precision).system
        assert "energy_products" not in vars(system.galerkin)  # Q = N + 1: the closed form
        galerkin.attach(system, points=order + 2)
        operator = system.galerkin
        assert "energy_products" in vars(operator)  # attach() installed the C products
        u = rng.standard_normal((6, system.num_elements) + (order + 1,) * 3).astype(precision)
        u[1, 0] = 0  # a zero component of one element: its CG stops at once
        ref = WeightAdjustedOperator.energy_products(operator, np, u)
        got = operator.energy_products(np, u)
        assert got.dtype == np.float64 and got.shape == (6,)
        assert np.abs(got - ref).max() <= (1e-13 if precision == "float64" else 1e-5) * ref.max()


def test_central_flux_conserves_through_the_kernel(tmp_path):
    """The skew form's energy identity at Q = N + 1 with the rhs in C (the energy in closed form): the rate of
    random data, B(u, L u) / (2 sqrt(E(u) E(L u))) by polarisation, is round-off with the central
    flux on a general deformed box."""
    rng = np.random.default_rng()
    for order in (3, 5):
        sim = simulation(tmp_path / str(order), GENERAL, order, flux="central")
        system = sim.system
        assert system.rhs_kernel.__module__ == galerkin_cpu.__name__ and system.galerkin.points == order + 1
        u = rng.standard_normal(sim.u.shape)
        du = system.rhs(u, 0.0, np.empty_like(u))
        rate = 0.5 * (system.energy(u + du) - system.energy(u - du))
        assert abs(rate) / (2 * np.sqrt(system.energy(u) * system.energy(du))) <= 1e-13
        sim.close()


def test_no_kernel_for_the_strong_form(tmp_path):
    """volume="strong" (kept for comparisons) runs as array code; the energy's products (Q = N + 1)
    in closed form as for the skew form."""
    system = simulation(tmp_path, BOX, 2).system
    galerkin.attach(system, volume="strong")
    assert galerkin_cpu.rhs_kernel(system.backend, system.galerkin) is None
    assert system.rhs_kernel.__module__ != galerkin_cpu.__name__
    assert "energy_products" not in vars(system.galerkin)


def test_larger_gauss_rule_and_element_range(tmp_path, cylinder):
    """Any Q (here 8 at N = 4, the default being 5) and a range of elements: the others untouched."""
    system = simulation(tmp_path, cylinder, 4).system
    operator = WeightAdjustedOperator(system.geometry, points=8).to(system.backend)
    system.galerkin = operator
    kernel = galerkin_cpu.rhs_kernel(system.backend, operator)
    u, sums = random_inputs(system, np.random.default_rng())
    args = (system.device_geometry, None, system.epsilon, system.mu, system.alpha)
    ref = array_rhs(system)(u, sums, args[0], np.empty_like(u), *args[2:])
    out = np.full_like(u, np.nan)
    kernel(u, sums, args[0], out, *args[2:], elements=(1, 3))
    assert np.isnan(out[:, 0]).all() and np.isnan(out[:, 3:]).all()
    assert np.abs(out[:, 1:3] - ref[:, 1:3]).max() <= 1e-13 * np.abs(ref).max()


@pytest.mark.parametrize("points", [None, 5])  # Q = N + 1 (square_rhs) and a larger rule (the general path)
def test_threads_agree(tmp_path, cylinder, points):
    """OpenMP over elements: one and two threads give the same rhs and energy, bit for bit."""
    system = simulation(tmp_path, cylinder, 3).system
    if points:
        galerkin.attach(system, points=points)
    u, sums = random_inputs(system, np.random.default_rng())
    results = []
    try:
        for threads in (1, 2):
            cbuild.set_num_threads(threads)
            out = system.rhs_kernel(u, sums, system.device_geometry, np.empty_like(u), system.epsilon, system.mu,
                                    system.alpha)
            results.append((out, system.galerkin.energy_products(np, u)))
    finally:
        cbuild.set_num_threads(None)
    assert np.array_equal(results[0][0], results[1][0])
    assert np.allclose(results[0][1], results[1][1], rtol=1e-15, atol=0)  # the sum's order may differ


def test_steps_agree_with_the_array_code(tmp_path, cylinder):
    rng = np.random.default_rng()
    start = None
    results = []
    for compiled in (True, False):
        sim = simulation(tmp_path / str(compiled), cylinder, 3)
        if not compiled:
            sim.system.rhs_kernel = array_rhs(sim.system)
        if start is None:
            start = rng.standard_normal(sim.u.shape)
        sim.u[...] = start
        for n in range(4):
            sim.stepper.step(sim.u, n * sim.dt, sim.dt)
        results.append(np.array(sim.u))
        sim.close()
    assert np.abs(results[0] - results[1]).max() < 1e-13 * np.abs(results[1]).max()
    assert np.abs(results[0] - start).max() > 1e-3  # the steps changed the state


def test_array_code_where_the_kernel_does_not_apply(tmp_path, monkeypatch):
    system = simulation(tmp_path, BOX, 2).system
    assert galerkin_cpu.rhs_kernel(NumpyBackend(), system.galerkin) is None  # the oracle backend
    monkeypatch.setenv("LOBATTO_NO_CKERNELS", "1")
    assert galerkin_cpu.rhs_kernel(system.backend, system.galerkin) is None
    fallback = simulation(tmp_path / "fallback", BOX, 2).system
    assert fallback.rhs_kernel.__module__ != galerkin_cpu.__name__


def test_bad_arrays_are_refused(tmp_path):
    system = simulation(tmp_path, BOX, 2).system
    u, sums = random_inputs(system, np.random.default_rng())
    out = np.empty_like(u)
    args = (system.device_geometry, out, system.epsilon, system.mu, system.alpha)
    with pytest.raises(TypeError, match="galerkin_rhs: u must be"):
        system.rhs_kernel(np.asfortranarray(u), sums, *args)
    with pytest.raises(TypeError, match="galerkin_rhs: sums must be"):
        system.rhs_kernel(u, sums.astype(np.float32), *args)
