"""A closed surface of element faces around a region of the mesh (a box whose sides lie on
element faces, or a named volume region): which elements are inside, the faces between
inside and outside with their sign, and the check that the surface lies in the uniform
background medium. The plane waves' total-field/scattered-field surface (tfsf.py) and the
near-to-far transform's surface (far_field.py) are such surfaces.
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import face_shape
from lobatto.systems.dg import face_values

#: no element (larger than every global element number): the neutral value of a min-reduction
NONE = np.iinfo(np.int64).max


def elements_in_region(system, region: str, what: str, where: str = "case") -> np.ndarray:
    """(E,) True on this rank's elements of a named volume region."""
    names = tuple(getattr(system.mesh, "region_names", ("all",)))
    if region not in names:
        raise InputError(f"{where}: {what} region = '{region}': the mesh has no such volume region "
                         f"(regions: {', '.join(names)})")
    return np.asarray(system.mesh.regions) == names.index(region)


def elements_in_box(system, lower, upper, comm=None, what: str = "the box", where: str = "case") -> np.ndarray:
    """(E,) True on this rank's elements inside [lower, upper]; a side that cuts an element
    is an error naming the element (collective)."""
    x = system.geometry.coords.reshape(3, system.num_elements, -1)
    lo, up = (np.array(v, dtype=float)[:, None, None] for v in (lower, upper))
    if system.mesh.dim == 2:  # z-invariant: the box is a rectangle in x, y (its z range is not read)
        lo, up = lo[:2], up[:2]
        x = x[:2]
    tol = 1e-9 * max(1.0, float(np.max(np.abs(np.concatenate([lo, up])))))
    within = np.all((x >= lo - tol) & (x <= up + tol), axis=0)  # (E, points)
    strictly = np.all((x > lo + tol) & (x < up - tol), axis=0)
    inside = within.all(axis=1)
    cut = ~inside & strictly.any(axis=1)
    ids = system.mesh.element_ids
    bad = int(allreduce(comm, np.array([ids[cut].min() if cut.any() else NONE]), "min")[0])
    if bad != NONE:
        raise InputError(f"{where}: {what} lower = {list(lower)}, upper = {list(upper)} cuts element {bad}: "
                         "its sides must lie on element faces")
    return inside


def surface_signs(system, inside: np.ndarray) -> np.ndarray:
    """(E, faces) +1 on faces of total-field elements whose neighbour is outside, -1 on faces of
    outside elements whose neighbour is inside, 0 elsewhere (boundary faces included): one
    gather–scatter sum of the flag and of ones, so neighbours on other ranks count too."""
    shape = (system.num_elements, system.mesh.num_faces) + face_shape(system.mesh.dim, system.order)
    own = np.broadcast_to(inside.astype(float)[:, None, None, None], shape)
    data = system.backend.asarray(np.stack([own.reshape(-1), np.ones(own.size)]))
    system.exchange.apply(data, "sum")
    total, count = (np.asarray(system.backend.to_host(data[i]), dtype=float).reshape(own.shape) for i in range(2))
    sign = np.where(np.rint(count) == 2, own - (total - own), 0.0)
    return np.rint(sign[:, :, 0, 0]).astype(np.int64)


def check_background(system, elements, faces, what: str, where: str, comm=None) -> None:
    """The surface's points must lie in the uniform, lossless background (eps, mu of
    [physics]): the incident wave and the flux correction assume it (collective)."""
    medium = getattr(system, "medium", None)
    bad = NONE
    if medium is not None and len(elements):
        # (a diagonal eps, mu has its components first: anisotropy.py; they go last here)
        eps, mu, sigma = (np.moveaxis(face_values(np, getattr(medium, k), system.order)[..., elements, faces, :, :],
                                      0, -1) if getattr(medium, k).ndim == 5 else
                          face_values(np, getattr(medium, k), system.order)[elements, faces]
                          for k in ("epsilon", "mu", "sigma"))
        off = [(np.abs(eps - system.epsilon) > 1e-12 * system.epsilon), (np.abs(mu - system.mu) > 1e-12 * system.mu),
               (sigma != 0)]
        wrong = np.any([w.reshape(len(elements), -1).any(axis=1) for w in off], axis=0)
        if wrong.any():
            bad = int(system.mesh.element_ids[np.asarray(elements)[wrong]].min())
    # a dispersive medium (poles) is not the background even where its eps_inf is: a surface
    # point where a table's poles have weight
    for term in (t for t in getattr(system, "terms", ()) if t.name.startswith("dispersion.") and t.count):
        elements, faces = np.asarray(elements), np.asarray(faces)
        held = np.isin(elements, term.elements)
        if not held.any():
            continue
        at = np.searchsorted(term.elements, elements[held])
        if term.weight is None:  # the table covers its elements whole
            wrong = np.ones(at.size, dtype=bool)
        else:
            weight = face_values(np, np.asarray(system.backend.to_host(term.weight)), system.order)
            wrong = (weight[at, faces[held]] > 0).reshape(at.size, -1).any(axis=1)
        if wrong.any():
            bad = min(bad, int(system.mesh.element_ids[elements[held][wrong]].min()))
    bad = int(allreduce(comm, np.array([bad]), "min")[0])
    if bad != NONE:
        raise InputError(f"{where}: {what} crosses a medium other than the background (epsilon = {system.epsilon:g}, "
                         f"mu = {system.mu:g}, sigma = 0 of [physics], no poles) at element {bad}; put it where the "
                         "medium is uniform")
