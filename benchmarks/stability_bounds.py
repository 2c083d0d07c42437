"""Largest stable CFL number of each time integrator, from the spectrum of the DG operator.

``python benchmarks/stability_bounds.py [--orders 1-16] [--json PATH]``

lobatto steps with dt = cfl * h_min / c (``System.stable_time_step``), h_min being
``geometry.min_spacing`` (the smallest distance between neighbouring GLL points) and c the
wave speed. For each case (system, flux, boundary, mesh kind, order N) this script computes
the eigenvalues lambda of the semi-discrete operator L (du/dt = L u, ``system.rhs``) in the
scaled form mu = lambda * h_min / c, so that a step of size cfl multiplies the mode by
R(cfl * mu), with R the integrator's stability polynomial built from its Butcher form
(``butcher_form`` in integrators/tables.py): R(z) = sum_k (b^T A^(k-1) 1) z^k.

* Small operators (dofs <= --dense-max) are assembled column by column (``rhs`` applied to
  unit vectors) and all eigenvalues are taken with ``numpy.linalg.eigvals``.
* Larger ones use a thick-restarted Arnoldi iteration (numpy only) on ``rhs`` itself that
  keeps the Ritz values most restrictive for the three integrators (largest
  |mu| / rho_s(arg mu), rho_s the distance to the stability boundary along that ray);
  ``--cross-check`` orders run both and compare.

cfl_max is the largest cfl with max |R(cfl mu)| <= 1 + 1e-12 over every eigenvalue, found by
a scan in steps of 0.005 and bisection. On curved Maxwell meshes the operator has a few
slightly growing modes (Re mu > 0, small |mu|) that no time step can make stable; for the
bound their real part is clipped to 0 (the step must not amplify any mode more than a neutral
one), and the growth rate max Re(lambda) is reported separately.

``--timestep-check`` then runs lobatto's own Stepper from random fields at 0.98 and 1.02 x the
bound (affine worst cases) and reports the energy after a few hundred steps.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sys
import time

# One thread per process: the operators are small and the work is spread over processes.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from lobatto.backends import get_backend  # noqa: E402
from lobatto.integrators import Stepper, get_scheme  # noqa: E402
from lobatto.integrators.tables import RUNGE_KUTTA, SCHEMES, butcher_form  # noqa: E402
from lobatto.mesh import box_mesh  # noqa: E402
from lobatto.systems.acoustics.system import AcousticsSystem  # noqa: E402
from lobatto.systems.maxwell.system import MaxwellSystem  # noqa: E402

TOL = 1e-12
SYSTEMS = {"maxwell": MaxwellSystem, "acoustics": AcousticsSystem}
BOUNDARIES = {"maxwell": ("pec", "pmc", "absorbing", "periodic"), "acoustics": ("wall", "absorbing", "periodic")}
FLUXES = ("upwind", "central")
MESH_KINDS = ("affine", "curved", "sheared")


# Stability polynomials ------------------------------------------------------------------------
def stability_polynomial(scheme) -> np.ndarray:
    """Coefficients p_0..p_s of R(z) = 1 + z b^T (I - z A)^-1 1 = sum_k (b^T A^(k-1) 1) z^k."""
    a, b, _ = butcher_form(scheme)
    coeffs, v = [1.0], np.ones(len(b))
    for _ in range(len(b)):
        coeffs.append(float(b @ v))
        v = a @ v
    return np.array(coeffs)


POLYS = {name: stability_polynomial(SCHEMES[name]) for name in RUNGE_KUTTA}  # bdf* have no Butcher form


def amplification(p: np.ndarray, z: np.ndarray) -> np.ndarray:
    r = np.zeros_like(z)
    for coef in p[::-1]:
        r = r * z + coef
    return r


def clip(mu: np.ndarray) -> np.ndarray:
    """Growing modes counted as neutral: Re mu -> min(Re mu, 0)."""
    return np.minimum(mu.real, 0.0) + 1j * mu.imag


def excess(p, mu, cfl) -> float:
    return float(np.abs(amplification(p, cfl * mu)).max()) - 1.0


def cfl_limit(p, mu, step=0.005, cmax=10.0) -> float:
    """Largest cfl such that every cfl' <= cfl keeps max |R(cfl' mu)| <= 1 + TOL (mu clipped)."""
    mu = clip(np.asarray(mu, dtype=complex))
    cfl = step
    while cfl <= cmax and excess(p, mu, cfl) <= TOL:
        cfl += step
    lo, hi = cfl - step, cfl
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if excess(p, mu, mid) <= TOL:
            lo = mid
        else:
            hi = mid
    return lo


def binding(p, mu, cfl) -> complex:
    """The eigenvalue that leaves the stability region first (just above cfl)."""
    mu = clip(np.asarray(mu, dtype=complex))
    return complex(mu[np.argmax(np.abs(amplification(p, 1.0001 * cfl * mu)))])


_THETA = np.linspace(0.5 * np.pi, np.pi, 181)
RAY = {name: np.array([cfl_limit(p, np.array([np.exp(1j * t)]), step=0.01) for t in _THETA])
       for name, p in POLYS.items()}  # rho_s(theta): distance to the stability boundary on a ray


def restrictiveness(ev: np.ndarray) -> np.ndarray:
    """Arnoldi's sort keys, one row per integrator: |mu| / rho_s(arg mu) (larger binds first),
    and a last row |mu|."""
    theta = np.clip(np.abs(np.angle(clip(ev))), 0.5 * np.pi, np.pi)
    return np.array([np.abs(ev) / np.interp(theta, _THETA, RAY[s]) for s in RAY] + [np.abs(ev)])


# Cases ----------------------------------------------------------------------------------------
def deformation(kind: str, extent):
    if kind == "curved":  # the examples' interior bump, 10% of an element, zero on the box sides
        lx, ly, lz = extent

        def bump(x, y, z):
            b = 0.1 * np.sin(np.pi * x / lx) * np.sin(np.pi * y / ly) * np.sin(np.pi * z / lz)
            return b, b, 0.0 * b
        return bump
    if kind == "sheared":  # affine parallelepipeds (linear map, constant metrics)
        return lambda x, y, z: (0.5 * y, 0.0 * y, 0.3 * x)
    return None


def build(system: str, order: int, flux: str, boundary: str, mesh_kind: str, elements=(1, 1, 2), **params):
    """Cubic elements of side 1 (before deformation)."""
    keys = {"upper": tuple(float(e) for e in elements), "periodic": (boundary == "periodic",) * 3,
            "deform": deformation(mesh_kind, elements)}
    if boundary != "periodic":
        keys["boundary"] = boundary
    mesh = box_mesh(elements, **keys)
    return SYSTEMS[system](mesh, order, get_backend("cpu"), flux=flux, **params)


def operator(system):
    u = system.allocate_state()
    out = np.empty_like(u)

    def apply(x):
        system.rhs(x.reshape(u.shape), 0.0, out)
        return out.reshape(-1).copy()
    return apply, u.size


def dense_eigenvalues(system) -> np.ndarray:
    apply, n = operator(system)
    L = np.empty((n, n))
    e = np.zeros(n)
    for j in range(n):
        e[j] = 1.0
        L[:, j] = apply(e)
        e[j] = 0.0
    # guard: the assembled matrix reproduces rhs on a random vector
    x = np.random.default_rng(1).standard_normal(n)
    assert np.allclose(L @ x, apply(x), rtol=1e-10, atol=1e-10 * np.abs(L).max())
    return np.linalg.eigvals(L)


def arnoldi_eigenvalues(apply, n, k=15, m=80, tol=1e-6, max_cycles=40, seed=0, key=restrictiveness):
    """Thick-restarted Arnoldi: the Ritz values among the k largest by any row of ``key(ev)``,
    the largest relative residual among them, matvecs and restart cycles."""
    rng = np.random.default_rng(seed)
    V = np.zeros((m + 1, n))
    H = np.zeros((m + 1, m))
    v = rng.standard_normal(n)
    V[0] = v / np.linalg.norm(v)
    p, matvecs = 0, 0
    for cycle in range(1, max_cycles + 1):
        for j in range(p, m):  # extend A V[:j] = V[:j+1] H[:j+1, :j] by one column
            w = apply(V[j])
            matvecs += 1
            h = V[: j + 1] @ w
            w -= h @ V[: j + 1]
            h2 = V[: j + 1] @ w  # second Gram-Schmidt pass
            w -= h2 @ V[: j + 1]
            H[: j + 1, j] = h + h2
            beta = np.linalg.norm(w)
            H[j + 1, j] = beta
            V[j + 1] = w / beta
        ev, Y = np.linalg.eig(H[:m, :m])
        residual = np.abs(H[m, :m] @ Y) / np.abs(ev).max()
        wanted = set()
        for row in np.atleast_2d(key(ev)):  # the union of each key's top k
            wanted.update(np.argsort(-row)[:k].tolist())
        for i in list(wanted):  # with complex-conjugate partners
            if ev[i].imag != 0:
                wanted.add(int(np.argmin(np.abs(ev - np.conj(ev[i])))))
        wanted = np.array(sorted(wanted))
        if np.all(residual[wanted] <= tol) or cycle == max_cycles or wanted.size > m - 10:
            return ev[wanted], float(residual[wanted].max()), matvecs, cycle
        # restart from a real orthonormal basis Q of the wanted invariant subspace of H:
        # A (V Q) = (V Q)(Q^T H Q) + v_m (h_m^T Q)
        cols = []
        for i in wanted:
            if ev[i].imag >= 0:
                cols.append(Y[:, i].real)
                if ev[i].imag > 0:
                    cols.append(Y[:, i].imag)
        Q, _ = np.linalg.qr(np.array(cols).T)
        p = Q.shape[1]
        Hm, row, last = H[:m, :m].copy(), H[m, :m].copy(), V[m].copy()
        V[:p] = Q.T @ V[:m]
        V[p] = last
        V[p + 1:] = 0.0
        H[:] = 0.0
        H[:p, :p] = Q.T @ Hm @ Q
        H[p, :p] = row @ Q
    raise AssertionError("unreachable")


def analyse(case: dict, dense_max: int, arnoldi: dict, force: str | None = None) -> dict:
    t0 = time.perf_counter()
    params = case.get("params", {})
    system = build(case["system"], case["order"], case["flux"], case["boundary"], case["mesh"],
                   tuple(case["elements"]), **params)
    h, c = system.geometry.min_spacing, system.wave_speed
    apply, n = operator(system)
    method = force or ("dense" if n <= dense_max else "arnoldi")
    info = {}
    if method == "dense":
        ev = dense_eigenvalues(system)
    else:
        ev, res, matvecs, cycles = arnoldi_eigenvalues(apply, n, **arnoldi)
        info = {"arnoldi_residual": res, "matvecs": matvecs, "cycles": cycles, "ritz_values": int(ev.size)}
    mu = ev * h / c
    out = dict(case, dofs=n, method=method, min_spacing=h, wave_speed=c,
               max_abs_mu=float(np.abs(mu).max()), max_re_mu=float(mu.real.max()),
               growth_rate=float(ev.real.max()) if method == "dense" else None, **info)
    if method != "dense":  # Arnoldi sees only the outer spectrum: its max Re is not the operator's
        out["max_re_mu"] = None
    out["cfl_max"], out["binding_mu"] = {}, {}
    for name, p in POLYS.items():
        cfl = cfl_limit(p, mu)
        b = binding(p, mu, cfl)
        out["cfl_max"][name] = cfl
        out["binding_mu"][name] = [b.real, b.imag]
    out["seconds"] = time.perf_counter() - t0
    return out


# Bloch analysis ---------------------------------------------------------------------------------
def bloch_scan(system_name: str, order: int, flux: str, points: int) -> dict:
    """Infinite periodic lattice of affine unit cubes: L(k) = sum_s B_s exp(-i k.s) over the
    element and its six face neighbours (blocks read off a 3x3x3 periodic box), eigenvalues
    for k on a points^3 grid of [0, pi]^3 (sorted triples: the cube's symmetries). Returns,
    per integrator, the worst k and its cfl_max next to the worst over k in {0, pi}^3 (what
    a 2x2x2 periodic box samples)."""
    system = build(system_name, order, flux, "periodic", "affine", (3, 3, 3))
    u = system.allocate_state()
    out = np.empty_like(u)
    fields, n = u.shape[0], order + 1
    size = fields * n**3
    centre = 13  # element (1, 1, 1)
    offsets = [((e % 3) - 1, (e // 3) % 3 - 1, e // 9 - 1) for e in range(27)]
    blocks = {}
    for j in range(size):
        f, k, jj, i = np.unravel_index(j, (fields, n, n, n))
        u[:] = 0.0
        u[f, centre, k, jj, i] = 1.0
        system.rhs(u, 0.0, out)
        for e in range(27):
            column = out[:, e].reshape(-1)
            if np.any(column):
                blocks.setdefault(offsets[e], np.zeros((size, size)))[:, j] = column
    h, c = system.geometry.min_spacing, system.wave_speed
    grid = np.linspace(0.0, np.pi, points)
    rows = []
    for triple in itertools.combinations_with_replacement(range(points), 3):
        k = grid[list(triple)]
        Lk = sum(B * np.exp(-1j * np.dot(k, s)) for s, B in blocks.items())
        mu = np.linalg.eigvals(Lk) * h / c
        rows.append((k, {s: cfl_limit(p, mu) for s, p in POLYS.items()}))
    out_row = {"system": system_name, "order": order, "flux": flux, "grid_points": points, "k_points": len(rows)}
    for s in POLYS:
        worst = min(rows, key=lambda r: r[1][s])
        corner = min((r for r in rows if np.all(np.isclose(r[0], 0) | np.isclose(r[0], np.pi))), key=lambda r: r[1][s])
        out_row[s] = {"worst_k_over_pi": (worst[0] / np.pi).round(4).tolist(), "cfl_max": worst[1][s],
                      "cfl_max_k_in_0_pi": corner[1][s], "ratio": worst[1][s] / corner[1][s]}
    return out_row


# Time stepping --------------------------------------------------------------------------------
def timestep_run(case: dict, scheme: str, cfl: float, steps: int) -> dict:
    """lobatto's Stepper from random fields (seeded) for ``steps`` steps at this cfl."""
    system = build(case["system"], case["order"], case["flux"], case["boundary"], case["mesh"],
                   tuple(case["elements"]))
    u = system.backend.asarray(np.random.default_rng(7).standard_normal(system.allocate_state().shape))
    stepper = Stepper(system, get_scheme(scheme))
    dt = system.stable_time_step(cfl, system.geometry.min_spacing)
    e0 = system.energy(u)
    peak, half = 1.0, None
    for n in range(steps):
        if n == steps // 2:
            half = system.energy(u) / e0
        stepper.step(u, n * dt, dt)
        if not np.all(np.isfinite(u)):
            return {"cfl": cfl, "dt": dt, "steps": n + 1, "energy_ratio": float("inf"), "max_energy_ratio": float("inf")}
        if (n + 1) % 10 == 0:
            peak = max(peak, system.energy(u) / e0)
    ratio = system.energy(u) / e0
    return {"cfl": cfl, "dt": dt, "steps": steps, "t_end": steps * dt, "energy_ratio": ratio,
            "max_energy_ratio": max(peak, ratio), "energy_ratio_half_way": half}


# Driver ---------------------------------------------------------------------------------------
def parse_orders(text: str) -> list[int]:
    orders = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            orders += range(int(a), int(b) + 1)
        elif part:
            orders.append(int(part))
    return sorted(set(orders))


def floor_2sig(x: float) -> float:
    e = math.floor(math.log10(x)) - 1
    return round(math.floor(x / 10**e + 1e-9) * 10**e, 10)


def _work(job):
    kind, payload = job
    if kind == "eig":
        case, dense_max, arnoldi, force = payload
        return kind, analyse(case, dense_max, arnoldi, force)
    if kind == "bloch":
        return kind, bloch_scan(*payload)
    case, scheme, label, cfl, steps, extra = payload
    return kind, dict(timestep_run(case, scheme, cfl, steps), case=case, scheme=scheme, label=label, **extra)


def _key(job) -> str:
    return json.dumps(job, sort_keys=True, default=str)


def _keyed_work(job):
    return _key(job), _work(job)


def run_jobs(jobs, workers, cache=None):
    """Results of ``jobs`` (in completion order); with a cache file (JSON lines), jobs done by
    an earlier, interrupted run are read back instead of run again."""
    done = {}
    if cache and os.path.exists(cache):
        with open(cache) as f:
            for line in f:
                entry = json.loads(line)
                done[entry["key"]] = (entry["kind"], entry["result"])
    results = [done[_key(j)] for j in jobs if _key(j) in done]
    todo = [j for j in jobs if _key(j) not in done]
    if results:
        print(f"  {len(results)} jobs read from {cache}", flush=True)
    sink = open(cache, "a") if cache else None

    def record(key, r):
        results.append(r)
        if sink:
            sink.write(json.dumps({"key": key, "kind": r[0], "result": r[1]}) + "\n")
            sink.flush()
        _progress(len(results), len(jobs), r)
    if workers > 1 and len(todo) > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(workers) as pool:
            for key, r in pool.imap_unordered(_keyed_work, todo):
                record(key, r)
    else:
        for j in todo:
            record(*_keyed_work(j))
    if sink:
        sink.close()
    return results


def _progress(i, total, result):
    kind, r = result
    if kind == "eig":
        text = (f"{r['system']} {r['flux']} {r['boundary']} {r['mesh']} {'x'.join(map(str, r['elements']))} "
                f"N={r['order']} {r['method']} {r['seconds']:.1f}s")
    elif kind == "bloch":
        text = f"bloch {r['system']} {r['flux']} N={r['order']}"
    else:
        text = f"timestep {r['case']['system']} {r['case']['flux']} N={r['case']['order']} {r['scheme']} {r['label']}"
    print(f"  [{i}/{total}] {text}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", default="1-8,12,16", help="orders N, e.g. 1-16,20,24 (default 1-8,12,16)")
    ap.add_argument("--systems", default="maxwell,acoustics")
    ap.add_argument("--fluxes", default="upwind,central")
    ap.add_argument("--meshes", default="affine,curved",
                    help="affine, curved (interior bump), sheared (affine parallelepipeds; reported, not enforced)")
    ap.add_argument("--elements", default="2,2,2", help="box elements, unit cubes before deformation (default 2,2,2)")
    ap.add_argument("--all-boundaries-to", type=int, default=6,
                    help="above this order only the default wall (pec / wall) and periodic (default 6)")
    ap.add_argument("--curved-to", type=int, default=8, help="above this order no deformed meshes (default 8)")
    ap.add_argument("--dense-max", type=int, default=1000, help="largest operator for dense eigenvalues")
    ap.add_argument("--arnoldi-k", type=int, default=15, help="Ritz values kept per sort key")
    ap.add_argument("--arnoldi-m", type=int, default=80, help="Krylov basis size")
    ap.add_argument("--arnoldi-tol", type=float, default=1e-6, help="relative residual of the kept Ritz values")
    ap.add_argument("--cross-check", default="3", help="orders run both dense and by Arnoldi on 1x1x2 elements")
    ap.add_argument("--bloch", default="2,3", help="orders of the Bloch (infinite lattice) scan ('' none)")
    ap.add_argument("--bloch-points", type=int, default=5, help="k points per direction in [0, pi]")
    ap.add_argument("--timestep-check", default="3,6", help="orders for the time-stepping check ('' none)")
    ap.add_argument("--timestep-steps", type=int, default=400)
    ap.add_argument("--high-orders", default="", help="further orders run only for the upwind flux, affine "
                    "mesh, pec/wall and periodic boundaries (the binding cases), e.g. 20,24")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", metavar="PATH", help="JSON-lines file of finished jobs: an interrupted run resumes")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    started = time.time()

    orders = parse_orders(args.orders)
    elements = [int(e) for e in args.elements.split(",")]
    arnoldi = {"k": args.arnoldi_k, "m": args.arnoldi_m, "tol": args.arnoldi_tol}
    systems, fluxes, meshes = args.systems.split(","), args.fluxes.split(","), args.meshes.split(",")
    cases = []
    for system in systems:
        for N in orders:
            for flux in fluxes:
                for bc in BOUNDARIES[system]:
                    if N > args.all_boundaries_to and bc not in ("pec", "wall", "periodic"):
                        continue
                    for mesh in meshes:
                        if mesh != "affine" and N > args.curved_to:
                            continue
                        cases.append({"system": system, "order": N, "flux": flux, "boundary": bc,
                                      "mesh": mesh, "elements": elements})
    for system in systems:
        for N in parse_orders(args.high_orders):
            for bc in ("pec", "wall", "periodic"):
                if bc in BOUNDARIES[system] and "upwind" in fluxes:
                    cases.append({"system": system, "order": N, "flux": "upwind", "boundary": bc,
                                  "mesh": "affine", "elements": elements})
    orders = sorted(set(orders) | set(parse_orders(args.high_orders)))
    jobs = [("eig", (c, args.dense_max, arnoldi, None)) for c in cases]
    cross = parse_orders(args.cross_check)
    for N in cross:
        for system in systems:
            for flux in fluxes:
                for bc in BOUNDARIES[system]:
                    for mesh in meshes:
                        c = {"system": system, "order": N, "flux": flux, "boundary": bc, "mesh": mesh,
                             "elements": [1, 1, 2], "cross_check": True}
                        jobs += [("eig", (c, args.dense_max, arnoldi, "dense")), ("eig", (c, args.dense_max, arnoldi, "arnoldi"))]
    for N in parse_orders(args.bloch):
        for system in systems:
            for flux in fluxes:
                jobs.append(("bloch", (system, N, flux, args.bloch_points)))

    def cost(job):
        kind, p = job
        if kind == "bloch":
            return 40 * (p[1] + 1) ** 3
        c = p[0]
        return (c["order"] + 1) ** 3 * int(np.prod(c["elements"])) * (6 if c["system"] == "maxwell" else 4)
    jobs.sort(key=lambda j: -cost(j))
    print(f"{len(cases)} cases; {len(jobs)} jobs on {args.workers} processes", flush=True)
    results = run_jobs(jobs, args.workers, args.cache)

    rows = sorted((r for k, r in results if k == "eig" and not r.get("cross_check")),
                  key=lambda r: (r["system"], r["flux"], r["boundary"], r["mesh"], r["order"]))
    pairs = {}
    for k, r in results:
        if k == "eig" and r.get("cross_check"):
            pairs.setdefault((r["system"], r["flux"], r["boundary"], r["mesh"], r["order"]), {})[r["method"]] = r
    cross_rows = [{"case": list(t), "dense": p["dense"]["cfl_max"], "arnoldi": p["arnoldi"]["cfl_max"],
                   "max_rel_diff": max(abs(p["dense"]["cfl_max"][s] - p["arnoldi"]["cfl_max"][s]) / p["dense"]["cfl_max"][s]
                                       for s in POLYS)}
                  for t, p in sorted(pairs.items())]
    bloch_rows = sorted((r for k, r in results if k == "bloch"), key=lambda r: (r["system"], r["flux"], r["order"]))

    schemes = list(POLYS)
    enforced = [r for r in rows if r["mesh"] in ("affine", "curved")]
    summary = {}
    for s in schemes:
        worst = min(enforced, key=lambda r: r["cfl_max"][s])
        summary[s] = {"min_cfl_max": worst["cfl_max"][s], "recommended_bound": floor_2sig(worst["cfl_max"][s]),
                      "worst_case": {k: worst[k] for k in ("system", "flux", "boundary", "mesh", "order", "elements")},
                      "binding_mu": worst["binding_mu"][s], "by_system_flux": {}}
        for system in systems:
            for flux in fluxes:
                sel = [r for r in enforced if r["system"] == system and r["flux"] == flux]
                if sel:
                    w = min(sel, key=lambda r: r["cfl_max"][s])
                    summary[s]["by_system_flux"][f"{system}/{flux}"] = {
                        "min_cfl_max": w["cfl_max"][s], "worst_case": f"{w['boundary']} {w['mesh']} N={w['order']}"}
        sheared = [r for r in rows if r["mesh"] == "sheared"]
        if sheared:
            w = min(sheared, key=lambda r: r["cfl_max"][s])
            summary[s]["sheared_min_cfl_max"] = w["cfl_max"][s]
            summary[s]["sheared_worst_case"] = f"{w['system']} {w['flux']} {w['boundary']} N={w['order']}"

    # Time stepping: the worst affine case of each system/flux at the check orders, just below
    # and just above each integrator's cfl_max; one curved Maxwell case well below the bound.
    ts_jobs = []
    for N in parse_orders(args.timestep_check):
        for system in systems:
            for flux in fluxes:
                sel = [r for r in rows if r["system"] == system and r["flux"] == flux and r["order"] == N and r["mesh"] == "affine"]
                for s in schemes:
                    if not sel:
                        continue
                    r = min(sel, key=lambda r: r["cfl_max"][s])
                    case = {k: r[k] for k in ("system", "order", "flux", "boundary", "mesh", "elements")}
                    mu = clip(np.array([complex(*r["binding_mu"][s])]))
                    growth = float(np.abs(amplification(POLYS[s], 1.02 * r["cfl_max"][s] * mu)).max())
                    # enough steps for the binding mode to grow 1e6 times above the bound
                    steps = int(min(max(args.timestep_steps, math.ceil(math.log(1e6) / math.log(growth))), 5000))
                    for label, factor in (("below", 0.98), ("above", 1.02)):
                        ts_jobs.append(("step", (case, s, label, factor * r["cfl_max"][s], steps,
                                                 {"cfl_max": r["cfl_max"][s], "predicted_growth_per_step": growth})))
    dense_rows = [r for r in rows if r["method"] == "dense"] + [p["dense"] for p in pairs.values() if "dense" in p]
    curved = [r for r in dense_rows if r["system"] == "maxwell" and r["mesh"] == "curved" and r["order"] >= 2
              and r["max_re_mu"] is not None and r["max_re_mu"] > 1e-8]
    if curved and args.timestep_check:
        r = max(curved, key=lambda r: r["max_re_mu"])
        case = {k: r[k] for k in ("system", "order", "flux", "boundary", "mesh", "elements")}
        cfl = 0.5 * r["cfl_max"]["lsrk45"]
        dt = cfl * r["min_spacing"] / r["wave_speed"]
        steps = int(math.ceil(10.0 / (r["growth_rate"] * dt)))  # 10 e-foldings of the amplitude
        ts_jobs.append(("step", (case, "lsrk45", "curved_growth", cfl, min(steps, 20000),
                                 {"growth_rate": r["growth_rate"], "cfl_max": r["cfl_max"]["lsrk45"]})))
    ts_rows = [r for _, r in run_jobs(ts_jobs, args.workers, args.cache)] if ts_jobs else []
    for r in ts_rows:
        if r["label"] == "curved_growth" and np.isfinite(r["energy_ratio"]):
            # second half of the run, when the fastest growing mode dominates
            r["measured_energy_growth_rate"] = math.log(r["energy_ratio"] / r["energy_ratio_half_way"]) / (
                r["t_end"] - r["steps"] // 2 * r["dt"])
            r["predicted_energy_growth_rate"] = 2 * r["growth_rate"]

    result = {
        "benchmark": "stability_bounds",
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(["python", "benchmarks/stability_bounds.py"] + sys.argv[1:]),
        "host": {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
                 "cpus": os.cpu_count()},
        "definition": "dt = cfl * geometry.min_spacing / wave_speed; mu = lambda * min_spacing / wave_speed; "
                      f"cfl_max = largest cfl with max |R(cfl mu)| <= 1 + {TOL} (Re mu clipped to <= 0)",
        "stability_polynomials": {s: POLYS[s].tolist() for s in schemes},
        "ray_limits": {s: {"imaginary_axis": float(RAY[s][0]), "negative_real_axis": float(RAY[s][-1]),
                           "min_over_left_half_plane": float(RAY[s].min())} for s in schemes},
        "options": vars(args),
        "summary": summary,
        "cross_checks": cross_rows,
        "semi_discrete_growth": [{k: r[k] for k in ("system", "flux", "boundary", "mesh", "elements", "order",
                                                   "max_re_mu", "growth_rate")}
                                 for r in dense_rows if r["max_re_mu"] > 1e-8],
        "bloch": bloch_rows,
        "timestep_checks": ts_rows,
        "cases": rows,
        "seconds": time.time() - started,
    }
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)

    # Report -----------------------------------------------------------------------------------
    print()
    if cross_rows:
        print(f"dense vs Arnoldi (1x1x2 elements, N={args.cross_check}): {len(cross_rows)} cases, largest relative "
              f"difference in cfl_max {max(c['max_rel_diff'] for c in cross_rows):.1e}")
    for b in bloch_rows:
        print(f"Bloch scan {b['system']} {b['flux']} N={b['order']} ({b['k_points']} k): " + ", ".join(
            f"{s} {b[s]['cfl_max']:.4f} at k/pi={b[s]['worst_k_over_pi']} vs {b[s]['cfl_max_k_in_0_pi']:.4f} "
            f"on {{0,pi}}^3" for s in schemes))
    growing = [r for r in dense_rows if r["max_re_mu"] > 1e-8]
    if growing:
        w = max(growing, key=lambda r: r["max_re_mu"])
        print(f"semi-discrete growth (max Re mu > 1e-8) in {len(growing)} of {len(dense_rows)} dense cases "
              f"({sorted(set(r['system'] + '/' + r['mesh'] for r in growing))}); largest Re mu = {w['max_re_mu']:.3g} "
              f"({w['system']} {w['flux']} {w['boundary']} {w['mesh']} {'x'.join(map(str, w['elements']))} N={w['order']})")
    for r in ts_rows:
        if r["label"] == "curved_growth":
            print(f"curved growth check {r['case']['system']} {r['case']['flux']} {r['case']['boundary']} N={r['case']['order']} "
                  f"at cfl {r['cfl']:.3f}: energy x{r['energy_ratio']:.3g} over t={r.get('t_end', 0):.3g}, rate over the second half "
                  f"{r.get('measured_energy_growth_rate', float('nan')):.3g} (2 max Re lambda = {r['predicted_energy_growth_rate']:.3g})")
    steps = [r for r in ts_rows if r["label"] in ("below", "above")]
    if steps:
        print(f"\ntime stepping from random fields, {args.timestep_steps} steps: energy(end)/energy(0)")
        print(f"{'case':>36} {'scheme':>7} {'cfl_max':>8} {'0.98x':>10} {'1.02x':>10} {'|R| pred.':>10}")
        for r in steps:
            if r["label"] != "below":
                continue
            up = next(x for x in steps if x["label"] == "above" and x["case"] == r["case"] and x["scheme"] == r["scheme"])
            c = r["case"]
            name = f"{c['system']} {c['flux']} {c['boundary']} N={c['order']}"
            print(f"{name:>36} {r['scheme']:>7} {r['cfl_max']:8.4f} {r['energy_ratio']:10.3g} {up['energy_ratio']:10.3g} "
                  f"{up['predicted_growth_per_step']:10.5f}")
    groups = sorted(set((r["system"], r["flux"], r["mesh"]) for r in rows))
    print("\ncfl_max, minimum over boundaries, per system/flux/mesh (elements "
          f"{'x'.join(map(str, elements))}); last column: minimum over affine and curved")
    for s in schemes:
        print(f"[{s}]")
        head = ["N"] + [f"{g[0][:4]}/{g[1][:4]}/{g[2][:4]}" for g in groups] + ["min"]
        print(" ".join(f"{h:>15}" if i else f"{h:>3}" for i, h in enumerate(head)))
        for N in orders:
            vals = []
            for g in groups:
                sel = [r["cfl_max"][s] for r in rows if (r["system"], r["flux"], r["mesh"]) == g and r["order"] == N]
                vals.append(min(sel) if sel else float("nan"))
            enf = [v for g, v in zip(groups, vals) if g[2] in ("affine", "curved") and not math.isnan(v)]
            print(f"{N:>3} " + " ".join(f"{v:>15.4f}" for v in vals) + f" {min(enf):>15.4f}")
    print("\nrecommended enforced bound (min over affine and curved cases, rounded down to 2 significant digits):")
    for s in schemes:
        w = summary[s]
        wc = w["worst_case"]
        extra = (f"; sheared meshes reach {w['sheared_min_cfl_max']:.4f} ({w['sheared_worst_case']})"
                 if "sheared_min_cfl_max" in w else "")
        print(f"  {s:7s} cfl <= {w['recommended_bound']:.2g}   (min {w['min_cfl_max']:.4f}: {wc['system']} {wc['flux']} "
              f"{wc['boundary']} {wc['mesh']} N={wc['order']}, binding mu = {w['binding_mu'][0]:.3f}"
              f"{w['binding_mu'][1]:+.3f}i{extra})")
    print(f"({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
