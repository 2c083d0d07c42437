"""``[output.dft] taper`` (monitors/dft.py taper_weight): the transform of a pulse cut by the
record's end is the windowed signal's (quadrature, fresh random parameters); a continuous wave
cut mid-period leaks into a frequency away from its own by the closed-form amounts with and
without the window (a factor over 10); the key's checks, the file's attributes, and the
incident run of ``normalize`` has the same window."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from scipy.integrate import quad

import lobatto
from lobatto.cli import main
from lobatto.config.dft import DftSection
from lobatto.errors import InputError
from lobatto.monitors.dft import DftMonitor, taper_weight
from lobatto.runner.normalization import incident_case


def rng():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    return np.random.default_rng(seed), seed


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    """A small Maxwell system (one element: the signal is the same at every point)."""
    case = lobatto.case_from_dict({"mesh": {"elements": [1, 1, 1]}, "discretization": {"order": 1},
                                   "time": {"t_end": 0.01}, "output": {"every": 0, "formats": []}}, name="one")
    return lobatto.run(case, output_dir=tmp_path_factory.mktemp("one"), backend="cpu").simulation.system


def transform(system, signal, frequencies, t_end, taper, steps):
    """The monitor's transform of u(t) = signal(t) s(x) (s random) over [0, t_end], divided by s."""
    section = DftSection(frequencies=tuple(frequencies), fields=("Ey",), surfaces=(), regions=("all",), flux=(),
                         taper=taper)
    monitor = DftMonitor(section, system, t_end=t_end)
    shape = np.random.default_rng(0).uniform(0.5, 1.5, system.geometry.coords[0].shape)
    u = np.zeros((len(system.field_names),) + shape.shape)
    for k in range(steps + 1):
        t = k * t_end / steps
        u[system.field_names.index("Ey")] = signal(t) * shape
        monitor.accumulate(u, t)
    values = monitor.results()[("region", "all")]["transform"][:, 0] / shape[None]
    assert np.ptp(values.real, axis=tuple(range(1, values.ndim))).max() < 1e-12 * max(np.abs(values).max(), 1)
    return values.reshape(len(frequencies), -1)[:, 0]


def test_the_window():
    generator, seed = rng()
    t0, t_end, taper = generator.uniform(-1, 1), generator.uniform(2, 5), generator.uniform(0.05, 0.95)
    t1 = t_end - taper * (t_end - t0)
    assert taper_weight(t0, t0, t_end, taper) == taper_weight(t1, t0, t_end, taper) == 1.0, seed
    assert taper_weight(0.5 * (t1 + t_end), t0, t_end, taper) == pytest.approx(0.5, abs=1e-12), seed
    assert taper_weight(t_end, t0, t_end, taper) == 0.0 == taper_weight(t_end + 1, t0, t_end, taper)
    assert taper_weight(t_end, t0, t_end, 0.0) == 1.0


def test_a_cut_pulse_is_the_windowed_signals_transform(system):
    """A Gaussian pulse still ringing at the end: the trapezoid over 2,000 steps against the
    quadrature of w(t) g(t) e^(-2 pi i f t), to 1e-5 of the pulse's spectrum at its centre."""
    generator, seed = rng()
    amplitude, fc, phase = generator.uniform(0.5, 2), generator.uniform(0.8, 1.2), generator.uniform(-np.pi, np.pi)
    t_end, width = generator.uniform(8, 10), generator.uniform(1.0, 1.5)
    centre, taper = t_end - generator.uniform(0.5, 1.5) * width, generator.uniform(0.2, 0.5)

    def pulse(t):
        return amplitude * np.exp(-(((t - centre) / width) ** 2)) * np.cos(2 * np.pi * fc * t + phase)

    frequencies = [fc, fc + generator.uniform(0.2, 0.4)]
    found = transform(system, pulse, frequencies, t_end, taper, 2000)
    bare = transform(system, pulse, frequencies, t_end, 0.0, 2000)
    t1 = t_end - taper * t_end

    def window(t):  # written out here: the reference does not use the code under test
        return 1.0 if t <= t1 else 0.5 + 0.5 * np.cos(np.pi * (t - t1) / (t_end - t1))

    scale = amplitude * width * np.sqrt(np.pi) / 2  # the whole pulse's transform at fc
    for f, value, plain in zip(frequencies, found, bare):
        parts = [quad(lambda t: window(t) * pulse(t) * part(2 * np.pi * f * t), a, b,
                      limit=200, epsabs=1e-13, epsrel=1e-13)[0]
                 for part in (np.cos, np.sin) for a, b in ((0.0, t1), (t1, t_end))]
        expected = parts[0] + parts[1] - 1j * (parts[2] + parts[3])
        assert abs(value - expected) < 1e-5 * scale, (seed, f, value, expected)
        assert abs(plain - expected) > 1e-2 * scale, (seed, f)  # the window matters here


def cw_leak(f0, phase, f, t_end, ramp, taper):
    """Closed form of the integral over [0, t_end] of r(t) w(t) cos(2 pi f0 t + phase) e^(-2 pi i f t):
    r the sin^2 ramp over [0, ramp], w the window; every factor a sum of exponentials."""
    def times(p, q):
        return [(a * b, x + y) for a, x in p for b, y in q]

    def integral(terms, a, b):
        return sum(c * ((np.exp(1j * x * b) - np.exp(1j * x * a)) / (1j * x) if x else b - a) for c, x in terms)

    kernel = times([(0.5 * np.exp(1j * phase), 2 * np.pi * f0), (0.5 * np.exp(-1j * phase), -2 * np.pi * f0)],
                   [(1.0, -2 * np.pi * f)])
    t1 = t_end - taper * t_end
    total = integral(times(kernel, [(0.5, 0.0), (-0.25, np.pi / ramp), (-0.25, -np.pi / ramp)]), 0.0, ramp)
    total += integral(kernel, ramp, t1)
    if taper:
        rate = np.pi / (t_end - t1)
        total += integral(times(kernel, [(0.5, 0.0), (0.25 * np.exp(-1j * rate * t1), rate),
                                         (0.25 * np.exp(1j * rate * t1), -rate)]), t1, t_end)
    return total


def test_a_continuous_wave_cut_mid_period_leaks_less_by_the_expected_factor(system):
    """A wave switched on smoothly and cut mid-period by the record's end leaks into f0 + 1 by the
    step at the cut; the window removes the step: the leak falls by the closed-form factor
    (over 10 for any draw here: 11.7 at least in 2,000 draws)."""
    generator, seed = rng()
    f0, phase = generator.uniform(0.8, 1.2), generator.uniform(-np.pi, np.pi)
    t_end, taper, ramp = (10 + generator.uniform(0.25, 0.75)) / f0, generator.uniform(0.25, 0.4), 3.0

    def wave(t):
        return (0.5 - 0.5 * np.cos(np.pi * t / ramp) if t < ramp else 1.0) * np.cos(2 * np.pi * f0 * t + phase)

    away = f0 + 1.0
    plain = transform(system, wave, [away], t_end, 0.0, 2000)[0]
    tapered = transform(system, wave, [away], t_end, taper, 2000)[0]
    expected_plain, expected_tapered = cw_leak(f0, phase, away, t_end, ramp, 0.0), cw_leak(f0, phase, away, t_end,
                                                                                           ramp, taper)
    assert abs(plain - expected_plain) < 1e-3 * abs(expected_plain), (seed, plain, expected_plain)
    assert abs(tapered - expected_tapered) < 1e-3 * abs(expected_tapered), (seed, tapered, expected_tapered)
    factor = abs(expected_plain) / abs(expected_tapered)
    assert factor > 10 and abs(plain) / abs(tapered) == pytest.approx(factor, rel=2e-3), seed


CASE = {"mesh": {"elements": [2, 1, 1], "periodic": [False, True, True]}, "discretization": {"order": 2},
        "time": {"t_end": 0.5}, "initial": {"Ey": "exp(-((x-0.5)/0.2)**2)"},
        "output": {"formats": [], "dft": {"frequencies": [1.0], "planes": ["x = 0.5"], "flux": ["poynting_flux"],
                                          "taper": 0.25}}}


@pytest.mark.parametrize("change, message", [
    ({"taper": 1.0}, "[output.dft] taper must be a number >= 0 and < 1"),
    ({"taper": -0.1}, "[output.dft] taper must be a number >= 0 and < 1"),
    ({"taper": True}, "[output.dft] taper must be a number"),
])
def test_bad_values(change, message):
    data = dict(CASE, output=dict(CASE["output"], dft=dict(CASE["output"]["dft"], **change)))
    with pytest.raises(InputError) as err:
        lobatto.case_from_dict(data)
    assert message in str(err.value)


def test_the_end_must_be_known_and_normalize_uses_the_same_window(tmp_path, capsys):
    case = lobatto.case_from_dict(CASE)
    assert case.output.dft.taper == 0.25 and case.to_dict()["output"]["dft"]["taper"] == 0.25
    assert "taper" not in lobatto.case_from_dict(dict(CASE, output=dict(CASE["output"], dft={
        k: v for k, v in CASE["output"]["dft"].items() if k != "taper"}))).to_dict()["output"]["dft"]
    normalized = dict(CASE, material={"slab": {"where": "x - 1.5", "epsilon": 2.0}},
                      output=dict(CASE["output"], dft=dict(CASE["output"]["dft"], normalize="x = 0.5")))
    incident = incident_case(lobatto.case_from_dict(normalized))
    assert incident.output.dft.taper == 0.25 and incident.time.t_end == 0.5
    text = tmp_path / "decay.toml"
    text.write_text(lobatto.case_from_dict(CASE).to_toml().replace("[time]\n", "[time]\nuntil_decayed = 1e-6\n"
                                                                             "decay_interval = 0.1\n"))
    assert main(["run", str(text), "--output", str(tmp_path / "decay"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "taper = 0.25" in err and "until_decayed stops the run" in err, err


def test_the_file_records_the_taper_and_the_incident_run_has_it(tmp_path):
    """With normalize: the incident run's own file has the same window, and its flux is the
    run's flux_incident (so both transforms were tapered alike)."""
    data = dict(CASE, material={"slab": {"where": "x - 0.75", "epsilon": 2.0}},
                output=dict(CASE["output"], dft=dict(CASE["output"]["dft"], normalize="x = 0.5")))
    result = lobatto.run(lobatto.case_from_dict(data, name="tp"), output_dir=tmp_path, backend="cpu")
    assert result.simulation.t == pytest.approx(0.5)
    with h5py.File(tmp_path / "tp_dft.h5", "r") as f, h5py.File(tmp_path / "normalization" / "tp_dft.h5", "r") as g:
        for file in (f, g):
            assert file.attrs["taper"] == 0.25 and file.attrs["t_end"] == 0.5
            assert file.attrs["t_last"] == pytest.approx(0.5) and "taper = 0.25" in file.attrs["config"]
        incident, own = f["surfaces/x = 0.5/flux_incident/poynting_flux"][()], g["surfaces/x = 0.5/flux/poynting_flux"][()]
        assert np.abs(own).max() > 0 and np.array_equal(incident, own)
