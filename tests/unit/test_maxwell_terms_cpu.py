"""The Maxwell stage terms' compiled CPU kernels (systems/maxwell/terms_cpu.py, kernels/terms.c)
and the per-point medium's compiled stage (cpu.py) against their array code: one stage on fresh
random data (the fold before the stage kernel where a != 0, prepare and finish where a = 0), and
a few steps of a Simulation with LOBATTO_ARRAY_TERMS=1 (the array code) against the default."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.jit import c as cbuild
from lobatto.systems.maxwell.terms_cpu import ARRAY_TERMS_VARIABLE

pytestmark = pytest.mark.skipif(not cbuild.available(), reason="no C compiler")
K = 5
POLES = [{"model": "drude", "plasma_frequency": 0.6, "collision_frequency": 0.1},
         {"model": "lorentz", "resonance_frequency": 0.5, "delta_epsilon": 1.2, "damping_frequency": 0.2},
         {"model": "debye", "delta_epsilon": 0.8, "relaxation_time": 2.0}]


def case_dict(media: bool) -> dict:
    """A K^3 box with a PML one element deep on all sides, a TF/SF box whose wave is at its
    surface from the start; with ``media``: a lossy dielectric ball and a ball ("slab") with
    three poles inside the TF/SF box, sampled per point (they cut elements: a partial weight),
    and a ball of two poles ("shell") from the scattered-field region into the layer at xmax,
    whose drive is Lambda E there (no medium but the background touches the TF/SF surface,
    which the incident wave assumes: checked when the run is set up)."""
    data = {"mesh": {"elements": [K] * 3, "upper": [float(K)] * 3, "boundary": "absorbing"},
            "discretization": {"order": 3}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": "exp(-((x-2.5)**2+(y-2.3)**2+(z-2.6)**2)/2)", "Hz": "0.3*sin(x)*cos(z)"},
            "time": {"t_end": 100.0}, "output": {"formats": [], "every": 0},
            "pml": {"sides": "all", "elements": 1},
            "source": {"wave": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0],
                                "lower": [1.0] * 3, "upper": [3.0, 4.0, 4.0], "origin": [1.0, 0, 0],
                                "waveform": "gaussian", "t0": 0.3, "width": 0.5}}}
    if media:  # a dipole too: its stage term adds it after the medium's compiled stage (source_term.py)
        data["source"]["dipole"] = {"type": "electric_dipole", "position": [2.1, 2.4, 2.6], "direction": [0, 1, 1],
                                    "waveform": "gaussian", "t0": 0.1, "width": 0.1}
        data["material"] = {
            "ball": {"where": "0.5 - (x-2)**2 - (y-3.25)**2 - (z-2.5)**2", "epsilon": 2.0, "sigma": 0.3},
            "slab": {"where": "0.5 - (x-2.2)**2 - (y-1.75)**2 - (z-2.5)**2", "epsilon": 1.5, "poles": POLES},
            "shell": {"where": "0.6 - (x-4.1)**2 - (y-2.5)**2 - (z-2.5)**2", "poles": POLES[:2]}}
    return data


def case(media: bool):
    return case_from_dict(case_dict(media), name="terms_cpu")


def simulation(media, tmp_path, array_code, monkeypatch):
    monkeypatch.setenv(ARRAY_TERMS_VARIABLE, "1" if array_code else "0")
    return Simulation(case(media), backend="cpu", output_dir=tmp_path / f"array{int(array_code)}", comm=None)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        return simulation(True, tmp_path_factory.mktemp("compiled"), False, mp)


def test_the_terms_and_the_medium_take_the_compiled_path(compiled):
    system = compiled.system
    names = sorted(t.name for t in system.terms)
    assert names == ["dispersion.shell", "dispersion.slab", "plane_wave.wave", "pml", "sources"]
    for term in system.terms:  # the dipole's term adds its point values after the stage (source_term.py)
        if term.name != "sources":
            assert term.compiled is not None and term.folds_in_stage, term.name
    slab = next(t for t in system.terms if t.name == "dispersion.slab")
    assert slab.weight is not None and 0 < float(np.mean(slab.weight)) < 1  # the ball cuts elements
    assert not isinstance(slab.minus_inv_epsilon, float)  # eps_inf per point
    assert system.medium.stage_kernel is not None and system.medium.arrays["sigma_over_epsilon"] is not None
    shell = next(t for t in system.terms if t.name == "dispersion.shell")  # reaches from the interior into the layer
    assert slab.stretch is None and shell.stretch is not None and 0 < shell._stretch_at[0].size < shell.count


# (a, b) of lsrk45's first and second stages: a = 0 takes prepare and finish, a != 0 the fold
@pytest.mark.parametrize("a, b", [(0.0, 0.1496590219993), (-0.4178904744998, 0.3792103129999)])
@pytest.mark.parametrize("name", ["pml", "plane_wave.wave", "dispersion.slab", "dispersion.shell"])
def test_one_stage_of_a_term_equals_its_array_code_on_random_data(compiled, name, a, b):
    system = compiled.system
    term = next(t for t in system.terms if t.name == name)
    rng = np.random.default_rng(7)
    shape = (6, system.num_elements) + (system.order + 1,) * 3
    u0, residual0, rate = rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(shape)
    aux0 = None if term.aux is None else rng.standard_normal(term.aux.shape)
    aux_residual0 = None if term.aux is None else rng.standard_normal(term.aux.shape)
    if name == "pml":  # a factor whose sigma is 0 on an element keeps q = 0 there (terms.c skips it)
        inactive = pml_inactive(term)
        assert inactive.any() and not inactive.all()
        aux0[inactive], aux_residual0[inactive] = 0.0, 0.0
    if name == "dispersion.shell":  # Lambda E - E from the layer, on the elements in it (zero elsewhere)
        term.stretch[:, term._stretch_at[0]] = rng.standard_normal((3, term._stretch_at[0].size) + shape[2:])
    dt, t = 0.037, 0.41
    results, kernels = [], term.compiled
    try:
        for c in (kernels, None):
            term.compiled = c
            u, residual = u0.copy(), residual0.copy()
            if aux0 is not None:
                term.aux[...], term.aux_residual[...] = aux0, aux_residual0
            fold = c is not None and a != 0
            if fold:
                term.fold(u, residual, t, a, b, dt)
            else:
                term.prepare(u, t)
            residual *= a  # the stage kernel: residual = a residual + dt L(u); u += b residual
            residual += dt * rate
            u += b * residual
            if not fold:
                term.finish(u, residual, a, b, dt)
            results.append([u, residual] + ([] if aux0 is None else [term.aux.copy(), term.aux_residual.copy()]))
    finally:
        term.compiled = kernels
    for got, want in zip(*results):
        scale = np.max(np.abs(want))
        assert np.max(np.abs(got - want)) <= 1e-13 * scale
    changed = np.abs(results[1][1] - (a * residual0 + dt * rate)) > 1e-12  # the term did something
    assert np.count_nonzero(changed) > 0


def pml_inactive(term) -> np.ndarray:
    """(18, m) True for the auxiliary fields (6 k + f) whose factor's sigma is 0 on the element."""
    nonzero = np.any(term._sigma != 0, axis=(2, 3, 4))  # (3, m)
    return np.array([[not nonzero[(f % 3 + k) % 3, i] for i in range(term.count)]
                     for k in range(3) for f in range(6)])


def test_the_layer_skips_its_zero_factors_and_they_stay_zero(tmp_path, monkeypatch):
    """Face-layer elements have one sigma direction: 12 of their 18 auxiliary fields are skipped."""
    sim = simulation(False, tmp_path, False, monkeypatch)
    sim.advance(3)
    term = next(t for t in sim.system.terms if t.name == "pml")
    inactive = pml_inactive(term)
    assert inactive.sum(axis=0).max() == 12 and inactive.sum(axis=0).min() == 0  # face layers, corners
    assert np.all(term.aux[inactive] == 0) and np.all(term.aux_residual[inactive] == 0)
    assert np.max(np.abs(term.aux[~inactive])) > 0


def test_steps_with_the_compiled_terms_equal_the_array_code(compiled, tmp_path, monkeypatch):
    reference = simulation(True, tmp_path, True, monkeypatch)
    assert all(getattr(t, "compiled", None) is None for t in reference.system.terms)
    assert reference.system.medium.stage_kernel is None
    sim = simulation(True, tmp_path, False, monkeypatch)
    for s in (sim, reference):
        s.advance(4)
    assert sim.t == reference.t and sim.t > 0
    u, want = np.asarray(sim.u), np.asarray(reference.u)
    assert np.max(np.abs(u - want)) <= 1e-13 * np.max(np.abs(want))
    for term in sim.system.terms:
        other = next(t for t in reference.system.terms if t.name == term.name)
        if term.aux is not None:
            scale = np.max(np.abs(other.aux))
            assert scale > 0 and np.max(np.abs(term.aux - other.aux)) <= 1e-13 * scale, term.name


def test_kernels_refuse_wrong_arrays(compiled):
    term = next(t for t in compiled.system.terms if t.name == "pml")
    u = np.zeros((6, compiled.system.num_elements) + (compiled.system.order + 1,) * 3)
    with pytest.raises(TypeError, match="pml_stage: sigma"):
        term.compiled.pml(u, u, term.rate, term.aux, term.aux_residual, term.aux_rate, term._sigma[:2],
                          term._active, term.elements, term.alpha, False, 0.0, 0.0, 0.0)
    with pytest.raises(TypeError, match="u must be a C-contiguous"):
        term.compiled.finish(u.astype(np.float32), u, term.rate, term.aux, term.aux_residual, term.aux_rate,
                             term.elements, 6, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="element ids"):
        term.compiled.finish(u, u, term.rate, term.aux, term.aux_residual, term.aux_rate, term.elements + u.shape[1],
                             6, 0.0, 1.0, 1.0)


def test_the_discrete_incident_wave_steps_as_its_array_code(tmp_path, monkeypatch):
    """incident_field = "discrete" (tfsf_discrete.py): its update of u and v runs compiled."""
    data = case_dict(False)
    del data["pml"]
    data["source"]["wave"]["incident_field"] = "discrete"
    runs = []
    for array_code in (True, False):
        monkeypatch.setenv(ARRAY_TERMS_VARIABLE, "1" if array_code else "0")
        sim = Simulation(case_from_dict(data, name="discrete"), backend="cpu", output_dir=tmp_path / f"d{array_code}",
                         comm=None)
        assert (sim.system.terms[0].compiled is None) == array_code
        sim.advance(4)
        runs.append((np.asarray(sim.u), np.asarray(sim.system.terms[0].aux)))
    for got, want in zip(runs[1], runs[0]):
        assert np.max(np.abs(want)) > 0 and np.max(np.abs(got - want)) <= 1e-13 * np.max(np.abs(want))


def test_float32_kernels_step_as_the_array_code(tmp_path, monkeypatch):
    """The float32 libraries (REAL = float): the same run to float32 round-off."""
    data = case_dict(True)
    data["backend"] = {"precision": "float32"}
    runs = []
    for array_code in (True, False):
        monkeypatch.setenv(ARRAY_TERMS_VARIABLE, "1" if array_code else "0")
        sim = Simulation(case_from_dict(data, name="f32"), backend="cpu", output_dir=tmp_path / f"f{array_code}",
                         comm=None)
        assert sim.u.dtype == np.float32 and all((t.compiled is None) == array_code for t in sim.system.terms if t.name != "sources")
        sim.advance(4)
        runs.append(np.asarray(sim.u, dtype=np.float64))
    assert np.max(np.abs(runs[1] - runs[0])) <= 1e-5 * np.max(np.abs(runs[0]))
