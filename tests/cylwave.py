"""A cylinder waveguide in the spirit of NekCEM's ``tests/cylwave``, written as a Nek5000 .rea.

Radius R, PEC wall, periodic in z (length L): per layer an O-grid of m x m straight elements in
the square of half width 0.45 R and 4m elements between it and the wall, whose wall edges
(Nek edges 2 and 6) are circle arcs (``C``) of radius R. Its TM01 mode travelling along z
(kc = j01 / R, beta = 2 pi / L, omega^2 = kc^2 + beta^2, theta = beta z - omega t):

    Ez = J0(kc r) cos theta,  E_r = (beta / kc) J1(kc r) sin theta,  H_phi = (omega / kc) J1(kc r) sin theta.

Used by tests/unit/test_maxwell_galerkin.py and benchmarks/curved_accuracy.py.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import j0, j1

from nek_mesh_writer import write_rea

J01 = 2.404825557695773  # first zero of J0


def cylinder_rea(path, m: int = 1, layers: int = 2, radius: float = 1.0, length: float = 4.0,
                 square: float = 0.45, ends: str = "P") -> int:
    """Write the O-grid cylinder (axis z, 0 <= z <= length) as a .rea; returns the element count.
    Per layer: m x m elements in the square of half width square * radius, 4m elements between it
    and the wall, whose wall edges (Nek edges 2 and 6) are circle arcs of the cylinder's radius.
    The ends z = 0 and length are periodic (``ends = "P"``) or faces of that boundary code (a pair:
    the codes at z = 0 and z = length)."""
    a = square * radius
    g = np.linspace(-a, a, m + 1)
    quads = [([(g[i], g[j]), (g[i + 1], g[j]), (g[i + 1], g[j + 1]), (g[i], g[j + 1])], False)
             for j in range(m) for i in range(m)]
    ring = [p for side in range(4) for p in
            ([(a, s) for s in g[:-1]], [(-s, a) for s in g[:-1]], [(-a, -s) for s in g[:-1]], [(s, -a) for s in g[:-1]])[side]]
    ring.append(ring[0])
    for k in range(4 * m):  # counter-clockwise: inner, wall, wall, inner; r runs outwards
        p0, p1 = np.array(ring[k]), np.array(ring[k + 1])
        w0, w1 = radius * p0 / np.linalg.norm(p0), radius * p1 / np.linalg.norm(p1)
        quads.append(([tuple(p0), tuple(w0), tuple(w1), tuple(p1)], True))
    z = np.linspace(0.0, length, layers + 1)
    corners, curves, bcs, nq = [], [], [], len(quads)
    for layer in range(layers):
        for q, (c2, wall) in enumerate(quads):
            e = layer * nq + q + 1
            corners.append([(x, y, z[layer]) for x, y in c2] + [(x, y, z[layer + 1]) for x, y in c2])
            if wall:
                curves += [(e, 2, [radius, 0, 0, 0, 0], "C"), (e, 6, [radius, 0, 0, 0, 0], "C")]
                bcs.append((e, 2, "PEC", np.zeros(5)))
            periodic = ends == "P"
            low, high = (ends, ends) if isinstance(ends, str) else ends
            if layer == 0:
                bcs.append((e, 5, low, [(layers - 1) * nq + q + 1, 6, 0, 0, 0] if periodic else np.zeros(5)))
            if layer == layers - 1:
                bcs.append((e, 6, high, [q + 1, 5, 0, 0, 0] if periodic else np.zeros(5)))
    write_rea(path, np.array(corners), curves=curves, bcs=bcs)
    return len(corners)


def tm01(coords, t: float, radius: float = 1.0, length: float = 4.0):
    """(fields, d fields / dt), each (6, ...), of the cylinder's TM01 mode."""
    x, y, z = coords
    kc, beta = J01 / radius, 2 * math.pi / length
    omega = math.hypot(kc, beta)
    r = np.hypot(x, y)
    safe = np.where(r > 1e-14, r, 1.0)
    j1_over_r = np.where(r > 1e-14, j1(kc * r) / safe, kc / 2)
    theta = beta * z - omega * t
    s, c, ez = np.sin(theta), np.cos(theta), j0(kc * r)
    er, hp = beta / kc * j1_over_r, omega / kc * j1_over_r
    u = np.stack([er * x * s, er * y * s, ez * c, -hp * y * s, hp * x * s, 0 * x])
    du = -omega * np.stack([er * x * c, er * y * c, -ez * s, -hp * y * c, hp * x * c, 0 * x])
    return u, du


