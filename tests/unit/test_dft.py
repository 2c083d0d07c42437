"""Running Fourier transforms, ``[output.dft]`` (lobatto/monitors/dft.py, docs/electromagnetics.md): a
single-frequency plane wave's transform is its amplitude and its flux through the planes x = 0
and x = 1 is the time-averaged Poynting flux; a cavity run's transform at its resonance is the
mode; the file, the summary, the errors."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.cli import main
from lobatto.config.dft import DftSection
from lobatto.monitors.dft import DftMonitor
from lobatto.errors import InputError


def rng():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    return np.random.default_rng(seed), seed


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    """A Maxwell system on 2 x 3 x 2 elements, periodic in y and z (the x sides are surfaces)."""
    case = lobatto.case_from_dict({"mesh": {"elements": [2, 3, 2], "periodic": [False, True, True],
                                            "upper": [1.0, 1.5, 0.8]}, "discretization": {"order": 4},
                                   "time": {"t_end": 0.01}, "output": {"every": 0, "formats": []}}, name="pw")
    return lobatto.run(case, output_dir=tmp_path_factory.mktemp("pw"), backend="cpu").simulation.system


def test_plane_wave_transform_is_its_amplitude_and_flux_is_the_mean_power(system):
    generator, seed = rng()
    amplitude, phase = generator.uniform(0.5, 2.0), generator.uniform(-np.pi, np.pi)
    f = float(generator.choice([0.5, 1.0, 1.5]))
    omega = 2 * np.pi * f
    section = DftSection(frequencies=(f, 7.0), fields=("Ey", "Hz"), surfaces=("xmin", "xmax"), regions=("all",),
                         flux=("poynting_flux",))
    monitor = DftMonitor(section, system)
    x = system.geometry.coords[0]
    names = system.field_names
    duration, steps = 6 / f, 240  # whole periods of both frequencies: the trapezoid is exact
    for k in range(steps + 1):
        t = k * duration / steps
        u = np.zeros((len(names),) + x.shape)
        wave = amplitude * np.cos(omega * (t - x) + phase)  # E = y Ey, H = z Hz, travelling along +x
        u[names.index("Ey")] = u[names.index("Hz")] = wave
        monitor.accumulate(u, t)
    results = monitor.results()
    volume = results[("region", "all")]["transform"]  # (F, fields, E, n, n, n)
    expected = amplitude * np.exp(1j * (phase - omega * x))
    assert np.abs(2 * volume[0, 0] / duration - expected).max() < 1e-12, seed
    assert np.abs(2 * volume[0, 1] / duration - expected).max() < 1e-12, seed
    assert np.abs(volume[1]).max() < 1e-12 * duration, seed  # orthogonal frequency
    # the flux per frequency, of the amplitudes: 1/2 A^2 times the area 1.5 x 0.8, outward
    area = 1.5 * 0.8
    for side, sign in (("xmin", -1), ("xmax", 1)):
        flux = results[("surface", side)]["flux"]["poynting_flux"] * (2 / duration) ** 2
        assert flux[0] == pytest.approx(sign * 0.5 * amplitude**2 * area, rel=1e-12), (seed, side)
        assert abs(flux[1]) < 1e-12
        surface = results[("surface", side)]
        assert surface["coordinates"][0].min() == surface["coordinates"][0].max() == (0.0 if sign < 0 else 1.0)


CAVITY = """
[mesh]
elements = [2, 2, 2]
boundary = "pec"
[discretization]
order = 5
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[time]
t_end = {t_end}
dt = {dt}
[output]
every = 0
formats = []
[output.dft]
frequencies = [{f0}, 0.3]
fields = ["Ez"]
regions = ["all"]
surfaces = ["xmin", "ymax"]
"""


def test_cavity_run_transform_is_the_mode(tmp_path, capsys):
    f0 = float(np.sqrt(2) / 2)  # TM110: Ez = sin(pi x) sin(pi y) cos(sqrt(2) pi t)
    t_end = 8 / f0  # eight periods
    case = tmp_path / "cavity.toml"
    case.write_text(CAVITY.format(f0=repr(f0), t_end=repr(t_end), dt=repr(t_end / 800)))
    assert main(["run", str(case), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    import json

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["time_series"]["dft"] == {"file": "cavity_dft.h5", "frequencies": [f0, 0.3], "steps": 801}
    with h5py.File(tmp_path / "out" / "cavity_dft.h5", "r") as f:
        assert f["frequencies"][:].tolist() == [f0, 0.3]
        assert f.attrs["t_last"] == pytest.approx(t_end) and f.attrs["samples"] == 801
        assert "[output.dft]" in f.attrs["config"]
        ez, xyz = f["regions/all/Ez"][:], f["regions/all/coordinates"][:]
        assert np.all(np.diff(f["regions/all/element_ids"][:]) > 0)
        mode = np.sin(np.pi * xyz[0]) * np.sin(np.pi * xyz[1])
        # to the discretization error: the interpolated initial field excites other discrete
        # modes at about 1e-5, which a window of eight periods does not fully reject
        assert np.abs(2 * ez[0] / t_end - mode).max() < 3e-4
        assert np.abs(2 * ez[1] / t_end).max() < 0.05  # off resonance: the window's leakage only
        # PEC walls: no power through them (the tangential E of the discrete field is small, not zero)
        for side in ("xmin", "ymax"):
            flux = f[f"surfaces/{side}/flux/poynting_flux"][:] * (2 / t_end) ** 2
            assert np.abs(flux).max() < 1e-4, (side, flux)
            assert set(f[f"surfaces/{side}"].keys()) >= {"Ex", "Ey", "Ez", "Hx", "Hy", "Hz", "faces", "element_ids"}


@pytest.mark.parametrize("change, message", [
    ({"frequencies": []}, "[output.dft] frequencies must be a non-empty list"),
    ({"frequencies": [1.0, -2.0]}, "frequencies[1] must be a number from 0 to 1e+30"),
    ({"fields": ["Qx"]}, 'unknown field of maxwell "Qx"'),
    ({"flux": ["energy"]}, "'energy' is a volume integrand"),
    ({"surfaces": [], "regions": []}, "nowhere to transform"),
    ({"window": 1}, "unknown key 'output.dft.window'"),
])
def test_case_errors(change, message):
    dft = {"frequencies": [1.0], "regions": ["all"], **change}
    with pytest.raises(InputError) as err:
        lobatto.case_from_dict({"mesh": {"elements": [1, 1, 1]}, "time": {"t_end": 0.1}, "output": {"dft": dft}})
    assert message in str(err.value)


def test_mesh_errors_and_restart(tmp_path, capsys):
    base = CAVITY.format(f0="1.0", t_end="0.2", dt="0.01")
    for old, new, message in [('surfaces = ["xmin", "ymax"]', 'surfaces = ["top"]', "'top' has no boundary faces"),
                              ('regions = ["all"]', 'regions = ["core"]', "no region 'core'")]:
        case = tmp_path / "bad.toml"
        case.write_text(base.replace(old, new))
        assert main(["run", str(case), "--output", str(tmp_path / "bad"), "--quiet", "--overwrite"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    case = tmp_path / "ck.toml"
    case.write_text(base + "[checkpoint]\nevery = 10\n")
    assert main(["run", str(case), "--output", str(tmp_path / "ck"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", str(case), "--output", str(tmp_path / "ck"), "--quiet", "--restart", "latest",
                 "--overwrite"]) == 2
    assert "cannot continue from a checkpoint" in capsys.readouterr().err
