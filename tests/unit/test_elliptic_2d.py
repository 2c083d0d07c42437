"""The elliptic path on 2-D meshes (issue 34, slice A2): Helmholtz apply, FDM, Schwarz, the
coarse solve, p-multigrid and the Poisson system on quads (arrays (E, 1, n, n)).

The oracle is the extruded 3-D twin (mesh.extrude.extrude_quads: one layer, z in [-1, 1],
periodic z, so dz/dt = 1): an operator on a z-independent field gives w_k times the 2-D
result in plane k (A3 ext(u) = (w_k Lz/2) (x) A2 u, Lz = 2), to 1e-12. A solve cannot follow
the 3-D Krylov path iterate by iterate (the 3-D smoothers see t terms), so solutions are
compared at solver tolerance 1e-14 to 1e-11 (notes-2d-plan.md 2.1). Compiled kernels are
checked against the NumPy reference on fresh random data.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.cpu import CpuBackend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import gll_weights
from lobatto.jit import c as cbuild
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.operators import HelmholtzOperator, geometric_factors
from lobatto.operators.helmholtz_cpu import compiled_apply
from lobatto.solvers.multigrid import Level
from lobatto.solvers.schwarz import AdditiveSchwarz
from planar import deform_xy

REFERENCE = NumpyBackend()


def twins(elements=(3, 2), order=4, **box):
    """(2-D mesh, its extruded twin, their geometries)."""
    flat = box_mesh(elements, deform=deform_xy, **box)
    solid = extrude_quads(flat)
    return flat, solid, compute_geometry(flat, order), compute_geometry(solid, order)


def extruded(u2, n):
    """A z-independent 3-D field from a 2-D one: (..., E, 1, n, n) -> (..., E, n, n, n)."""
    return np.ascontiguousarray(np.broadcast_to(u2, u2.shape[:-3] + (n, n, n)))


# Helmholtz apply ----------------------------------------------------------------------------------

@pytest.mark.parametrize("order", [2, 5])
def test_helmholtz_apply_equals_the_extruded_one_plane_by_plane(order):
    flat, solid, g2, g3 = twins(order=order)
    n = order + 1
    rng = np.random.default_rng(order)
    assert geometric_factors(g2).shape == (3, 6, 1, n, n) and geometric_factors(g3).shape == (6, 6, n, n, n)
    w = gll_weights(order)
    for h1, h2 in ((1.0, 0.0), (0.7, 2.5), ("array", "array")):
        if h1 == "array":  # z-independent variable coefficients
            h1 = 1 + rng.random(g2.jacobian.shape)
            h2 = rng.random(g2.jacobian.shape)
            h1_3, h2_3 = extruded(h1, n), extruded(h2, n)
        else:
            h1_3, h2_3 = h1, h2
        a2 = HelmholtzOperator(g2, REFERENCE, h1, h2)
        a3 = HelmholtzOperator(g3, REFERENCE, h1_3, h2_3)
        assert a2.dim == 2 and a2.bytes_per_point == (48 if a2._mass is not None else 40)
        u2 = rng.standard_normal(g2.jacobian.shape)
        out2 = a2.apply_local(u2)
        out3 = a3.apply_local(extruded(u2, n))
        expected = w[None, :, None, None] * out2  # A3 ext(u) = (w_k Lz/2) A2 u, Lz = 2
        scale = np.abs(expected).max()
        assert np.abs(out3 - expected).max() <= 1e-12 * scale


@pytest.mark.parametrize("order", [1, 3, 7])
def test_helmholtz_diagonal_is_the_element_matrix_diagonal(order):
    _, _, g2, _ = twins((2, 2), order)
    rng = np.random.default_rng(7 + order)
    h1 = 1 + rng.random(g2.jacobian.shape)
    operator = HelmholtzOperator(g2, REFERENCE, h1, 0.3)
    n = order + 1
    E = g2.jacobian.shape[0]
    diagonal = np.empty((E, n * n))
    for p in range(n * n):
        unit = np.zeros((E, n * n))
        unit[:, p] = 1.0
        diagonal[:, p] = operator.apply_local(unit.reshape(E, 1, n, n)).reshape(E, -1)[:, p]
    got = operator.diagonal_local().reshape(E, -1)
    assert np.abs(got - diagonal).max() <= 1e-13 * np.abs(diagonal).max()


@pytest.mark.skipif(not cbuild.available(), reason="no C compiler")
@pytest.mark.parametrize("order", [1, 4, 7, 9])
def test_helmholtz_c_kernel_equals_the_reference_in_2d(order):
    _, _, g2, _ = twins((3, 3), order)
    rng = np.random.default_rng(100 + order)
    shape = g2.jacobian.shape
    for precision, tolerance in (("float64", 1e-13), ("float32", 2e-5)):
        dtype = np.dtype(precision)
        compiled = compiled_apply(order, precision, dim=2)
        assert compiled is not None
        for h1, h2 in ((1.0, 0.0), (0.7, 2.5), (1 + rng.random(shape), rng.random(shape))):
            operator = HelmholtzOperator(g2, REFERENCE, h1, h2, dtype=dtype)
            u = rng.standard_normal(shape).astype(dtype)
            expected = operator.apply_local(u)
            got = compiled(u, np.full(shape, np.nan, dtype=dtype), operator._factors, operator._mass,
                           operator._h1, operator._h2)
            assert np.abs(got - expected).max() <= tolerance * np.abs(expected).max()
    # the CPU backend picks it for a 2-D geometry
    cpu = CpuBackend()
    operator = HelmholtzOperator(g2, cpu, 1.3, 0.4)
    u = rng.standard_normal(shape)
    expected = HelmholtzOperator(g2, REFERENCE, 1.3, 0.4).apply_local(u)
    assert np.abs(operator.apply_local(u) - expected).max() <= 1e-13 * np.abs(expected).max()


# FDM and the Schwarz smoother ---------------------------------------------------------------------

def test_fdm_2d_reference_against_the_sums_written_out():
    """fdm_apply with dim=2 on fresh random data: (Sy (x) Sx) diag (Sy (x) Sx)^T, one mode of
    one element below its floor (dropped)."""
    rng = np.random.default_rng(3)
    E, m = 3, 5
    r = rng.standard_normal((E, 1, m, m))
    sx, sy = (rng.standard_normal((E, m, m)) for _ in range(2))
    lam = rng.random((E, 2, m))
    lam[1, :, 0] = 0.0
    coefficients = np.array([[1.3, 0.2, 1e-9], [0.7, 0.0, 1e-9], [2.0, 5.0, 1e-9]])
    got = REFERENCE.kernel("fdm_apply", size=m, dim=2)(r, np.empty_like(r), sx, sy, None, lam, coefficients)
    expected = np.zeros_like(r)
    for e in range(E):
        h1, h2, floor = coefficients[e]
        total = h1 * (lam[e, 1][:, None] + lam[e, 0][None, :]) + h2
        u = np.einsum("jb,ia,ji->ba", sy[e], sx[e], r[e, 0])
        u = np.where(total > floor, u / np.where(total > floor, total, 1), 0)
        expected[e, 0] = np.einsum("jb,ia,ba->ji", sy[e], sx[e], u)
    assert np.abs(got - expected).max() < 1e-12 * np.abs(expected).max()
    with pytest.raises(ValueError, match="fdm_apply"):
        REFERENCE.kernel("fdm_apply", size=m, dim=2)(np.zeros((E, m, m, m)), None, sx, sy, None, lam, coefficients)


@pytest.mark.parametrize("neumann", [(), (1, 3)])
def test_schwarz_local_solve_is_exact_on_a_rectangle(neumann):
    """One undeformed rectangle (1 x 2), h1 = 1.3, h2 = 0.7, Dirichlet edges (and two
    Neumann ones): the separable operator is the element's, so M = A^-1 on the free points."""
    order, n = 4, 5
    mesh = box_mesh((1, 1), upper=(1.0, 2.0))
    dirichlet = mesh.face_neighbour < 0
    dirichlet[0, list(neumann)] = False
    level = Level.build(mesh, order, REFERENCE, dirichlet=dirichlet, h1=1.3, h2=0.7)
    schwarz = AdditiveSchwarz(mesh, level)
    assert schwarz.sz is None and schwarz.eigenvalues.shape == (1, 2, n + 2)
    free = np.flatnonzero(level.mask.ravel())
    a = np.column_stack([level.apply(np.eye(n * n)[p].reshape(1, 1, n, n)).ravel() for p in free])[free]
    b = np.random.default_rng(0).standard_normal((1, 1, n, n)) * level.mask
    x = np.zeros(n * n)
    x[free] = np.linalg.solve(a, b.ravel()[free])
    assert np.abs(schwarz(b).ravel() - x).max() < 1e-12 * np.abs(x).max()


def test_schwarz_extension_equals_the_extruded_one():
    """The ext layers of a 2-D field hold the face neighbours' points one inside: in every own
    k plane of the extruded twin the 3-D extension of the z-independent field gives the same
    numbers (x periodic, curved quads)."""
    order, m = 3, 6
    flat, solid, g2, g3 = twins((3, 2), order, periodic=(True, False))
    s2 = AdditiveSchwarz(flat, Level.build(flat, order, REFERENCE, geometry=g2))
    s3 = AdditiveSchwarz(solid, Level.build(solid, order, REFERENCE, geometry=g3))
    field = np.sin(2 * np.pi * g2.coords[0]) + g2.coords[1] ** 2  # continuous, periodic in x
    ext2 = s2.extend(np.ascontiguousarray(field), np.zeros((6, 1, m, m)))
    ext3 = s3.extend(extruded(field, order + 1), np.zeros((6, m, m, m)))
    assert np.abs(ext2[:, :, 1:-1, :]).max() > 0.5  # layers filled
    for k in range(1, m - 1):  # the own planes; the faces' layers only (edges and corners unused)
        assert np.array_equal(ext2[:, 0, 1:-1, :], ext3[:, k, 1:-1, :])
        assert np.array_equal(ext2[:, 0, :, 1:-1], ext3[:, k, :, 1:-1])
    # each element's own points are inside
    assert np.array_equal(ext2[:, :, 1:-1, 1:-1], field)


# The CUDA kernels' D = 2 source, run on the CPU ---------------------------------------------------

EMULATED_ORDERS = (2, 5)  # helmholtz orders; fdm sizes M = order + 3

HELMHOLTZ_LAUNCH = """
template <int N, typename T, bool MASS, int EPB>
static void helmholtz(const T* u, T* out, const T* g, const T* mass, const T* D, T h1, T h2, long long E) {
    const int n2 = (N + 1) * (N + 1);
    for (long long b = 0; b < (E + EPB - 1) / EPB; ++b) {
        std::barrier<> block(n2 * EPB);
        lobatto_block_barrier = &block;
        std::vector<std::thread> threads;
        for (int y = 0; y < EPB; ++y)
            for (int x = 0; x < n2; ++x)
                threads.emplace_back([=] {
                    threadIdx.x = x; threadIdx.y = y; blockIdx.x = (int)b;
                    lobatto::helmholtz_apply_kernel<N, T, MASS, EPB, 2>(u, out, g, mass, D, h1, h2, E);
                });
        for (auto& t : threads) t.join();
    }
}
"""

FDM_LAUNCH = """
template <int M>
static void fdm(const double* r, double* out, const double* sx, const double* sy, const double* lam,
                const double* coef, long long E) {
    for (long long b = 0; b < E; ++b) {
        std::barrier<> block(M * M);
        lobatto_block_barrier = &block;
        std::vector<std::thread> threads;
        for (int x = 0; x < M * M; ++x)
            threads.emplace_back([=] {
                threadIdx.x = x; blockIdx.x = (int)b;
                lobatto::fdm_apply_kernel<M, double, 2>(r, out, sx, sy, sy, lam, coef, E);
            });
        for (auto& t : threads) t.join();
    }
}
template <int M>
static void layers(double* z, double* saved, int mode, long long E) {
    for (long long b = 0; b < E; ++b) {
        std::barrier<> block(M - 2);
        lobatto_block_barrier = &block;
        std::vector<std::thread> threads;
        for (int x = 0; x < M - 2; ++x)
            threads.emplace_back([=] {
                threadIdx.x = x; blockIdx.x = (int)b;
                lobatto::ext_layers_kernel<M, double, 2>(z, saved, mode, E);
            });
        for (auto& t : threads) t.join();
    }
}
"""


def emulated_library(folder, source, launch, entry_points):
    """The CUDA source compiled as C++20 with test_operators_cuda_emulated's shim (a std::thread
    per CUDA thread, a std::barrier per block), with ``entry_points`` (extern "C" text)."""
    import shutil
    import subprocess

    from lobatto.jit.nvrtc import source_text
    from test_operators_cuda_emulated import SHIM

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    path = folder / (source.stem + "_2d.cpp")
    path.write_text(SHIM + source_text(source) + "\n" + launch + entry_points + "\n")
    library = path.with_suffix(".so")
    cmd = [cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", str(path), "-o", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip("no C++20 <barrier>")
    assert proc.returncode == 0, proc.stderr
    import ctypes

    return ctypes.CDLL(str(library))


def test_emulated_cuda_kernels_in_2d_equal_the_reference(tmp_path):
    """helmholtz.cu (D = 2; mass and none; a partly idle last block) and fdm.cu's fdm_apply and
    ext_layers (D = 2, every mode) against the reference on fresh random 2-D data."""
    import ctypes

    from lobatto.discretization import derivative_matrix
    from lobatto.operators import fdm
    from lobatto.operators.helmholtz_cuda import SOURCE as HELMHOLTZ, default_elements_per_block

    lines = ['extern "C" void run(int order, int mass, const double* u, double* out, const double* g, '
             'const double* m, const double* D, double h1, double h2, long long E) {', "    switch (order) {"]
    for n in EMULATED_ORDERS:
        epb = default_elements_per_block(n)
        lines.append(f"    case {n}: if (mass) helmholtz<{n}, double, true, {epb}>(u, out, g, m, D, h1, h2, E); "
                     f"else helmholtz<{n}, double, false, {epb}>(u, out, g, m, D, h1, h2, E); break;")
    lines.append("    }\n}")
    lib = emulated_library(tmp_path, HELMHOLTZ, HELMHOLTZ_LAUNCH, "\n".join(lines))
    lib.run.argtypes = [ctypes.c_int] * 2 + [ctypes.c_void_p] * 5 + [ctypes.c_double] * 2 + [ctypes.c_longlong]
    rng = np.random.default_rng(11)
    for order in EMULATED_ORDERS:
        _, _, g2, _ = twins((5, 1), order)  # 5 elements: the last block of several is partly idle
        shape = g2.jacobian.shape
        d = np.ascontiguousarray(derivative_matrix(order))
        for h1, h2 in ((1.0, 0.0), (1 + rng.random(shape), rng.random(shape))):
            operator = HelmholtzOperator(g2, REFERENCE, h1, h2)
            u = rng.standard_normal(shape)
            expected = operator.apply_local(u)
            out = np.full(shape, np.nan)
            mass = d if operator._mass is None else operator._mass
            lib.run(order, int(operator._mass is not None), u.ctypes.data, out.ctypes.data,
                    operator._factors.ctypes.data, mass.ctypes.data, d.ctypes.data, operator._h1, operator._h2,
                    shape[0])
            assert np.abs(out - expected).max() <= 1e-13 * np.abs(expected).max()

    sizes = [n + 3 for n in EMULATED_ORDERS]
    lines = ['extern "C" void run(int m, const double* r, double* out, const double* sx, const double* sy, '
             'const double* lam, const double* coef, long long E) {', "    switch (m) {"]
    lines += [f"    case {m}: fdm<{m}>(r, out, sx, sy, lam, coef, E); break;" for m in sizes]
    lines += ["    }\n}", 'extern "C" void move(int m, double* z, double* saved, int mode, long long E) {',
              "    switch (m) {"]
    lines += [f"    case {m}: layers<{m}>(z, saved, mode, E); break;" for m in sizes]
    lines.append("    }\n}")
    lib = emulated_library(tmp_path, fdm.fdm_cuda.SOURCE, FDM_LAUNCH, "\n".join(lines))
    lib.run.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 6 + [ctypes.c_longlong]
    lib.move.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 2 + [ctypes.c_int, ctypes.c_longlong]
    E = 3
    for m in sizes:
        r = rng.standard_normal((E, 1, m, m))
        sx, sy = rng.standard_normal((E, m, m)), rng.standard_normal((E, m, m))
        lam = rng.random((E, 2, m))
        lam[1, :, 0] = 0.0
        coef = np.array([[1.3, 0.2, 1e-9], [0.7, 0.0, 1e-9], [2.0, 5.0, 1e-9]])
        expected = REFERENCE.kernel("fdm_apply", size=m, dim=2)(r, np.empty_like(r), sx, sy, None, lam, coef)
        out = np.full_like(r, np.nan)
        lib.run(m, r.ctypes.data, out.ctypes.data, sx.ctypes.data, sy.ctypes.data, lam.ctypes.data,
                coef.ctypes.data, E)
        assert np.abs(out - expected).max() <= 1e-13 * np.abs(expected).max()
        reference = REFERENCE.kernel("ext_layers", size=m, dim=2)
        for mode in range(4):
            z = rng.standard_normal((E, 1, m, m))
            saved = rng.standard_normal((E, 4, 1, m - 2))
            z_ref, saved_ref = z.copy(), saved.copy()
            reference(z_ref, saved_ref, mode)
            lib.move(m, z.ctypes.data, saved.ctypes.data, mode, E)
            assert np.array_equal(z, z_ref) and np.array_equal(saved, saved_ref), mode


# Poisson ----------------------------------------------------------------------------------------

U2 = "sin(pi*x)*sin(pi*y)"
#: curves every element of the unit square; each side stays on its line (the x displacement
#: vanishes on the x sides, the y one on the y sides)
IN_PLANE = {"x": "0.1*sin(pi*x)*sin(pi*y)", "y": "0.08*sin(pi*y)*sin(2*pi*x)"}
#: u = sin(pi x) sin(pi y): u = 0 on xmin and ymin, k du/dn on xmax and ymax
MIXED = {"xmin": {"value": "0"}, "ymin": {"value": U2}, "xmax": {"flux": "-pi*sin(pi*y)"},
         "ymax": {"flux": "-pi*sin(pi*x)"}}


def poisson_case(order, physics, boundary, solver, elements=(3, 2), deform=IN_PLANE, depth=None, name="p2"):
    """A Poisson case on the unit square: [mesh] as the 3-D schema takes it (one element along
    z: the case2d helper adds 2-entry boxes); ``depth``: the extruded twin's case (z in
    [-1, 1], periodic z)."""
    from lobatto.api import case_from_dict

    mesh = {"elements": [*elements, 1], "lower": [0, 0, -1 if depth else 0], "upper": [1, 1, 1 if depth else 1]}
    if depth:
        mesh["periodic"] = [False, False, True]
    if deform:
        mesh["deform"] = deform
    data = {"physics": {"equations": "poisson", **physics}, "mesh": mesh, "discretization": {"order": order},
            "boundary": boundary, "solver": solver}
    return case_from_dict(data, name)


def solve_2d(case, backend="cpu", comm=None):
    """(system, u (E, 1, n, n) host): the Poisson system `lobatto run` builds (from_case), on the
    case's box made 2-D (its first two counts)."""
    from lobatto.backends import get_backend
    from lobatto.runner.build import deformation_from_expressions
    from lobatto.systems.poisson.system import PoissonSystem

    m = case.mesh
    mesh = box_mesh(tuple(m.elements[:2]), m.lower[:2], m.upper[:2], deform=deformation_from_expressions(m.deform))
    geometry = compute_geometry(mesh, case.discretization.order)
    backend = get_backend(backend)
    system = PoissonSystem.from_case(case, mesh.halo_last(), geometry, backend, comm)
    u = backend.to_host(system.solve())[0]
    return system, u


def test_poisson_2d_converges_exponentially_in_n():
    """-lap u = 2 pi^2 u, u = sin(pi x) sin(pi y), on curved quads with two Dirichlet and two
    Neumann sides: the nodal error falls by e^2 per order on average (measured in the notes)."""
    errors = []
    for order in range(2, 9):
        system, u = solve_2d(poisson_case(order, {"f": f"2*pi**2*{U2}"}, MIXED, {"tolerance": 1e-13}))
        assert system.result.converged and u.shape == (6, 1, order + 1, order + 1)
        x, y = system.geometry.coords[:2]
        errors.append(np.abs(u - np.sin(np.pi * x) * np.sin(np.pi * y)).max())
    rates = -np.diff(np.log(errors))
    assert np.all(rates > 1.0) and rates.mean() > 1.7, (errors, rates)
    assert errors[-1] < 1e-6


def test_poisson_2d_polynomial_of_degree_n_is_reproduced():
    """A polynomial of degree 4 at N = 4 on affine quads, Dirichlet and Neumann sides, variable
    k: the discrete solution is the polynomial to round-off."""
    u = "1 + 2*x - y + x*y - 3*x**2*y + 0.25*y**4 - x**3*y"
    ux, uy = "(2 + y - 6*x*y - 3*x**2*y)", "(-1 + x - 3*x**2 + y**3 - x**3)"
    # -div(k grad u) with k = 2 + x: -(k u_xx + u_x) - k u_yy
    f = f"-((2 + x)*(-6*y - 6*x*y) + {ux}) - (2 + x)*(3*y**2)"
    boundary = {"xmin": {"value": u}, "ymin": {"value": u}, "xmax": {"flux": f"(2 + x)*{ux}"},
                "ymax": {"flux": f"(2 + x)*{uy}"}}
    system, got = solve_2d(poisson_case(4, {"f": f, "k": "2 + x"}, boundary, {"tolerance": 1e-14}, deform=None))
    x, y = system.geometry.coords[:2]
    exact = 1 + 2 * x - y + x * y - 3 * x**2 * y + 0.25 * y**4 - x**3 * y
    assert np.abs(got - exact).max() < 1e-11 * np.abs(exact).max()


VARIABLE = {"f": "sin(pi*x)*cos(y) + x*y", "k": "1 + 0.5*x*y", "h": "1 + x**2"}
BOUNDARY = {"xmin": {"value": "0.3*y"}, "ymin": {"value": "0.3*x*x"}, "xmax": {"flux": "cos(y)"},
            "ymax": {"flux": "x"}}


@pytest.mark.parametrize("solver", [
    {}, {"smoother": "schwarz"}, {"method": "cg", "preconditioner": "jacobi"}, {"coarse": "amg"},
    {"precision": "float32"}, {"method": "gmres", "coarse": "pcg", "levels": [5, 2]},
])
def test_poisson_2d_equals_the_extruded_run(solver):
    """The 2-D solution equals every k plane of the extruded run's (variable k and h, curved
    quads, Dirichlet and Neumann sides) to 1e-11 at solver tolerance 1e-14."""
    from lobatto.backends import get_backend
    from lobatto.runner.build import build_system

    settings = {"tolerance": 1e-14, **solver}
    system, u2 = solve_2d(poisson_case(5, VARIABLE, BOUNDARY, settings))
    assert system.result.converged
    solid = build_system(poisson_case(5, VARIABLE, BOUNDARY, settings, depth=2), get_backend("cpu"))
    u3 = solid.solve()[0]
    assert solid.mesh.num_elements == 6 and u3.shape == (6, 6, 6, 6)
    assert np.abs(u3 - u2).max() <= 1e-11 * np.abs(u2).max()
    assert system.points == 6 * 36 and system.unknowns == solid.unknowns // 5  # (nx N + 1)(ny N + 1) - fixed


def test_poisson_2d_refuses_a_z_side_table():
    from lobatto.errors import InputError

    with pytest.raises(InputError, match=r"\[boundary.zmin\].*sides of a 2-D box"):
        solve_2d(poisson_case(3, {"f": "1"}, {"xmin": {"value": "0"}, "zmin": {"flux": "1"}}, {}))


def test_the_2d_example_solves_to_its_exact_solution():
    """examples/2d/poisson.toml (2-entry [mesh] vectors: padded here to the 3-D schema's one
    element along z until the case-file route lands) through the 2-D system: the error
    measured 7.2e-10 at N = 6."""
    from pathlib import Path

    from lobatto.api import case_from_dict
    from lobatto.config.schema import tomllib

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "examples" / "2d" / "poisson.toml").read_text())
    assert len(data["mesh"]["elements"]) == 2 and len(data["mesh"]["upper"]) == 2
    data["mesh"]["elements"] = [*data["mesh"]["elements"], 1]
    data["mesh"]["upper"] = [*data["mesh"]["upper"], 1.0]
    data.pop("output")
    data.pop("exact")
    system, u = solve_2d(case_from_dict(data, "example"))
    x, y = system.geometry.coords[:2]
    assert system.result.converged and np.abs(u - (np.exp(x) * np.sin(y) + y**2)).max() < 1e-8


# Solvers around the operator: projection, a singular problem, the memory model -------------------

def test_projection_and_a_pure_neumann_problem_in_2d():
    """EllipticSolver on quads: the projection onto a previous solution solves a repeated b
    at once; a fully periodic 2-D problem (h = 0: the constants are the null space) converges
    with the Schwarz smoother and returns a zero-mean solution."""
    from lobatto.solvers.elliptic import EllipticSolver

    order = 4
    mesh = box_mesh((3, 3), deform=deform_xy)
    dirichlet = mesh.face_neighbour < 0
    geometry = compute_geometry(mesh, order)
    level = Level.build(mesh, order, REFERENCE, dirichlet=dirichlet, geometry=geometry)
    x, y = geometry.coords[:2]
    b = level.assembly.dssum(geometry.mass * (1 + x * y)) * level.mask
    solver = EllipticSolver(mesh, level, {"projection": 2, "tolerance": 1e-10}, REFERENCE, None, dirichlet, 1.0, 0.0)
    first, again = solver.solve(b), solver.solve(b)
    assert first.converged and first.iterations > 3 and again.iterations <= 1
    assert np.abs(again.x - first.x).max() <= 1e-9 * np.abs(first.x).max()

    periodic = box_mesh((3, 2), periodic=(True, True))
    geometry = compute_geometry(periodic, order)
    level = Level.build(periodic, order, REFERENCE, geometry=geometry)
    x, y = geometry.coords[:2]
    b = level.assembly.dssum(geometry.mass * np.sin(2 * np.pi * x) * np.cos(2 * np.pi * y))
    solver = EllipticSolver(periodic, level, {"smoother": "schwarz", "tolerance": 1e-10}, REFERENCE, None,
                            periodic.face_neighbour < 0, 1.0, 0.0, null_space=True)
    result = solver.solve(b)
    exact = np.sin(2 * np.pi * x) * np.cos(2 * np.pi * y) / (8 * np.pi**2)
    assert result.converged and result.iterations < 20
    assert abs(level.dot(result.x, level.assembly.dssum(geometry.mass.copy()))) < 1e-12
    assert np.abs(result.x - exact).max() < 1e-3 * np.abs(exact).max()


def test_memory_model_counts_n_to_the_dim():
    """The multigrid levels and the Schwarz arrays of a 2-D layout ((N+1)^2 and (N+3)^2 per
    element): RunLayout.dim where the layout has it (machine/, added for 2-D elsewhere)."""
    from dataclasses import dataclass

    import lobatto
    from lobatto.machine.memory_items import RunLayout
    from lobatto.solvers.settings import LEVEL_ARRAYS, SCHWARZ_EXT_ARRAYS, elliptic_memory

    @dataclass(frozen=True)
    class Flat(RunLayout):
        dim: int = 2

    case = lobatto.case_from_dict({"physics": {"equations": "poisson"}, "mesh": {"elements": [10, 10, 10]},
                                   "solver": {"smoother": "schwarz"}})
    items = elliptic_memory(case.tables["solver"], Flat(elements=100, total_elements=100, order=3, fields=1), "solver")
    levels = [i for i in items if "levels" in i.what]
    schwarz = [i for i in items if "schwarz" in i.what]
    assert levels[0].host == LEVEL_ARRAYS * 100 * 2**2 * 8  # 3 -> 1: the order-1 level
    assert schwarz[0].host == pytest.approx(100 * (SCHWARZ_EXT_ARRAYS * 36 + 2 * 36 + 16) * 8)
