"""Where the mesh wraps around: at each face point whose partner is a periodic image, the
translation between the two, found by the face exchange itself (a gather–scatter sum of the
points' coordinates), so box meshes and imported meshes with periodic faces are treated alike
and on any partition.

Two users: the plane waves (plane_waves.py) refuse, without bloch_k, a total-field region that
a periodic wrap crosses at an angle to the wave (the incident wave is not periodic there), and the
Bloch-periodic boundaries (bloch.py) rotate the partner's trace by e^{i k . d} there.
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.systems.dg import face_values

AXES = "xyz"


def periodic_translations(system, comm=None, where: str = "case") -> np.ndarray:
    """(3, E, faces, a, b) host float64, the trace buffer's layout: d = x - x' at each face point x
    whose partner x' is a periodic image (the partner seen from x lies at x - d, so a Bloch
    field there is u(x') e^{i k . d}); 0 at interior partners and boundary points. A face
    point with more than one partner (a non-conforming mesh) is an error (collective)."""
    own = face_values(np, np.asarray(system.geometry.coords, dtype=np.float64), system.order)
    size = own[0].size  # E * faces * face points (four edges of 1 x n points in 2-D)
    data = system.backend.asarray(np.concatenate([own.reshape(3, size), np.ones((1, size))]))
    system.exchange.apply(data, "sum")
    host = np.asarray(system.backend.to_host(data), dtype=np.float64).reshape((4,) + own.shape[1:])
    partners = np.rint(host[3]) - 1
    extent = float(allreduce(comm, np.array([np.abs(own).max() if own.size else 0.0]), "max")[0])
    many = int(allreduce(comm, np.array([int(np.count_nonzero(partners > 1))]), "sum")[0])
    if many:
        raise InputError(f"{where}: {many} face points have several partners (a non-conforming mesh): the "
                         "periodic wrap needs one partner per face point")
    d = np.where(partners == 1, own - (host[:3] - own), 0.0)
    # coincident partners agree to the exchange's rounding; a periodic image is a period away
    tol = 1e3 * float(np.finfo(system.backend.dtype).eps) * max(1.0, extent)
    d[np.abs(d) < tol] = 0.0
    return d


def wrapped_axes(translations, mask=None, comm=None) -> tuple:
    """The axes (0, 1, 2) along which some face point (of ``mask``, broadcast over the
    translations' points) wraps, on any rank (collective)."""
    moved = translations != 0
    if mask is not None:
        moved = moved & mask
    flags = moved.reshape(3, -1).any(axis=1).astype(np.int64) if moved.size else np.zeros(3, np.int64)
    flags = allreduce(comm, flags, "max")
    return tuple(a for a in range(3) if flags[a])


def check_plane_wave_periodicity(system, spec, direction, inside, translations, comm=None,
                                 where: str = "case", wave_vector=None) -> None:
    """InputError, on every rank alike, when a periodic wrap touches the plane wave's
    total-field region (the surface is open there or passes through the wrap) and the wave
    travels with a component across the wrap (k . d != 0): its incident field is not periodic,
    so the TF/SF correction there is wrong (a user measured 9 % of the amplitude leaking
    upstream and 41 % downstream). Normal incidence (k . d = 0) is exact (collective).
    ``wave_vector``: (2 pi f / c) k of a wave with a frequency, for the bloch_k the message gives."""
    k = np.asarray(direction, dtype=np.float64)
    along = np.tensordot(k, translations, axes=1)  # k . d per face point
    length = np.sqrt(np.sum(translations**2, axis=0))
    oblique = np.abs(along) > 1e-9 * length
    mask = oblique & np.asarray(inside, dtype=bool)[:, None, None, None]
    axes = wrapped_axes(translations, mask[None], comm)
    periodic = wrapped_axes(translations, comm=comm)
    if axes:
        names = " and ".join(AXES[a] for a in axes)
        raise InputError(
            f"{where}: [source.{spec.name}] type = \"plane_wave\" with direction = {list(spec.values['direction'])} "
            f"crosses the periodic {names} {'axis' if len(axes) == 1 else 'axes'} inside its total-field region: "
            "the incident wave is not periodic there, so the field would be silently wrong; use a direction "
            f"perpendicular to the {names} axis or a total-field box that stops short of the periodic faces; for "
            "oblique incidence on a periodic structure use Bloch-periodic boundaries: "
            f"{bloch_hint(wave_vector, periodic)} "
            "(docs/electromagnetics.md, \"Bloch-periodic boundaries\")")


def bloch_hint(wave_vector, periodic) -> str:
    """What the refusal proposes: bloch_k for a continuous wave (k along the periodic axes)."""
    if wave_vector is None:
        k = "(2 pi frequency / c) times direction along the periodic axes"
    else:
        k = str([float(wave_vector[a]) if a in periodic else 0.0 for a in range(3)])
    return (f"for a continuous wave (waveform = \"continuous\") give [physics] bloch_k = {k}; for a pulse use "
            "bloch_k with a phased current sheet")
