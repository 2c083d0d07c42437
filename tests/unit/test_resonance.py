"""Resonance extraction (lobatto.analysis.resonance, docs/electromagnetics.md): damped sinusoids
recovered from synthetic series (exact, noisy, complex, growing, pure noise), the band, the
errors; a PEC cube cavity run whose modes match pi sqrt(l^2 + m^2 + n^2) and converge with N;
``lobatto resonances`` on the run's CSV and HDF5 series."""

from __future__ import annotations

import numpy as np
import pytest

import lobatto
from lobatto.analysis import resonances
from lobatto.analysis.resonance_table import probe_series, resonance_report, uniform_step
from lobatto.cli import main
from lobatto.errors import InputError


def rng():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    return np.random.default_rng(seed), seed


def random_modes(generator, count):
    """Frequencies at least a few bins apart, decays, amplitudes and phases."""
    while True:
        omega = np.sort(generator.uniform(1.0, 20.0, count))
        if count == 1 or np.diff(omega).min() > 0.5:
            break
    decay = generator.uniform(0.0, 0.1, count)
    amplitude = np.sort(generator.uniform(0.1, 1.0, count))[::-1]
    phase = generator.uniform(-np.pi, np.pi, count)
    return omega, decay, amplitude, phase


def series(t, omega, decay, amplitude, phase):
    return sum(a * np.exp(-g * t) * np.cos(w * t + p) for w, g, a, p in zip(omega, decay, amplitude, phase))


@pytest.mark.parametrize("count", [1, 3, 5])
def test_exact_sums_of_damped_sinusoids(count):
    generator, seed = rng()
    omega, decay, amplitude, phase = random_modes(generator, count)
    dt = 0.05
    t = np.arange(400) * dt
    modes = resonances(series(t, omega, decay, amplitude, phase), dt)
    assert len(modes) == count, (seed, modes)
    # sorted by amplitude: the drawn amplitudes are sorted the same way
    assert np.all(np.diff(modes.amplitude) <= 0)
    assert np.abs(modes.omega - omega).max() / omega.min() < 1e-10, (seed, modes.omega - omega)
    assert np.abs(modes.frequency - omega / (2 * np.pi)).max() < 1e-10 * omega.max()
    assert np.abs(modes.decay - decay).max() < 1e-9, seed
    assert np.abs(modes.amplitude - amplitude).max() < 1e-9, seed
    assert np.abs(np.angle(np.exp(1j * (modes.phase - phase)))).max() < 1e-9, seed
    with np.errstate(divide="ignore"):
        q = np.where(decay > 0, omega / (2 * decay), np.inf)
    assert np.allclose(modes.q, q, rtol=1e-6), seed
    assert modes.relative_error.max() < 1e-8, seed


def test_noisy_series_keeps_the_modes_and_rejects_the_noise():
    generator, seed = rng()
    omega, decay, amplitude = np.array([4.44, 7.02, 9.93]), np.array([0.01, 0.05, 0.2]), np.array([1.0, 0.5, 0.2])
    dt = 0.05
    t = np.arange(600) * dt
    clean = series(t, omega, decay, amplitude, [0.3, -1.0, 2.0])
    for noise in (1e-4, 1e-3):
        modes = resonances(clean + noise * generator.standard_normal(t.size), dt)
        assert len(modes) == 3, (seed, noise, modes)
        assert np.abs(modes.omega - omega).max() / omega.min() < 2e3 * noise, (seed, noise, modes.omega)
        q = omega / (2 * decay)
        assert np.abs(modes.q / q - 1).max() < 100 * noise, (seed, noise, modes.q)
        # the estimate is of the size of the true error, not far below it
        assert np.all(np.abs(modes.omega - omega) < 30 * modes.error + 1e-12), (seed, noise)
    # a rank forced far too high (no noise plateau cut): the poles fitted to noise move between
    # the windows of the error estimate and are rejected, the true ones stay. Not every time:
    # over 545 noise draws the two strong modes always stayed, the weak, fast-decaying third
    # (amplitude 0.2, decay 0.2) was rejected in 5.1 % and 10 noise poles were kept in all; so
    # 30 draws; 7 weak misses turned up once (seed 152045321, 2026-11-27: a binomial tail of about
    # 1e-3 at a 5 % rate), so the bound is 8, whose tail there is about 2e-5
    weak_missed = spurious = 0
    for _ in range(30):
        modes = resonances(clean + 1e-3 * generator.standard_normal(t.size), dt, noise_factor=0.0)
        assert modes.rank > 50 and modes.rejected > 40
        found = [bool(np.any(np.abs(modes.omega - w) < 1e-2)) for w in omega]
        assert found[0] and found[1], (seed, modes.omega)
        weak_missed += not found[2]
        spurious += len(modes) - sum(found)
    assert weak_missed <= 8 and spurious <= 6, (seed, weak_missed, spurious)
    # pure noise has no modes
    for _ in range(3):
        assert len(resonances(generator.standard_normal(500), 0.1)) == 0, seed


def test_band_complex_growing_and_constant():
    generator, seed = rng()
    dt = 0.02
    t = np.arange(500) * dt
    y = 2.0 + np.cos(3.0 * t) + 0.5 * np.exp(0.05 * t) * np.sin(11.0 * t)  # a constant and a growing mode
    modes = resonances(y, dt)
    assert len(modes) == 3
    assert np.allclose(modes.omega, [0.0, 3.0, 11.0], atol=1e-9) and np.allclose(modes.amplitude, [2.0, 1.0, 0.5])
    assert modes.decay[2] == pytest.approx(-0.05, abs=1e-9) and modes.q[2] == np.inf
    inside = resonances(y, dt, band=(1.0 / (2 * np.pi), 5.0 / (2 * np.pi)))
    assert inside.omega == pytest.approx([3.0]) and inside.out_of_band == 2
    # a complex signal: negative frequencies are modes of their own
    z = 0.7 * np.exp(-1j * 4.0 * t) + 0.3 * np.exp((1j * 6.5 - 0.02) * t)
    modes = resonances(z, dt)
    assert len(modes) == 2 and np.allclose(modes.amplitude, [0.7, 0.3]) and np.allclose(modes.omega, [4.0, 6.5])


@pytest.mark.parametrize("args, message", [
    (([1.0, 2.0, 3.0], 0.1), "at least 8 samples"),
    ((np.r_[np.zeros(10), np.nan], 0.1), "NaN"),
    ((np.zeros(20), 0.0), "positive"),
    ((np.ones(20), 0.1, (3.0, 1.0)), "band"),
])
def test_bad_input(args, message):
    series_, dt, *band = args
    with pytest.raises(InputError, match=message):
        resonances(series_, dt, band=band[0] if band else None)


# --------------------------------------------------------------------- a PEC cube cavity
#: an asymmetric initial field; its divergence (Ez depends on z, Ex on x) is a static part, a
#: mode of zero frequency
INITIAL = {"Ez": "x*(1-x)*y*(1-y)*(1+x+2*y)*exp(z)", "Ex": "y*(1-y)*z*(1-z)*(1+2*z-y+x)"}
PROBE = [0.31, 0.43, 0.27]  # off every symmetry plane of the cube
#: (l, m, n) of the modes checked: (1,1,0) TM, (1,1,1) TE and TM
CHECKED = {2: "(1,1,0)", 3: "(1,1,1)"}


def cavity(tmp_path, order, t_end=20.0, name="cavity"):
    data = {"mesh": {"elements": [2, 2, 2], "boundary": "pec"}, "discretization": {"order": order},
            "physics": {"equations": "maxwell"}, "initial": INITIAL, "time": {"t_end": t_end, "dt": 0.01},
            "output": {"every": 0, "formats": [], "probes": {"every": 4, "points": [PROBE], "fields": ["Ez", "Ex"]}}}
    out = tmp_path / f"{name}{order}"
    lobatto.run(lobatto.case_from_dict(data, name=name), output_dir=out, backend="cpu")
    return out


def relative_errors(modes) -> dict:
    errors = {}
    for squares in CHECKED:
        exact = np.pi * np.sqrt(squares)
        nearest = np.argmin(np.abs(modes.omega - exact))
        errors[squares] = abs(modes.omega[nearest] - exact) / exact
    return errors


def test_cavity_frequencies_converge_with_order(tmp_path):
    found = {}
    for order in (3, 5):
        out = cavity(tmp_path, order)
        got = probe_series(out, "p0", "Ez")
        kept, dt = uniform_step(got["time"], got["path"])
        assert dt == pytest.approx(0.04) and kept.size == 501
        modes = resonances(got["values"][kept], dt)
        found[order] = relative_errors(modes)
        # the strongest modes are cavity modes (or the static part)
        allowed = np.pi * np.sqrt([0, 2, 3, 5, 6])
        assert all(np.abs(allowed - w).min() < 1e-2 * max(w, 1) for w in modes.omega[:4]), modes.omega
    assert max(found[5].values()) < 1e-6, found
    for squares in CHECKED:
        assert found[5][squares] < found[3][squares] / 30, found


def test_cli_on_csv_and_hdf5(tmp_path, capsys):
    out = cavity(tmp_path, 4, t_end=12.0)
    assert main(["resonances", str(out), "--field", "Ex"]) == 0
    table = capsys.readouterr().out
    assert "Ex@p0" in table and "301 samples" in table
    assert main(["resonances", str(out / "cavity_probes.h5"), "--probe", "p0", "--field", "Ex"]) == 0
    assert capsys.readouterr().out.split("\n", 1)[1] == table.split("\n", 1)[1]  # the same modes
    # the row of the (1,1,0) mode, within the band around it
    f = np.sqrt(2) / 2
    assert main(["resonances", str(out), "--band", str(0.9 * f), str(1.1 * f)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert "1 mode " in rows[1] and float(rows[4].split()[1]) == pytest.approx(np.pi * np.sqrt(2), rel=1e-4)
    modes, _ = resonance_report(out, "p0", "Ez")
    assert relative_errors(modes)[2] < 1e-4
    for argv, message in [(["--field", "Hz"], "'Hz' is not sampled"), (["--probe", "p3"], "no probe p3"),
                          (["--probe", "x"], "expected a probe name"), (["--band", "2", "1"], "band")]:
        assert main(["resonances", str(out), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("lobatto: error:") and message in err and err.count("\n") == 1, err
    assert main(["resonances", str(tmp_path)]) == 2
    assert "no time series" in capsys.readouterr().err
