"""The medium of a Maxwell case: the [physics] background and the [material] tables made
per-point fields (materials.py), or one eps and mu when they are uniform (the tuned path)."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from lobatto.machine.parallel import allreduce
from lobatto.systems.maxwell.materials import PROPERTIES, material_fields


def is_uniform(fields: Mapping, comm=None) -> bool:
    """True when eps and mu are one value everywhere (on every rank) and sigma is 0."""
    eps, mu, sigma = (np.asarray(fields[k]) for k in PROPERTIES)
    lo = allreduce(comm, np.array([eps.min(initial=np.inf), mu.min(initial=np.inf)]), "min")
    hi = allreduce(comm, np.array([eps.max(initial=-np.inf), mu.max(initial=-np.inf), sigma.max(initial=0.0)]),
                   "max")
    return bool(lo[0] == hi[0] and lo[1] == hi[1] and hi[2] == 0.0)


def medium_from_case(case, mesh, geometry, comm=None) -> tuple:
    """(epsilon, mu, fields): the scalar path's eps and mu, and the per-point fields when the
    medium is not uniform or conducts (else None: the tuned scalar path runs)."""
    physics = case.physics
    background = {"epsilon": physics.epsilon, "mu": physics.mu, "sigma": physics.values.get("sigma", 0.0)}
    tables = case.tables.get("material")
    if tables is None and background["sigma"] == 0:
        return physics.epsilon, physics.mu, None
    if geometry is None:
        from lobatto.mesh import compute_geometry

        geometry = compute_geometry(mesh, case.discretization.order)
    fields = material_fields(tables, background, mesh, geometry.coords, source=case.source, comm=comm)
    if is_uniform(fields, comm):
        if fields["epsilon"].size:
            return float(fields["epsilon"].flat[0]), float(fields["mu"].flat[0]), None
        return physics.epsilon, physics.mu, None  # (a rank without elements)
    return physics.epsilon, physics.mu, fields


__all__ = ["is_uniform", "medium_from_case"]
