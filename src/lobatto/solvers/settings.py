"""The keys of an elliptic solver's case-file table (a steady system's [solver], the pressure
table of a flow system), declared once for every system that solves with
``solvers.elliptic.EllipticSolver``."""

from __future__ import annotations

from lobatto.config import Key
from lobatto.config.ranges import ITERATIONS_REASON, MAX_ITERATIONS, SMALLEST, Range

#: a relative residual: 1 is met by the start x = 0, before any iteration
RELATIVE = Range(SMALLEST, 1.0, "a relative residual: 1 is met by the start x = 0 before any iteration, and "
                 "values below 1e-100 leave float64's range", high_open=True)
ITERATIONS = Range(1, MAX_ITERATIONS, ITERATIONS_REASON)


def elliptic_solver_keys(tolerance: float = 1e-8, max_iterations: int = 1000, projection: int = 0,
                         method: str = "fcg", what: str = "the solve", absolute: bool = True) -> tuple:
    """The Key tuple, with the defaults given (the rest are the same for every system);
    ``absolute``: whether the table has ``absolute_tolerance``."""
    keys = (
        Key("method", "choice", method, "Krylov method: cg (fixed SPD preconditioner), fcg (flexible CG), gmres "
            "(restarted flexible GMRES)", choices=("cg", "fcg", "gmres")),
        Key("preconditioner", "choice", "multigrid", "p-multigrid V-cycle, Jacobi (the assembled diagonal) or none",
            choices=("multigrid", "jacobi", "none")),
        Key("tolerance", "positive", tolerance, f"stop {what} at ||r|| <= tolerance ||b|| (assembled norms, b "
            "after the Dirichlet lifting)", range=RELATIVE),
        Key("absolute_tolerance", "nonnegative", 0.0, "or at ||r|| <= absolute_tolerance (0: relative only)"),
        Key("max_iterations", "positive_integer", max_iterations, "iterations before the solve is declared not "
            "converged", range=ITERATIONS),
        Key("projection", "count", projection, "previous solutions kept for A-conjugate projection (0: none); it "
            "helps sequences of solves (time steps)", range=Range(0, 100, "each kept solution costs two vectors of the "
            "mesh's size and an inner product with each per solve")),
        Key("levels", "orders", (), "p-multigrid orders from [discretization] order down, e.g. [7, 3, 1] "
            "(default: halving to 1)"),
        Key("precision", "choice", "float64", "precision of the preconditioner; float32 needs method fcg or gmres",
            choices=("float64", "float32")),
        Key("coarse", "choice", "auto", "coarsest multigrid solve: cholesky, amg (pyamg's algebraic multigrid "
            "hierarchy cycled on the backend, no host wait), pcg (Jacobi-PCG to coarse_tolerance) or auto (cholesky "
            "up to 3000 points, amg above where pyamg is installed, else pcg)",
            choices=("auto", "cholesky", "pcg", "amg")),
        Key("coarse_tolerance", "positive", 1e-2, "coarse = pcg: relative residual the coarse Jacobi-PCG stops at "
            "(looser is cheaper per cycle; too loose costs outer iterations)", range=RELATIVE),
        Key("restart", "positive_integer", 30, "gmres: vectors before a restart", range=Range(1, 1000, "gmres keeps "
            "restart + 1 vectors of the mesh's size and orthogonalises each new one against all of them")),
        Key("smoother", "choice", "jacobi", "the multigrid smoother's preconditioner: jacobi (Chebyshev on the "
            "Jacobi-scaled operator, one multiply per application) or schwarz (Chebyshev with overlapping additive "
            "Schwarz, fast-diagonalization local solves: nekRS's default; fewer iterations, each application costs "
            "two extra exchanges and an (N+3)^3 element solve, so on an H100 it was slower per solve: docs/elliptic.md)",
            choices=("jacobi", "schwarz")),
        Key("smoother_degree", "positive_integer", 3, "degree of the multigrid's Chebyshev smoother",
            range=Range(1, 50, "each degree is one operator application per smoothing: a high degree costs more "
                        "than it saves")),
    )
    return keys if absolute else tuple(k for k in keys if k.name != "absolute_tolerance")


#: arrays of one level's size a multigrid level keeps and uses per cycle: the operator's
#: factors (6, 12 with a variable coefficient), mass, mask, multiplicity and its inverse,
#: numbering labels, the Chebyshev smoother's and the V-cycle's temporaries
LEVEL_ARRAYS = 16
#: smoother = "schwarz", per smoothed level (every one but the coarsest) and element:
#: arrays of (N+3)^3 values (the two ext work arrays, the reference FDM's temporaries: the
#: transformed element and its diagonal; the order-(N+2) numbering's labels while it is built)
SCHWARZ_EXT_ARRAYS = 6


def elliptic_memory(settings: dict, layout, table: str, counted_projection: int = 0) -> list:
    """What an EllipticSolver with these checked settings allocates beyond what its system's
    ``memory_states`` already counts (measured at the defaults), as memory_items.MemoryItem:
    the restarted GMRES basis and preconditioned directions ((2 restart + 1) vectors of the
    solve's size) and its Hessenberg matrix ((restart + 1) x restart float64 on the host),
    projection vectors beyond ``counted_projection`` (two per kept solution), the
    multigrid levels below the finest (LEVEL_ARRAYS arrays each, at its order) and the
    Schwarz smoother's subdomain arrays (SCHWARZ_EXT_ARRAYS of (N+3)^3 per element, its
    eigenvectors and weights, on every smoothed level). On a 2-D mesh (``layout.dim`` = 2)
    the powers are 2: (N+1)^2 points and (N+3)^2 ext values per element."""
    points, p = layout.points, layout.value_bytes
    items = []
    if settings.get("method") == "gmres":
        m = int(settings["restart"])
        items.append(layout.backend_item(
            f"[{table}] method = \"gmres\" with restart = {m:,} ({2 * m + 1:,} Krylov vectors of {points:,} points "
            f"and a {m + 1:,} x {m:,} Hessenberg matrix)", (2 * m + 1) * points * p, host=8.0 * (m + 1) * (m + 3),
            advice=f"lower [{table}] restart (now {m:,}; 30 is usual)"))
    extra = int(settings.get("projection", 0)) - counted_projection
    if extra > 0:
        items.append(layout.backend_item(f"[{table}] projection = {int(settings['projection']):,} (two vectors of "
                                         f"{points:,} points per kept solution)", 2 * extra * points * p,
                                         advice=f"lower [{table}] projection"))
    # points per element n**dim: a 2-D mesh's elements are (1, n, n) (RunLayout.dim where the
    # layout knows it, else 3-D)
    dim = int(getattr(layout, "dim", 3))
    if settings.get("preconditioner") == "multigrid":
        given = list(settings.get("levels") or ())
        orders = given[1:]  # [N] given: one level, the coarse solve alone (no smoother)
        if not given:  # the default: halving to 1
            order = layout.order
            while order > 1:
                order = max(1, order // 2)
                orders.append(order)
        coarse = sum(layout.elements * (q + 1) ** dim for q in orders)
        if coarse:
            items.append(layout.backend_item(f"[{table}] multigrid levels {orders} ({coarse:,} points)",
                                             LEVEL_ARRAYS * coarse * 8, advice=f"use fewer [{table}] levels"))
        if settings.get("smoother") == "schwarz" and orders:
            smoothed = [layout.order] + orders[:-1]
            values = sum(layout.elements * (SCHWARZ_EXT_ARRAYS * (q + 3) ** dim + dim * (q + 3) ** 2 + (q + 1) ** dim)
                         for q in smoothed)
            items.append(layout.backend_item(f"[{table}] smoother = \"schwarz\" on orders {smoothed} ({values:,} "
                                             "values: (N+3)^3 subdomain arrays and eigenvectors per element)",
                                             values * 8, advice=f"use [{table}] smoother = \"jacobi\""))
    return items
