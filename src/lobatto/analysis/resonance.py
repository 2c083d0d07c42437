"""Resonances of a uniformly sampled time series by the matrix-pencil method
(Hua and Sarkar, IEEE Trans. ASSP 38, 1990; docs/electromagnetics.md, "Resonances").

The samples s_k = s(t0 + k dt) are fitted by a sum of damped complex exponentials
s_k = sum_m a_m z_m^k, z_m = exp((-gamma_m + i omega_m) dt):

1. the Hankel matrix H[i, j] = s_{i+j} ((n - L) x (L + 1), pencil parameter L = n/3) is
   factored by SVD; its rank M (the number of exponentials) is the count of singular values
   above ``rank_tolerance`` times the largest and, when the smallest is above PLATEAU times
   their median (noise: a plateau, which a sum of modes, decaying to round-off, does not
   have), above ``noise_factor`` times that median;
2. the poles z are the eigenvalues of pinv(V1) V2, V1 and V2 the right singular vectors of the
   M largest singular values without their last and first row;
3. the amplitudes a solve the Vandermonde least-squares problem over all samples.

A real signal's poles come in conjugate pairs: each pair is one mode of frequency omega >= 0
and real amplitude 2|a| (a real pole: |a|). The error of a mode is how far its complex
frequency moves when the fit is repeated on the series less its first, then its last tenth:
a true mode stays where it is, a pole fitted to noise moves by a good part of a bin of the
spectrum (2 pi / (n dt)). A mode is rejected as spurious when its error exceeds ``max_error``
relative to |omega - i gamma|, or ``max_shift`` bins.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lobatto.errors import InputError

#: samples dropped from either end for the error estimate, as a share of the series
WINDOW_SHARE = 0.1
#: the largest pencil parameter L (the SVD costs (n - L) L^2)
MAX_PENCIL = 1000
#: singular values whose smallest is above this share of their median end in a noise plateau
PLATEAU = 0.1


@dataclass
class Modes:
    """The modes found, sorted by amplitude (largest first); arrays of equal length.

    ``omega`` angular frequency, ``frequency`` = omega / 2 pi, ``decay`` gamma (s ~ e^{-gamma t},
    negative for a growing mode), ``q`` = omega / (2 gamma) (inf for gamma <= 0), ``amplitude``
    and ``phase`` at t0 (s(t) = sum A e^{-gamma (t - t0)} cos(omega (t - t0) + phase) for a real
    signal), ``error`` the absolute error estimate of the complex angular frequency and
    ``relative_error`` that over |omega - i gamma|. ``rank``: the exponentials fitted;
    ``rejected``: modes dropped as spurious (error) or too weak; ``out_of_band``: outside ``band``."""

    omega: np.ndarray
    decay: np.ndarray
    amplitude: np.ndarray
    phase: np.ndarray
    error: np.ndarray
    relative_error: np.ndarray
    rank: int = 0
    rejected: int = 0
    out_of_band: int = 0
    singular_values: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    @property
    def frequency(self) -> np.ndarray:
        return self.omega / (2 * np.pi)

    @property
    def q(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.decay > 0, self.omega / (2 * np.maximum(self.decay, 1e-300)), np.inf)

    def __len__(self) -> int:
        return len(self.omega)


def resonances(samples, dt: float, *, band=None, pencil: int | None = None, rank_tolerance: float = 1e-10,
               noise_factor: float = 10.0, max_error: float = 1e-3, max_shift: float = 0.05,
               min_amplitude: float = 0.0) -> Modes:
    """The modes of ``samples`` (1-D, real or complex) taken every ``dt``.

    ``band``: (f1, f2), keep only modes with f1 <= omega / 2 pi <= f2. ``pencil``: L (default
    n/3, at most MAX_PENCIL). ``max_error``: the largest relative error estimate of a mode kept;
    ``max_shift``: the largest error estimate in bins of 2 pi / (n dt).
    ``min_amplitude``: modes weaker than this share of the strongest are dropped."""
    y = np.asarray(samples)
    if y.ndim != 1 or y.size < 8:
        raise InputError(f"resonances: expected a 1-D series of at least 8 samples, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise InputError("resonances: the series holds NaN or inf (a sample not taken, or a diverged run)")
    if not (np.isfinite(dt) and dt > 0):
        raise InputError(f"resonances: the sampling step must be a positive number, got {dt!r}")
    if band is not None:
        f1, f2 = (float(b) for b in band)
        if not (0 <= f1 < f2):
            raise InputError(f"resonances: band must be two frequencies 0 <= f1 < f2, got {list(band)}")
    real = not np.iscomplexobj(y)
    n = y.size
    L = int(pencil) if pencil is not None else min(n // 3, MAX_PENCIL)
    if not 2 <= L <= n - 2:
        raise InputError(f"resonances: pencil parameter {L} must lie in [2, {n - 2}] for {n} samples")

    poles, singular = _poles(y, L, rank_tolerance, noise_factor)
    cut = max(1, int(round(WINDOW_SHARE * n)))
    s = np.log(poles.astype(np.complex128)) / dt  # -gamma + i omega
    error = np.zeros(s.size)
    for window in (y[cut:], y[:-cut]):
        others = np.log(_poles(window, min(L, window.size // 3), rank_tolerance, noise_factor)[0]
                        .astype(np.complex128)) / dt
        error = np.maximum(error, np.abs(s[:, None] - others[None, :]).min(axis=1) if others.size else np.inf)
    amplitudes = _amplitudes(y, poles)

    omega, decay = s.imag, -s.real
    scale = np.maximum(np.abs(s), 2 * np.pi / (n * dt))  # a zero-frequency mode: relative to one bin
    relative = error / scale
    if real:
        keep = omega >= 0
        paired = np.abs(poles.imag) > 0
        amplitude = np.abs(amplitudes) * np.where(paired, 2.0, 1.0)
    else:
        keep = np.ones(s.size, dtype=bool)
        amplitude = np.abs(amplitudes)
    # a real negative pole (omega = pi/dt) alternates in sign each sample: an oscillation at the
    # Nyquist frequency cannot be told from aliased noise, so it is never reported as a mode
    keep &= np.abs(omega) < np.pi / dt * (1 - 1e-9)
    phase = np.angle(amplitudes)
    fitted = int(keep.sum())
    good = keep & (relative <= max_error) & (error <= max_shift * 2 * np.pi / (n * dt))
    if good.any() and min_amplitude > 0:
        good &= amplitude >= min_amplitude * amplitude[good].max()
    rejected = fitted - int(good.sum())
    out_of_band = 0
    if band is not None:
        inside = (omega >= 2 * np.pi * f1) & (omega <= 2 * np.pi * f2)
        out_of_band = int((good & ~inside).sum())
        good &= inside
    order = np.nonzero(good)[0]
    order = order[np.argsort(-amplitude[order], kind="stable")]
    return Modes(omega=np.abs(omega[order]), decay=decay[order], amplitude=amplitude[order], phase=phase[order],
                 error=error[order], relative_error=relative[order], rank=int(poles.size), rejected=rejected,
                 out_of_band=out_of_band, singular_values=singular)


def _poles(y: np.ndarray, L: int, rank_tolerance: float, noise_factor: float) -> tuple[np.ndarray, np.ndarray]:
    """The poles z of the matrix pencil of ``y`` with parameter L, and the Hankel matrix's
    singular values."""
    hankel = np.lib.stride_tricks.sliding_window_view(y, L + 1)  # (n - L, L + 1), rows s_i .. s_{i+L}
    _, singular, vh = np.linalg.svd(hankel, full_matrices=False)
    if singular[0] == 0:
        return np.zeros(0, dtype=y.dtype), singular
    floor = rank_tolerance * singular[0]
    median = float(np.median(singular))
    if singular[-1] > PLATEAU * median:  # a flat tail: noise (a sum of modes decays to round-off instead)
        floor = max(floor, noise_factor * median)
    rank = int(np.count_nonzero(singular > floor))
    rank = min(max(rank, 1), L - 1)
    v = vh[:rank].T  # (L + 1, M): the rows of H are combinations of the rows of vh, as of (z^j)_j
    pencil = np.linalg.lstsq(v[:-1], v[1:], rcond=None)[0]
    return np.linalg.eigvals(pencil), singular


def _amplitudes(y: np.ndarray, poles: np.ndarray) -> np.ndarray:
    """Least-squares a of y_k = sum a_m z_m^k over all samples, each column scaled to unit
    norm first (a growing spurious pole would otherwise overflow or swamp the others)."""
    k = np.arange(y.size)[:, None]
    logs = np.log(poles.astype(np.complex128))[None, :] * k
    peak = np.maximum(logs.real.max(axis=0), 0.0)  # |z|^k largest at k = 0 or k = n - 1
    columns = np.exp(logs - peak)
    norms = np.linalg.norm(columns, axis=0)
    norms[norms == 0] = 1.0
    solution = np.linalg.lstsq(columns / norms, y.astype(np.complex128), rcond=None)[0]
    return solution / norms * np.exp(-peak)
