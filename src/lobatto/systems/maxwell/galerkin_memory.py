"""The Galerkin volume form's memory (galerkin.py), for the run's estimate before anything is built."""

from __future__ import annotations

from lobatto.systems.maxwell.galerkin import quadrature_points


def memory_estimate(case, layout) -> list:
    """memory_items.MemoryItem of the Galerkin operator for ``[discretization] volume_form =
    "galerkin"``: per element, with Q = quadrature_points(N) = N + 1 Gauss points per direction,
    about 12 Q^3 + 24 Q^2 values kept and 12 Q^3 of temporaries where the state lives, and a host
    peak of 41 Q^3 float64 values while the operator is built (tracemalloc on a deformed 2^3 box,
    WeightAdjustedOperator alone: kept 18.9, 15.1 and 14.1 Q^3 at N = 3, 7, 11, i.e. as many values
    per GLL point; peak 41.0, 38.3, 38.1 Q^3; the strong form's larger rule kept 29, 32 and 32
    values per GLL point)."""
    form = case.discretization.volume_form
    if form == "auto":  # the Galerkin form where the mesh may be curved (volume_form.py decides once built)
        if layout.dim != 3 or (case.mesh.generator == "box" and not case.mesh.deform):
            return []
    elif form != "galerkin":
        return []
    q = quadrature_points(layout.order)
    kept = (12 * q ** 3 + 24 * q ** 2 + 12 * q ** 3) * layout.elements * layout.value_bytes
    if case.tables.get("material") is not None or case.physics.values.get("sigma"):
        # a per-point medium's Gauss arrays (galerkin_media.py): 6 + 6 + 1 Q^3 and 4 x 6 Q^2 values
        kept += (13 * q ** 3 + 24 * q ** 2) * layout.elements * layout.value_bytes
    return [layout.backend_item(f"[discretization] volume_form = \"galerkin\" (Gauss rules of {q} points: "
                                f"{24 * q ** 3 + 24 * q ** 2:,} values per element)", kept,
                                host=41.0 * q ** 3 * layout.elements * 8,
                                advice="use volume_form = \"split\", a lower order or more ranks",
                                known=form == "galerkin")]  # "auto": only if the mesh turns out curved
