"""Compiled CPU kernels (lobatto.systems.maxwell.cpu, lobatto.comm.local_c) against the NumPy reference kernels.

Tolerances (relative: max |c - ref| / max |ref|):
  float64: 1e-13. Geometry is either a deformed box (metrics differ at every point: the
    general path) or a box whose affine elements are made *exactly* constant (the affine
    path reads one metric tensor / face normal / lift per element, the reference reads every
    point, so the reference geometry must hold identical values for a like-for-like test).
    On a raw box mesh the reference's own metrics carry O(N^2 eps) round-off from the
    derivative matrix, so there the two agree to 1e-12 (test_raw_box_affine_path).
  float32: 2e-5 against the float64 reference on the same (float32-rounded) data: the
    operator's sums have O(N) terms with derivative weights O(N^2), so several float32
    epsilons (6e-8) of cancellation are expected at N = 14.
All libraries are compiled once per session, concurrently (prebuild), into the normal
kernel cache (LOBATTO_CACHE_DIR or ~/.cache/lobatto/cpu), so later sessions reuse them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from lobatto.comm.local_c import gs_kernels
from lobatto.jit import c as cbuild
from lobatto.systems.maxwell import cpu as maxwell_cpu
from lobatto.backends.cpu import CpuBackend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.system import MaxwellSystem

pytestmark = pytest.mark.skipif(not cbuild.available(), reason="no C compiler found (or LOBATTO_NO_CKERNELS set)")

ORDERS = list(range(1, 16))
ORDERS_F32 = [1, 4, 7, 14]
ELEMENTS = [(1, 1, 1), (3, 2, 1)]
TOL64 = 1e-13
TOL32 = 2e-5


@pytest.fixture(scope="module", autouse=True)
def compiled():
    """Compile every library this module needs once, in parallel."""
    if not cbuild.available():
        yield
        return
    specs = [maxwell_cpu.maxwell_spec(n, "float64") for n in ORDERS]
    specs += [maxwell_cpu.maxwell_spec(n, "float32") for n in ORDERS_F32]
    specs.append(("gs_local.c", {}))
    cbuild.prebuild(specs)
    cbuild.set_num_threads(2)  # exercise the OpenMP path (element split across threads)
    yield
    cbuild.set_num_threads(None)  # the next module in this worker runs on its share of the cores again


def deform(x, y, z):
    s = 0.06 * np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return (s, 0.5 * s + 0.03 * x * y, -s)


def affine_exact(geometry):
    """Make the affine elements' metrics, normals and lift exactly constant (element / face)."""
    g = dict(geometry)
    aff = np.asarray(g["affine"]).astype(bool)
    m, nr, lf = g["metrics"].copy(), g["normals"].copy(), g["lift"].copy()
    m[:, :, aff] = m[:, :, aff, :1, :1, :1]
    nr[:, aff] = nr[:, aff, :, :1, :1]
    lf[aff] = lf[aff, :, :1, :1]
    g.update(metrics=m, normals=nr, lift=lf)
    return g


def relerr(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - b)) / np.max(np.abs(b)))


def case(order, elements, deformed, seed):
    mesh = box_mesh(elements, deform=deform if deformed else None)
    system = MaxwellSystem(mesh, order, NumpyBackend())
    geometry = system.device_geometry
    if deformed:
        assert not np.any(geometry["affine"])
    else:
        assert np.all(geometry["affine"])
        geometry = affine_exact(geometry)
    rng = np.random.default_rng(seed)
    E, n = system.num_elements, order + 1
    # random ghost factors too (interior and boundary kinds alike)
    geometry = dict(geometry, face_factors=rng.uniform(-1.0, 2.0, (2, E, 6)))
    u = rng.standard_normal((6, E, n, n, n))
    sums = rng.standard_normal((6, E, 6, n, n))
    eps, mu = rng.uniform(0.5, 3.0, 2)
    return system, geometry, u, sums, float(eps), float(mu)


def reference(order):
    ref = NumpyBackend()
    return ref.kernel("maxwell_traces", order=order), ref.kernel("maxwell_rhs", order=order), maxwell_cpu.reference_stage(ref, order)


@pytest.mark.parametrize("elements", ELEMENTS)
@pytest.mark.parametrize("order", ORDERS)
def test_float64_against_reference(order, elements):
    k = maxwell_cpu.maxwell_kernels(order, "float64")
    assert k is not None, cbuild.error(*maxwell_cpu.maxwell_spec(order, "float64"))
    r_traces, r_rhs, r_stage = reference(order)
    for deformed in (True, False):
        _system, g, u, sums, eps, mu = case(order, elements, deformed, seed=order * 7 + len(elements))
        t0, t1 = np.empty_like(sums), np.full_like(sums, np.nan)
        r_traces(u, g["normals"], t0)
        k["maxwell_traces"](u, g["normals"], t1)
        assert relerr(t1, t0) <= TOL64
        for alpha in (0.0, 1.0):
            o0, o1 = np.empty_like(u), np.full_like(u, np.nan)
            r_rhs(u, sums, g, o0, eps, mu, alpha)
            k["maxwell_rhs"](u, sums, g, o1, eps, mu, alpha)
            assert relerr(o1, o0) <= TOL64, (deformed, alpha)
            for a in (0.0, -0.48):  # a = 0: first lsrk45 stage (old residual discarded)
                rng = np.random.default_rng(1)
                res0 = rng.standard_normal(u.shape)
                res1, u0, u1 = res0.copy(), u.copy(), u.copy()
                r_stage(u0, res0, sums, g, eps, mu, alpha, a, 0.37, 0.013)
                k["maxwell_stage"](u1, res1, sums, g, eps, mu, alpha, a, 0.37, 0.013)
                assert relerr(res1, res0) <= TOL64, (deformed, alpha, a)
                assert relerr(u1, u0) <= TOL64, (deformed, alpha, a)


@pytest.mark.parametrize("order", [2, 7])
def test_element_ranges(order):
    """rhs and stage on elements [first, stop) equal the whole-mesh result there and leave
    every other element untouched (compiled and reference alike); two ranges make the whole."""
    k = maxwell_cpu.maxwell_kernels(order, "float64")
    _r_traces, r_rhs, r_stage = reference(order)
    _system, g, u, sums, eps, mu = case(order, (5, 2, 1), True, seed=order + 11)
    E = u.shape[1]
    rng = np.random.default_rng(order)
    whole_out = np.empty_like(u)
    r_rhs(u, sums, g, whole_out, eps, mu, 1.0)
    res_start = rng.standard_normal(u.shape)
    whole_u, whole_res = u.copy(), res_start.copy()
    r_stage(whole_u, whole_res, sums, g, eps, mu, 1.0, -0.4, 0.3, 0.02)
    for rhs, stage in ((r_rhs, r_stage), (k["maxwell_rhs"], k["maxwell_stage"])):
        for first, stop in ((0, 3), (3, E), (2, 2), (1, 4)):
            out = np.full_like(u, np.nan)
            rhs(u, sums, g, out, eps, mu, 1.0, (first, stop))
            inside = slice(first, stop)
            assert np.all(np.isnan(np.delete(out, np.s_[first:stop], axis=1)))
            if stop > first:
                assert relerr(out[:, inside], whole_out[:, inside]) <= TOL64
            uu, rr = u.copy(), res_start.copy()
            stage(uu, rr, sums, g, eps, mu, 1.0, -0.4, 0.3, 0.02, (first, stop))
            outside = np.ones(E, bool)
            outside[inside] = False
            assert np.array_equal(uu[:, outside], u[:, outside])
            assert np.array_equal(rr[:, outside], res_start[:, outside])
            if stop > first:
                assert relerr(uu[:, inside], whole_u[:, inside]) <= TOL64
                assert relerr(rr[:, inside], whole_res[:, inside]) <= TOL64
        with pytest.raises(ValueError, match="outside"):
            rhs(u, sums, g, np.empty_like(u), eps, mu, 1.0, (3, E + 1))


@pytest.mark.parametrize("order", ORDERS_F32)
def test_float32_against_float64_reference(order):
    k = maxwell_cpu.maxwell_kernels(order, "float32")
    assert k is not None
    r_traces, r_rhs, r_stage = reference(order)
    for deformed in (True, False):
        _system, g, u, sums, eps, mu = case(order, (2, 1, 1), deformed, seed=order)
        # the same data in both precisions: round to float32 first
        g32 = {key: np.asarray(v, np.int8 if key == "affine" else np.float32) for key, v in g.items()}
        g64 = {key: np.asarray(v, np.int8 if key == "affine" else np.float64) for key, v in g32.items()}
        u32, s32 = u.astype(np.float32), sums.astype(np.float32)
        u64, s64 = u32.astype(np.float64), s32.astype(np.float64)
        t0, t1 = np.empty_like(s64), np.empty_like(s32)
        r_traces(u64, g64["normals"], t0)
        k["maxwell_traces"](u32, g32["normals"], t1)
        assert relerr(t1, t0) <= TOL32
        for alpha in (0.0, 1.0):
            o0, o1 = np.empty_like(u64), np.empty_like(u32)
            r_rhs(u64, s64, g64, o0, eps, mu, alpha)
            k["maxwell_rhs"](u32, s32, g32, o1, eps, mu, alpha)
            assert relerr(o1, o0) <= TOL32
            res0, res1 = np.ones_like(u64), np.ones_like(u32)
            v0, v1 = u64.copy(), u32.copy()
            r_stage(v0, res0, s64, g64, eps, mu, alpha, -0.5, 0.3, 0.01)
            k["maxwell_stage"](v1, res1, s32, g32, eps, mu, alpha, -0.5, 0.3, 0.01)
            assert relerr(res1, res0) <= TOL32
            assert relerr(v1, v0) <= TOL32


@pytest.mark.parametrize("order", [3, 14])
def test_raw_box_affine_path(order):
    """On an unmodified box mesh, the affine shortcut agrees with the per-point reference to 1e-12."""
    system = MaxwellSystem(box_mesh((2, 2, 1)), order, NumpyBackend())
    g = system.device_geometry
    rng = np.random.default_rng(3)
    u = rng.standard_normal((6, 4) + (order + 1,) * 3)
    sums = rng.standard_normal((6, 4, 6, order + 1, order + 1))
    o0, o1 = np.empty_like(u), np.empty_like(u)
    reference(order)[1](u, sums, g, o0, 1.0, 1.0, 1.0)
    maxwell_cpu.maxwell_kernels(order)["maxwell_rhs"](u, sums, g, o1, 1.0, 1.0, 1.0)
    assert relerr(o1, o0) <= 1e-12


def test_backend_registration_and_stepping():
    """CpuBackend hands out the compiled kernels, and whole steps match the reference stepping."""
    from lobatto.integrators import Stepper, get_scheme

    order = 4
    backend = CpuBackend()
    assert backend.has_tuned("maxwell_stage")
    k = maxwell_cpu.maxwell_kernels(order)
    for name in ("maxwell_traces", "maxwell_rhs", "maxwell_stage"):
        assert backend.kernel(name, order=order).__qualname__ == k[name].__qualname__
    mesh = box_mesh((2, 2, 2), periodic=(True, False, True), deform=deform)
    states = []
    for be in (NumpyBackend(), backend):
        system = MaxwellSystem(mesh, order, be, epsilon=1.5, mu=0.8)
        assert (system.stage_kernel is not None) == (be is backend)
        u = np.random.default_rng(5).standard_normal((6, 8) + (order + 1,) * 3)
        stepper = Stepper(system, get_scheme("lsrk45"))
        for _ in range(3):
            stepper.step(u, 0.0, 1e-3)
        states.append(u)
    assert relerr(states[1], states[0]) <= 1e-13


def test_wrong_arrays_are_refused():
    k = maxwell_cpu.maxwell_kernels(2)
    u = np.zeros((6, 1, 3, 3, 3))
    with pytest.raises(TypeError):
        k["maxwell_traces"](u[:, :, ::-1], np.zeros((3, 1, 6, 3, 3)), np.zeros((6, 1, 6, 3, 3)))
    with pytest.raises(TypeError):
        k["maxwell_traces"](u.astype(np.float32), np.zeros((3, 1, 6, 3, 3)), np.zeros((6, 1, 6, 3, 3)))


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_gs_kernels_against_gather_scatter(op):
    from lobatto.comm import GatherScatter
    from lobatto.mesh import face_point_ids

    ids = face_point_ids(box_mesh((3, 2, 2), periodic=(True, True, False)), 3).reshape(-1)
    gs = GatherScatter(ids)
    p = gs.plan
    k = gs_kernels("float64")
    x = np.random.default_rng(2).uniform(0.5, 1.5, (6, ids.size))
    y, z = x.copy(), x.copy()
    gs.apply(x, op)
    k["combine"](y, p.perm, p.starts, op)
    np.testing.assert_allclose(y, x, rtol=1e-15)
    compact = k["gather"](z, p.perm, p.starts, op)
    k["scatter"](compact, z, p.dest_local, p.src_local)
    np.testing.assert_allclose(z, x, rtol=1e-15)


def test_fallback_without_compiler(tmp_path):
    """No compiler: one warning, NumPy kernels, no fused stage, the solver still steps."""
    code = textwrap.dedent(
        """
        import warnings, numpy as np
        warnings.simplefilter("always")
        from lobatto.backends.cpu import CpuBackend
        from lobatto.mesh import box_mesh
        from lobatto.systems.maxwell.system import MaxwellSystem
        with warnings.catch_warnings(record=True) as w:
            be = CpuBackend()
            s = MaxwellSystem(box_mesh((1, 1, 1), periodic=(True,) * 3), 2, be)
            u = np.ones((6, 1, 3, 3, 3)); out = np.empty_like(u)
            s.rhs(u, 0.0, out)
            be.kernel("maxwell_traces", order=3)
        assert s.stage_kernel is None and not be.has_tuned("maxwell_stage")
        print("WARNINGS", len([x for x in w if "compiled CPU kernels" in str(x.message)]))
        """
    )
    env = dict(os.environ, CC=str(tmp_path / "no-such-cc"), LOBATTO_CACHE_DIR=str(tmp_path))
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(src), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "WARNINGS 1" in out.stdout, out.stdout
