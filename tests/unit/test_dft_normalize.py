"""``[output.dft] normalize`` (runner/normalization.py): the incident run without the [material]
tables, the fluxes it adds (incident, scattered, normalised) and its errors.

The slab example checks R and T against the Airy formula (test_example_dielectric_slab.py);
tests/mpi/test_dft_ranks.py the same files on 1, 2 and 3 ranks."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.cli import main
from lobatto.errors import InputError

CASE = {
    "mesh": {"elements": [4, 1, 1], "upper": [1.0, 0.25, 0.25], "periodic": [False, True, True],
             "boundary": "absorbing"},
    "discretization": {"order": 5},
    "initial": {"Ey": "exp(-((x-0.3)/0.08)**2)", "Hz": "exp(-((x-0.3)/0.08)**2)"},
    "time": {"t_end": 3.0, "cfl": 0.5},
    "material": {"slab": {"where": "(x - 0.5)*(0.75 - x)", "sampling": "element", "epsilon": 3.0}},
    "output": {"formats": [], "dft": {"frequencies": [0.8, 1.6], "surfaces": ["xmin", "xmax"],
                                      "planes": ["x = 0.25"], "fields": ["Ey"], "normalize": "xmax"}},
}


def read(path):
    with h5py.File(path, "r") as f:
        out = {}
        f.visititems(lambda name, item: out.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None)
        return out, dict(f.attrs)


def test_fluxes_of_the_incident_and_scattered_fields(tmp_path):
    result = lobatto.run(CASE, backend="cpu", output_dir=tmp_path / "run")
    assert result.summary["time_series"]["dft"]["normalized_by"] == "xmax"
    run, attrs = read(tmp_path / "run" / "case_dft.h5")
    incident, _ = read(tmp_path / "run" / "normalization" / "case_dft.h5")
    assert attrs["normalized_by"] == "xmax"
    for side in ("xmin", "xmax", "x = 0.25"):
        # the incident flux is the incident run's own flux, face for face
        assert np.allclose(run[f"surfaces/{side}/flux_incident/poynting_flux"],
                           incident[f"surfaces/{side}/flux/poynting_flux"], rtol=1e-12, atol=1e-300)
        reference = run["surfaces/xmax/flux_incident/poynting_flux"]
        assert np.allclose(run[f"surfaces/{side}/normalized/poynting_flux"],
                           run[f"surfaces/{side}/flux/poynting_flux"] / reference, rtol=1e-12)
    # the scattered field at x = 0.25 (between the pulse's start and the slab) is the reflection
    # alone: its flux through the plane (normal +x) is negative, and its power equals the one
    # leaving through xmin (outward normal), as nothing else is between them
    back = run["surfaces/x = 0.25/normalized_scattered/poynting_flux"]
    out_left = run["surfaces/xmin/normalized_scattered/poynting_flux"]
    assert np.all(back < 0) and np.all(out_left > 1e-3)
    assert np.allclose(-back, out_left, rtol=5e-3)  # measured 1.4e-3
    # lossless: the reflected and transmitted powers make up the incident one
    total = out_left + run["surfaces/xmax/normalized/poynting_flux"]
    assert np.allclose(total, 1.0, atol=3e-3), total  # measured 7e-4, 1.2e-3
    n, f = np.sqrt(3.0), np.array([0.8, 1.6])  # the Airy reflectance of the slab, d = 0.25
    phase = np.exp(-2j * (2 * np.pi * f * n * 0.25))
    r12 = (1 - n) / (1 + n)
    assert np.allclose(out_left, np.abs(r12 * (1 - phase) / (1 - r12**2 * phase)) ** 2, rtol=1e-2)  # 5.8e-3, 1e-4
    # the incident run's pulse runs to +x only: through xmin 3e-5 of its flux (the initial
    # Gaussian's tail at the wall, N = 5)
    assert np.max(np.abs(incident["surfaces/xmin/flux/poynting_flux"])) < 1e-4 * np.max(reference)


NO_MATERIAL = """
[mesh]
elements = [2, 1, 1]
periodic = [false, true, true]
boundary = "absorbing"
[discretization]
order = 2
[initial]
Ey = "exp(-((x-0.3)/0.1)**2)"
[time]
t_end = 0.1
[output]
formats = []
[output.dft]
frequencies = [1.0]
surfaces = ["xmin", "xmax"]
normalize = "xmax"
"""


def test_errors(tmp_path, capsys):
    bad = {**CASE, "output": {**CASE["output"], "dft": {**CASE["output"]["dft"], "normalize": "ymin"}}}
    with pytest.raises(InputError, match=r'normalize must be the name of one of this table.s surfaces.*"x = 0.25"'):
        lobatto.case_from_dict(bad)
    spelled = {**CASE, "output": {**CASE["output"], "dft": {**CASE["output"]["dft"], "normalize": "x=0.250"}}}
    assert lobatto.case_from_dict(spelled).output.dft.normalize == "x = 0.25"  # as planes accepts it
    no_flux = {**CASE, "output": {**CASE["output"], "dft": {**CASE["output"]["dft"], "flux": []}}}
    with pytest.raises(InputError, match="normalize divides fluxes"):
        lobatto.case_from_dict(no_flux)
    (tmp_path / "plain.toml").write_text(NO_MATERIAL)
    assert main(["run", str(tmp_path / "plain.toml"), "--output", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "normalize divides by a run without the [material.<name>] tables, but the case has none" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_restart_is_refused_before_the_incident_run(tmp_path):
    """[output.dft] cannot continue from a checkpoint: refused before the incident run starts
    (no normalization/ directory is written)."""
    from lobatto.runner.simulation import run_case

    case = lobatto.case_from_dict(CASE)
    with pytest.raises(InputError, match=r"\[output.dft\] cannot continue from a checkpoint"):
        run_case(case, backend="cpu", output_dir=tmp_path / "run", comm=None, restart=tmp_path / "nowhere")
    assert not (tmp_path / "run" / "normalization").exists()


def test_the_incident_run_with_a_decay_stop_watches_the_energy(tmp_path):
    """With [time] until_decayed, a probe on the reflection side sees next to nothing in the
    incident run (no slab): it would stop that run on the numerical tail before the pulse has
    crossed xmax. The incident run watches the energy instead (to the threshold squared), and
    its flux through xmax equals a fixed-length run's."""
    case = dict(CASE, time={"t_end": 3.0, "cfl": 0.5, "until_decayed": 1e-6, "decay_interval": 0.1},
                output={**CASE["output"], "probes": {"points": [[0.05, 0.125, 0.125]], "fields": ["Ey"]}})
    lobatto.run(case, backend="cpu", output_dir=tmp_path / "decay")
    lobatto.run(CASE, backend="cpu", output_dir=tmp_path / "fixed")
    decayed, _ = read(tmp_path / "decay" / "normalization" / "case_dft.h5")
    fixed, _ = read(tmp_path / "fixed" / "normalization" / "case_dft.h5")
    reference = fixed["surfaces/xmax/flux/poynting_flux"]
    assert np.allclose(decayed["surfaces/xmax/flux/poynting_flux"], reference, rtol=1e-5), (decayed, reference)
