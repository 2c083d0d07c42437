"""CUDA backend against the NumPy reference (the oracle), on fresh random data.

Skipped, with the reason, where CuPy or a CUDA device is missing. Kept quick (well under two
minutes on an H100 with a warm kernel cache; the first run compiles 15 orders through NVRTC).
"""

from __future__ import annotations

import numpy as np
import pytest

from analytic import CAVITY_TM110, bump
from lobatto.backends import cuda_available

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

if OK:
    import cupy

from lobatto.backends.base import REFERENCE_KERNELS
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import derivative_matrix
from lobatto.integrators import Stepper, get_scheme, plan_steps, stable_time_step
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.systems.maxwell import reference  # noqa: F401  (registers the reference kernels)
from lobatto.systems.maxwell.system import MaxwellSystem

PI = np.pi
TOL64 = 1e-13
TOL32 = 2e-5


def rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert np.all(np.isfinite(a)), "non-finite output (unwritten or NaN)"
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _deform(kind):
    if kind == "curved":
        return lambda x, y, z: (
            0.03 * np.sin(PI * x) * np.sin(PI * y) * np.sin(PI * z),
            0.02 * np.sin(2 * PI * x) * np.sin(PI * y) * np.sin(PI * z),
            0.02 * np.cos(PI * x) * np.sin(PI * y) * np.sin(PI * z),
        )
    if kind == "mixed":  # elements with x < 1/2 stay affine, the others are curved

        def deform(x, y, z):
            s = np.where(x > 0.5, 0.05 * np.sin(2 * PI * x) * np.sin(PI * y) * np.sin(PI * z), 0.0)
            return s, s, 0.0 * x

        return deform
    return None


def host_geometry(order, elements, kind, rng):
    mesh = box_mesh((elements, 1, 1), deform=_deform(kind))
    g = compute_geometry(mesh, order)
    if kind == "affine":
        assert g.affine.all()
    return {
        "derivative": derivative_matrix(order),
        "metrics": np.ascontiguousarray(g.metrics),
        "jacobian": g.jacobian,
        "normals": g.normals,
        "lift": g.lift,
        "face_factors": rng.choice([0.0, 1.0, 2.0], size=(2, elements, 6)),
        "affine": g.affine.astype(np.int8),
        "mass": g.mass,
    }


def to_device(backend, host):
    return {k: backend.asarray(v, dtype=np.int8 if k == "affine" else None) for k, v in host.items()}


CASES = [(1, "curved"), (5, "affine"), (4, "mixed")]


@pytest.fixture(scope="module")
def backends():
    from lobatto.backends.cuda.backend import CudaBackend

    return {"float64": CudaBackend("float64"), "float32": CudaBackend("float32"), "ref": NumpyBackend()}


@pytest.mark.parametrize("order", list(range(1, 16)))
def test_kernels_match_reference(order, backends):
    """traces, rhs and the fused stage (a = 0 and a != 0) on random data, float64, rel <= 1e-13."""
    rng = np.random.default_rng(1000 + order)
    gpu, ref = backends["float64"], backends["ref"]
    n = order + 1
    extra = [(70, "affine")] if order <= 2 else []  # several small elements per block, last block partial
    for elements, kind in CASES + extra:
        hg = host_geometry(order, elements, kind, rng)
        dg = to_device(gpu, hg)
        u = rng.standard_normal((6, elements, n, n, n))
        sums = rng.standard_normal((6, elements, 6, n, n))
        du = gpu.asarray(u)
        dsums = gpu.asarray(sums)

        t_ref = REFERENCE_KERNELS["maxwell_traces"](ref, order=order)(u, hg["normals"], np.empty_like(sums))
        out = cupy.full(sums.shape, np.nan)
        gpu.kernel("maxwell_traces", order=order)(du, dg["normals"], out)
        assert rel(cupy.asnumpy(out), t_ref) <= TOL64, (elements, kind)

        for alpha in (0.0, 1.0):
            eps, mu = rng.uniform(0.5, 3.0), rng.uniform(0.5, 3.0)
            r_ref = REFERENCE_KERNELS["maxwell_rhs"](ref, order=order)(u, sums, hg, np.empty_like(u), eps, mu, alpha)
            out = cupy.full(u.shape, np.nan)
            gpu.kernel("maxwell_rhs", order=order)(du, dsums, dg, out, eps, mu, alpha)
            assert rel(cupy.asnumpy(out), r_ref) <= TOL64, (elements, kind, alpha)

            stage = gpu.kernel("maxwell_stage", order=order)
            for a in (0.0, rng.uniform(-1.5, -0.3)):
                b, dt = rng.uniform(0.1, 0.9), rng.uniform(1e-3, 1e-1)
                res = rng.standard_normal(u.shape)
                res_ref = a * res + dt * r_ref
                u_ref = u + b * res_ref
                du2, dres = gpu.asarray(u), gpu.asarray(res)
                stage(du2, dres, dsums, dg, eps, mu, alpha, a, b, dt)
                assert rel(cupy.asnumpy(dres), res_ref) <= TOL64, (elements, kind, alpha, a)
                assert rel(cupy.asnumpy(du2), u_ref) <= TOL64, (elements, kind, alpha, a)


@pytest.mark.parametrize("order", [1, 4, 7, 14])
@pytest.mark.parametrize("face_phase", [0, 1])
def test_face_paths_match_reference(order, face_phase):
    """Both ways of doing the face terms (kernels/maxwell.cu: FP) and a second launch shape."""
    from lobatto.backends.cuda.backend import CudaBackend
    from lobatto.systems.maxwell.cuda import default_launch

    gpu, ref = CudaBackend("float64"), NumpyBackend()
    cfg = default_launch(order, np.float64, gpu.max_shared_per_block)
    gpu.launch_overrides[(order, "float64")] = (cfg.elements_per_block, 2 * cfg.threads if cfg.threads < 512 else 256, 0, face_phase)
    rng = np.random.default_rng(3000 + order)
    n = order + 1
    for elements, kind in CASES:
        hg = host_geometry(order, elements, kind, rng)
        dg = to_device(gpu, hg)
        u = rng.standard_normal((6, elements, n, n, n))
        sums = rng.standard_normal((6, elements, 6, n, n))
        r_ref = REFERENCE_KERNELS["maxwell_rhs"](ref, order=order)(u, sums, hg, np.empty_like(u), 1.7, 0.6, 1.0)
        out = cupy.full(u.shape, np.nan)
        gpu.kernel("maxwell_rhs", order=order)(gpu.asarray(u), gpu.asarray(sums), dg, out, 1.7, 0.6, 1.0)
        assert rel(cupy.asnumpy(out), r_ref) <= TOL64, (elements, kind)
        res = rng.standard_normal(u.shape)
        du, dres = gpu.asarray(u), gpu.asarray(res)
        gpu.kernel("maxwell_stage", order=order)(du, dres, gpu.asarray(sums), dg, 1.7, 0.6, 1.0, -0.7, 0.4, 0.01)
        assert rel(cupy.asnumpy(dres), -0.7 * res + 0.01 * r_ref) <= TOL64
        assert rel(cupy.asnumpy(du), u + 0.4 * (-0.7 * res + 0.01 * r_ref)) <= TOL64


@pytest.mark.parametrize("order", [1, 7, 14])
def test_element_ranges_match_reference(order, backends):
    """rhs and stage on elements [first, stop) (blocks of several elements at N=1, one at 14):
    the reference's values there, every other element untouched."""
    rng = np.random.default_rng(4000 + order)
    gpu, ref = backends["float64"], backends["ref"]
    n, E = order + 1, 70 if order == 1 else 5
    hg = host_geometry(order, E, "mixed", rng)
    dg = to_device(gpu, hg)
    u = rng.standard_normal((6, E, n, n, n))
    sums = rng.standard_normal((6, E, 6, n, n))
    res = rng.standard_normal(u.shape)
    r_ref = REFERENCE_KERNELS["maxwell_rhs"](ref, order=order)(u, sums, hg, np.empty_like(u), 1.3, 0.7, 1.0)
    ranges = [(0, 37), (37, 70), (5, 6)] if E == 70 else [(0, 2), (2, 5), (4, 4)]
    for first, stop in ranges:
        inside = np.zeros(E, bool)
        inside[first:stop] = True
        out = cupy.full(u.shape, np.nan)
        gpu.kernel("maxwell_rhs", order=order)(gpu.asarray(u), gpu.asarray(sums), dg, out, 1.3, 0.7, 1.0, (first, stop))
        out = cupy.asnumpy(out)
        assert np.all(np.isnan(out[:, ~inside]))
        du, dres = gpu.asarray(u), gpu.asarray(res)
        gpu.kernel("maxwell_stage", order=order)(du, dres, gpu.asarray(sums), dg, 1.3, 0.7, 1.0, -0.6, 0.4, 0.02,
                                                 (first, stop))
        du, dres = cupy.asnumpy(du), cupy.asnumpy(dres)
        assert np.array_equal(du[:, ~inside], u[:, ~inside]) and np.array_equal(dres[:, ~inside], res[:, ~inside])
        if stop > first:
            res_ref = -0.6 * res[:, inside] + 0.02 * r_ref[:, inside]
            assert rel(out[:, inside], r_ref[:, inside]) <= TOL64
            assert rel(dres[:, inside], res_ref) <= TOL64
            assert rel(du[:, inside], u[:, inside] + 0.4 * res_ref) <= TOL64


@pytest.mark.parametrize("order", [1, 3, 7, 14])
def test_kernels_float32(order, backends):
    rng = np.random.default_rng(2000 + order)
    gpu, ref = backends["float32"], backends["ref"]
    n = order + 1
    for elements, kind in CASES:
        hg = host_geometry(order, elements, kind, rng)
        dg = to_device(gpu, hg)
        u = rng.standard_normal((6, elements, n, n, n))
        sums = rng.standard_normal((6, elements, 6, n, n))
        r_ref = REFERENCE_KERNELS["maxwell_rhs"](ref, order=order)(u, sums, hg, np.empty_like(u), 1.3, 0.7, 1.0)
        out = cupy.full(u.shape, np.nan, dtype=np.float32)
        gpu.kernel("maxwell_rhs", order=order)(gpu.asarray(u), gpu.asarray(sums), dg, out, 1.3, 0.7, 1.0)
        assert out.dtype == np.float32
        assert rel(cupy.asnumpy(out), r_ref) <= TOL32 * order, (elements, kind)


# Gather-scatter on the device --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_gather_scatter_device_matches_host(dtype, op):
    from lobatto.comm import GatherScatter

    rng = np.random.default_rng(7)
    ids = rng.integers(0, 200, size=1000)  # ids 0 do not participate
    for vn in (1, 3):
        if np.dtype(dtype).kind == "f":
            u = rng.uniform(0.5, 1.5, size=(vn, ids.size)).astype(dtype)
        else:
            u = rng.integers(-3, 4, size=(vn, ids.size)).astype(dtype)
        host = u.copy()
        GatherScatter(ids).apply(host if vn > 1 else host[0], op)
        dev = cupy.asarray(u)
        GatherScatter(ids).apply(dev if vn > 1 else dev[0], op)
        got = cupy.asnumpy(dev)
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, host, rtol=1e-5 if dtype == np.float32 else 1e-13)
        else:
            np.testing.assert_array_equal(got, host)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_device_combine_matches_gather_scatter(dtype, op):
    """local_cuda.compiled_combine: the one-pass serial exchange equals take + gather + scatter."""
    from lobatto.comm import GatherScatter, local_cuda

    rng = np.random.default_rng(11)
    ids = rng.integers(0, 300, size=2000)
    u = rng.uniform(0.5, 1.5, size=(6, ids.size)).astype(dtype)
    host = u.copy()
    gs = GatherScatter(ids)
    gs.apply(host, op)
    dev = cupy.asarray(u)
    idx = gs._index(local_cuda)
    local_cuda.compiled_combine(dtype)(dev, idx["perm"], idx["starts"], op)
    np.testing.assert_allclose(cupy.asnumpy(dev), host, rtol=1e-5 if dtype == np.float32 else 1e-14)


def test_gather_scatter_no_host_transfer_after_setup():
    """After the first apply, an apply records into a CUDA graph: no host sync, no allocation."""
    from lobatto.comm import GatherScatter

    ids = np.random.default_rng(3).integers(1, 50, size=500)
    host = np.random.default_rng(4).standard_normal((6, 500))
    expect = host.copy()
    GatherScatter(ids).apply(expect, "sum")
    gs = GatherScatter(ids)
    original = cupy.asarray(host)
    u = original.copy()
    gs.apply(u, "sum")  # set-up: index arrays, kernels, result buffers
    u[...] = original
    pool = cupy.get_default_memory_pool()
    used = pool.used_bytes()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        gs.apply(u, "sum")
        graph = stream.end_capture()
    assert pool.used_bytes() == used
    graph.launch(stream=stream)
    stream.synchronize()
    np.testing.assert_allclose(cupy.asnumpy(u), expect, rtol=1e-14, atol=1e-14)


# The solver ----------------------------------------------------------------------------------------
def cavity(backend, order=5, deform=None, t_end=0.1, scheme="lsrk45", graph=False):
    mesh = box_mesh((2, 2, 2), deform=deform)
    system = MaxwellSystem(mesh, order, backend)
    u = backend.asarray(system.evaluate_fields(CAVITY_TM110, 0.0))
    stepper = Stepper(system, get_scheme(scheme))
    steps, dt = plan_steps(t_end, stable_time_step(0.4, system.geometry.min_spacing, system.wave_speed))
    step = backend.capture(lambda: stepper.step(u, 0.0, dt)) if graph else (lambda: stepper.step(u, 0.0, dt))
    for _ in range(steps):
        step()
    backend.synchronize()
    squares, _ = system.error_sums(u, system.evaluate_fields(CAVITY_TM110, t_end))
    return np.sqrt(squares.sum()), backend.to_host(u).astype(np.float64), step


@pytest.mark.parametrize("deform", [None, bump], ids=["straight", "curved"])
@pytest.mark.parametrize("scheme", ["lsrk45", "rk4"])
def test_cavity_matches_cpu(deform, scheme, backends):
    err_cpu, u_cpu, _ = cavity(backends["ref"], deform=deform, scheme=scheme)
    err_gpu, u_gpu, _ = cavity(backends["float64"], deform=deform, scheme=scheme)
    assert abs(err_gpu - err_cpu) <= 1e-9 * err_cpu
    assert np.max(np.abs(u_gpu - u_cpu)) <= 1e-12


def test_capture_veto_keeps_plain_calls(backends):
    """A step whose ``allowed()`` gives a reason is never recorded, and still advances."""
    backend = backends["float64"]
    calls = []
    u = backend.asarray(np.arange(4.0))
    step = backend.capture(lambda: (calls.append(1), u.__iadd__(1.0)), lambda: "kept plain for the test")
    for _ in range(4):
        step()
    assert not step.captured and step.fallback_reason == "kept plain for the test" and len(calls) == 4
    assert np.array_equal(backend.to_host(u), np.arange(4.0) + 4)


def test_cavity_float32(backends):
    from lobatto.backends.cuda.backend import CudaBackend

    err64, _, _ = cavity(backends["float64"], deform=bump)
    err32, _, _ = cavity(CudaBackend("float32"), deform=bump)
    print(f"curved cavity N=5 L2 error: float64 {err64:.3e}, float32 {err32:.3e}")
    assert err32 <= err64 + 1e-4


def test_graph_replay_equals_plain_stepping(backends):
    _, u_plain, _ = cavity(backends["float64"], deform=bump)
    _, u_graph, step = cavity(backends["float64"], deform=bump, graph=True)
    assert step.captured, step.fallback_reason
    np.testing.assert_array_equal(u_graph, u_plain)


def test_backend_basics():
    from lobatto.backends import get_backend
    from lobatto.backends.cuda.backend import CudaBackend

    be = get_backend("cuda", precision="float32", device_id=0)
    assert be.name == "cuda" and be.xp is cupy and be.device_id == 0
    a = be.asarray(np.arange(5.0))
    assert isinstance(a, cupy.ndarray) and a.dtype == np.float32
    h = be.to_host(a)
    assert isinstance(h, np.ndarray)
    h[0] = 42
    assert float(a[0]) == 0.0  # a copy
    with pytest.raises(ValueError):
        CudaBackend(device_id=cupy.cuda.runtime.getDeviceCount())
