"""Bloch-periodic boundaries ([physics] bloch_k; systems/maxwell/bloch.py).

- The pair's energy rate sum M (eps E . dE/dt + mu H . dH/dt) over both parts is zero to
  round-off with the central flux and negative with upwind, on a deformed mesh periodic in x
  and y with random fields and k (C and pure-array backends).
- k = 0: each part is the plain periodic operator of that part, to round-off.
- A Bloch plane wave e^{i(q . x - omega t)}, q = k + G, on a box periodic in x and y (PEC z):
  the run matches it to the discretisation error, falling with N; plain periodic cannot hold it.
- The eigenfrequencies of an empty periodic box at a k: omega = c |k + G| from a pulse's probe
  series through lobatto.analysis.resonances; the band edges of a 1-D photonic crystal (a
  two-layer stack, [material]) at the zone edge against its analytic dispersion relation.
- An imported mesh with periodic faces (elements in random order, axes turned): L(u) of a Bloch
  plane wave is its time derivative.
- Sources and the PML: a current sheet with the phase e^{i k x} radiates a Bloch wave into a
  [pml] at both ends; R and T of a dielectric slab at 30 degrees (p) from such a sheet against
  the Airy formula (the small version of benchmarks/bloch_slab.py).
- The case file: the fields Ex_im .. Hz_im, k across a non-periodic axis, terms it does not take,
  bad values; snapshots name both parts and a restart continues bitwise.
"""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import Simulation, case_from_dict
from lobatto.config.schema import to_toml, tomllib
from lobatto.backends import get_backend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.errors import InputError
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.system import MaxwellSystem

from analytic import bump


def pair_system(backend, flux, k, epsilon=2.0, mu=1.5):
    mesh = box_mesh((3, 2, 2), periodic=(True, True, False), boundary="pec", deform=bump)
    return MaxwellSystem(mesh, 3, NumpyBackend() if backend == "numpy" else get_backend(backend), epsilon=epsilon,
                         mu=mu, flux=flux, bloch_k=k)


def rhs(system, u):
    be = system.backend
    return be.to_host(system.core_rhs(be.asarray(u), 0.0, be.asarray(np.zeros_like(u))))


def energy_rate(system, u, du):
    weights = [system.epsilon] * 3 + [system.mu] * 3
    return sum(float(np.sum(system.geometry.mass * weights[c % 6] * u[c] * du[c])) for c in range(u.shape[0]))


@pytest.mark.parametrize("backend", ["cpu", "numpy"])
def test_energy_conserved_with_central_and_not_growing_with_upwind(backend):
    rng = np.random.default_rng()
    k = (rng.uniform(-4, 4), rng.uniform(-4, 4), 0.0)
    for flux in ("central", "upwind"):
        system = pair_system(backend, flux, k)
        assert system.field_names[6:] == ("Ex_im", "Ey_im", "Ez_im", "Hx_im", "Hy_im", "Hz_im")
        u = rng.standard_normal(system.allocate_state().shape)
        assert u.shape[0] == 12
        du = rhs(system, u)
        scale = math.sqrt(energy_rate(system, u, u) * energy_rate(system, du, du))
        rate = energy_rate(system, u, du)
        if flux == "central":
            assert abs(rate) < 1e-13 * scale
        else:
            assert rate < -1e-3 * scale
        assert system.bloch.wrap_points == 2 * 16 * (2 * 2 + 3 * 2)  # x and y wraps, both sides, 16 per face
    # the phase matters: another k gives another operator
    other = pair_system(backend, "upwind", (k[0] + 1.0, k[1], 0.0))
    assert np.abs(rhs(other, u) - du).max() > 1e-2 * np.abs(du).max()


def test_zero_k_is_the_periodic_operator_on_each_part():
    rng = np.random.default_rng()
    pair = pair_system("cpu", "upwind", (0.0, 0.0, 0.0))
    plain = MaxwellSystem(pair.mesh, 3, get_backend("cpu"), epsilon=2.0, mu=1.5, flux="upwind")
    u = rng.standard_normal(pair.allocate_state().shape)
    du = rhs(pair, u)
    for part in (slice(0, 6), slice(6, 12)):
        want = rhs(plain, np.ascontiguousarray(u[part]))
        assert np.abs(du[part] - want).max() < 1e-13 * np.abs(want).max()
    assert abs(pair.energy(u) - plain.energy(u[:6]) - plain.energy(u[6:])) < 1e-13 * pair.energy(u)


#: the eigenfrequency test's run length and the error it reaches (measured: see the test)
T_END, ERROR = 12.0, 1e-6
#: the photonic crystal's band edges at N = 5 (measured: see the test)
CRYSTAL_ERROR = 1e-7
K = (2.0, 0.5, 0.0)  # radians per unit length: phases of 2 and 0.5 across the unit periods


def wave_case(order, bloch=True, G=(0.0, 0.0), t_end=0.5, flux="upwind", backend="cpu"):
    """E = z e^{i(q . x - omega t)}, q = k + G, H = q x E / (omega mu): periodic in x, y; PEC z."""
    qx, qy = K[0] + G[0], K[1] + G[1]
    omega = math.hypot(qx, qy)  # eps = mu = 1
    phase = f"({qx!r}*x + {qy!r}*y - {omega!r}*t)"
    fields = {"Ez": f"cos{phase}", "Hx": f"{qy / omega!r}*cos{phase}", "Hy": f"{-qx / omega!r}*cos{phase}"}
    if bloch:
        fields.update({"Ez_im": f"sin{phase}", "Hx_im": f"{qy / omega!r}*sin{phase}",
                       "Hy_im": f"{-qx / omega!r}*sin{phase}"})
    at_zero = {name: text.replace("*t)", "*0)") for name, text in fields.items()}
    physics = {"equations": "maxwell", **({"bloch_k": list(K)} if bloch else {})}
    return case_from_dict({
        "mesh": {"elements": [2, 2, 1], "periodic": [True, True, False], "upper": [1.0, 1.0, 0.5], "boundary": "pec"},
        "discretization": {"order": order, "flux": flux}, "physics": physics,
        "initial": at_zero, "exact": fields, "time": {"t_end": t_end}, "output": {"formats": []}}), backend


def wave_error(order, directory, **keys):
    case, backend = wave_case(order, **keys)
    sim = Simulation(case, backend=backend, output_dir=directory / f"wave{order}{len(keys)}", comm=None)
    sim.run()
    u = np.asarray(sim.system.backend.to_host(sim.u))
    exact = sim.system.evaluate_fields(case.exact.fields, sim.t)
    return np.abs(u - exact).max(), sim


def test_a_bloch_plane_wave_is_exact_to_the_discretisation_error(tmp_path):
    coarse, sim = wave_error(3, tmp_path)
    fine, _ = wave_error(5, tmp_path)
    # measured (t = 0.5, upwind): 2.6e-3, 1.5e-4, 6.7e-6, 2.4e-7 at N = 3, 4, 5, 6
    assert fine < 2e-5 and fine < 0.01 * coarse
    assert sim.system.summary(sim.stepper, None)["bloch"]["k"] == list(K)
    # q = k + G: the same k, a higher band (|q| = 7.3 on two elements a period: 9.0e-3 at N = 5)
    with_g, _ = wave_error(5, tmp_path, G=(-2 * math.pi, 2 * math.pi))
    assert with_g < 0.02
    # without the phase the same initial field is not periodic: the error is of order one (1.55)
    plain, _ = wave_error(5, tmp_path, bloch=False)
    assert plain > 0.1


def test_eigenfrequencies_of_an_empty_periodic_box(tmp_path):
    import lobatto
    from lobatto.analysis import resonances
    from lobatto.analysis.resonance_table import probe_series, uniform_step

    k = np.array([1.1, 0.0, 0.0])
    data = {"mesh": {"elements": [2, 1, 1], "periodic": [True, True, True], "upper": [1.0, 0.5, 0.5]},
            "discretization": {"order": 7, "flux": "central"},
            "physics": {"equations": "maxwell", "bloch_k": k.tolist()},
            # a smooth pulse (not Bloch-periodic itself: it excites every mode at this k)
            "initial": {"Ez": "exp(-30*((x-0.4)**2 + (y-0.25)**2))", "Ey_im": "exp(-30*((x-0.6)**2 + (z-0.2)**2))"},
            "time": {"t_end": T_END, "dt": 0.01}, "output": {"every": 0, "formats": [], "probes": {
                "every": 5, "points": [[0.31, 0.43, 0.27]], "fields": ["Ez", "Ey"]}}}
    out = tmp_path / "bloch"
    lobatto.run(lobatto.case_from_dict(data, name="bloch"), output_dir=out, backend="cpu")
    got = probe_series(out, "p0", "Ez")
    kept, dt = uniform_step(got["time"], got["path"])
    modes = resonances(got["values"][kept], dt)
    # omega = |k + G|, G = 2 pi (l, 2m, 2n) on the 1 x 0.5 x 0.5 box
    bands = sorted({float(np.linalg.norm(k + 2 * np.pi * np.array([l, 2 * m, 2 * n])))
                    for l in range(-2, 3) for m in range(-1, 2) for n in range(-1, 2)})
    strong = [w for w in modes.omega if w > 0.5][:3]  # the strongest (sorted by amplitude)
    errors = [min(abs(w - b) for b in bands) / w for w in strong]
    # measured: |k| = 1.1, |k - 2 pi| = 5.18, |k + 2 pi| = 7.38 to 5e-11, 2.4e-8, 1.4e-7
    assert len(strong) == 3 and max(errors) < ERROR, (strong, errors)
    assert sorted(np.argmin([abs(w - b) for b in bands]) for w in strong) == [0, 1, 2]


def bloch_case(**changes):
    data = {"mesh": {"elements": [2, 2, 1], "periodic": [True, True, False], "upper": [1.0, 1.0, 0.5],
                     "boundary": "pec"},
            "discretization": {"order": 2, "flux": "central"}, "physics": {"equations": "maxwell", "bloch_k": [1.5, -2.0, 0]},
            "initial": {"Ez": "sin(3*x)*cos(2*y)", "Hx_im": "cos(x + z)"}, "time": {"t_end": 0.2},
            "output": {"formats": []}}
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value}
    return data


def test_with_a_medium_the_pair_conserves_energy(tmp_path):
    rng = np.random.default_rng()
    case = case_from_dict(bloch_case(material={"slab": {"where": "0.3 - abs(x - 0.5)", "epsilon": 4.0, "mu": 1.3}}))
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    system = sim.system
    u = rng.standard_normal(system.allocate_state().shape)
    du = rhs(system, u)
    eps, mu = system.medium.epsilon, system.medium.mu  # per point
    rate = sum(float(np.sum(system.geometry.mass * (eps if c % 6 < 3 else mu) * u[c] * du[c])) for c in range(12))
    scale = float(np.sum(system.geometry.mass * (np.sum(u**2, axis=0)))) * np.abs(du).max()
    assert abs(rate) < 1e-13 * scale
    sim.run()
    assert list(case.to_dict()["physics"]["bloch_k"]) == [1.5, -2.0, 0.0]
    again = case_from_dict(tomllib.loads(to_toml(case.to_dict())))  # the effective configuration reads back
    assert again.physics.bloch_k == case.physics.bloch_k and again.initial.fields.keys() == case.initial.fields.keys()
    assert sim.system.summary(sim.stepper, None)["bloch"]["axes"] == ["x", "y"]


@pytest.mark.parametrize("change,message", [
    ({"physics": {"bloch_k": [1.0, 0.0]}}, r"\[physics\] bloch_k must be a list of 3 finite numbers"),
    ({"physics": {"bloch_k": [1.0, "a", 0.0]}}, r"\[physics\] bloch_k must be a list of 3 finite numbers"),
    ({"initial": {"Ez_imag": "1"}}, r"Ez_im"),
])
def test_case_file_errors(change, message):
    with pytest.raises(InputError, match=message):
        case_from_dict(bloch_case(**change))


@pytest.mark.parametrize("change,message", [
    ({"physics": {"bloch_k": [1.0, 0.0, 0.5]}}, r"bloch_k = \[1.0, 0.0, 0.5\] has a component along the z axis, "
                                                 "across which the mesh does not wrap"),
    ({"material": {"m": {"where": "0.5 - x", "model": "drude", "poles": [{"plasma_frequency": 1.0,
                                                                          "collision_frequency": 0.5}]}}},
     r"bloch_k: Bloch-periodic boundaries do not yet take dispersion"),
])
def test_set_up_errors(change, message, tmp_path):
    with pytest.raises(InputError, match=message):
        Simulation(case_from_dict(bloch_case(**change)), backend="cpu", output_dir=tmp_path, comm=None)


def crystal_relation(w, k, n1=2.0, d1=0.5, n2=1.0, d2=0.5):
    """cos(n1 w d1) cos(n2 w d2) - (n1/n2 + n2/n1)/2 sin sin - cos(k a): zero on the bands of the
    two-layer stack at normal incidence (c = 1)."""
    return (np.cos(n1 * w * d1) * np.cos(n2 * w * d2)
            - 0.5 * (n1 / n2 + n2 / n1) * np.sin(n1 * w * d1) * np.sin(n2 * w * d2) - np.cos(k * (d1 + d2)))


def test_band_edges_of_a_one_dimensional_photonic_crystal(tmp_path):
    import lobatto
    from lobatto.analysis import resonances
    from lobatto.analysis.resonance_table import probe_series, uniform_step

    k = math.pi  # the zone edge: the first gap's edges are the first two modes
    grid = np.linspace(0.1, 4.0, 4001)
    values = crystal_relation(grid, k)
    edges = []
    for i in np.nonzero(np.sign(values[:-1]) != np.sign(values[1:]))[0]:  # bisection to round-off
        lo, hi = grid[i], grid[i + 1]
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if np.sign(crystal_relation(mid, k)) == np.sign(values[i]) else (lo, mid)
        edges.append(0.5 * (lo + hi))
    assert len(edges) == 2 and abs(edges[0] - 1.68213) < 1e-4  # 1.6821320, 2.4619241
    data = {"mesh": {"elements": [4, 1, 1], "periodic": [True, True, True], "upper": [1.0, 0.25, 0.25]},
            "discretization": {"order": 5, "flux": "central"}, "physics": {"equations": "maxwell", "bloch_k": [k, 0, 0]},
            "material": {"layer": {"where": "0.5 - x", "epsilon": 4.0, "sampling": "element"}},
            "initial": {"Ez": "exp(-30*(x-0.3)**2)", "Ez_im": "x*exp(-30*(x-0.6)**2)"},
            "time": {"t_end": 10.0, "dt": 0.01}, "output": {"every": 0, "formats": [], "probes": {
                "every": 5, "points": [[0.31, 0.1, 0.1]], "fields": ["Ez"]}}}
    out = tmp_path / "crystal"
    lobatto.run(lobatto.case_from_dict(data, name="crystal"), output_dir=out, backend="cpu")
    got = probe_series(out, "p0", "Ez")
    kept, dt = uniform_step(got["time"], got["path"])
    modes = resonances(got["values"][kept], dt, band=(0.1 / (2 * math.pi), 3.0 / (2 * math.pi)))
    found = sorted(modes.omega)
    assert len(found) == 2, found
    errors = [abs(w - e) / e for w, e in zip(found, edges)]
    # measured: 1.68213734 and 2.46191883 to 2.7e-10 and 1.8e-9 (t_end 10 or 20 alike)
    assert max(errors) < CRYSTAL_ERROR, (found, edges, errors)


def test_snapshots_name_both_parts_and_a_restart_continues_bitwise(tmp_path):
    import h5py

    case = case_from_dict(bloch_case(time={"t_end": 0.8}, checkpoint={"every": 2, "keep": 5},
                                     output={"formats": ["hdf5"], "every": 4}))
    whole = Simulation(case, backend="cpu", output_dir=tmp_path / "whole", comm=None)
    whole.run()
    with h5py.File(sorted((tmp_path / "whole").glob("*.h5"))[-1]) as f:
        names = [str(n) for n in f.attrs["field_names"]]
        assert names[6:] == ["Ex_im", "Ey_im", "Ez_im", "Hx_im", "Hy_im", "Hz_im"]
        assert np.array_equal(f["fields/Hx_im"][:], whole.fields()["Hx_im"])
    first = sorted((tmp_path / "whole" / "checkpoints").iterdir())[0]
    again = Simulation(case, backend="cpu", output_dir=tmp_path / "again", comm=None).restart(first)
    assert again.step_count < whole.step_count
    again.run()
    assert again.step_count == whole.step_count and np.array_equal(again.backend.to_host(again.u), whole.backend.to_host(whole.u))


def test_a_mesh_file_with_periodic_faces_and_turned_elements():
    """Where the wrap is comes from the exchange, so an imported mesh (elements in random order,
    their axes turned) works as a box does: L(u) of a Bloch plane wave is its time derivative."""
    from mesh_checks import imported_box

    from lobatto.mesh.imported import hex_mesh_from_imported

    imported = imported_box((3, 2, 2), seed=6, periodic_x=True, lower=(-1.0, 0.0, 0.0), upper=(2.0, 1.0, 1.0))
    # E along y, H along z: exact between PEC y sides and PMC z sides
    mesh = hex_mesh_from_imported(imported, {"ymin": "pec", "ymax": "pec", "zmin": "pmc", "zmax": "pmc"})
    k = 1.3  # a phase of 3.9 across the period 3
    errors = {}
    for bloch in ((k, 0.0, 0.0), (0.0, 0.0, 0.0)):
        system = MaxwellSystem(mesh, 6, get_backend("cpu"), flux="upwind", bloch_k=bloch)
        x = system.geometry.coords[0]
        u = np.zeros(system.allocate_state().shape)
        u[1] = u[5] = np.cos(k * x)  # Re e^{i k x}: Ey, Hz
        u[7] = u[11] = np.sin(k * x)  # Im
        want = np.zeros_like(u)
        want[[1, 5]], want[[7, 11]] = k * u[[7, 11]], -k * u[[1, 5]]  # d/dt e^{i(kx - wt)} = -i w (...)
        errors[bloch[0]] = np.abs(rhs(system, u) - want).max() / k
    assert system.bloch.axes == (0,)
    assert errors[k] < 2e-5 and errors[0.0] > 1, errors  # measured: 6.8e-6 and 48 (the jump at the wrap)


def sheet_case(k, **changes):
    """A current sheet (a thin Gaussian in z) in a cell periodic in x and y, [pml] at both z ends."""
    data = {"mesh": {"elements": [1, 1, 12], "periodic": [True, True, False], "upper": [0.25, 0.25, 3.0],
                     "boundary": "pec"},
            "discretization": {"order": 4}, "physics": {"equations": "maxwell", "bloch_k": [k, 0.0, 0.0]},
            "pml": {"sides": ["zmin", "zmax"], "elements": 2},
            "source": {"sheet": {"type": "current",
                                 "Jy": "exp(-((t-1)/0.3)**2)*cos(2*pi*(t-1))*exp(-200*(z-1.1)**2)"}},
            "time": {"t_end": 2.5}, "output": {"formats": [], "every": 0, "probes": {
                "every": 2, "points": [[0.05, 0.1, 1.9], [0.2, 0.1, 1.9]], "fields": ["Ey", "Ey_im"]}}}
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value}
    return data


def test_a_phased_current_sheet_radiates_a_bloch_wave_into_the_pml(tmp_path):
    from lobatto.analysis.resonance_table import probe_series

    k = math.pi  # 30 degrees at f = 1
    sim = Simulation(case_from_dict(sheet_case(k), name="sheet"), backend="cpu", output_dir=tmp_path, comm=None)
    assert [t.name for t in sim.system.terms] == ["sources", "sources_im", "pml", "pml_im"]
    sim.run()
    series = {f"{field}@{p}": probe_series(tmp_path, p, field)["values"] for p in ("p0", "p1")
              for field in ("Ey", "Ey_im")}
    near = series["Ey@p0"] + 1j * series["Ey_im@p0"]
    far = series["Ey@p1"] + 1j * series["Ey_im@p1"]
    assert np.abs(near).max() > 1e-3
    # the source carries e^{i k x}, so the field does at every time: measured 1.1e-5 at N = 4
    assert np.abs(far - np.exp(1j * k * 0.15) * near).max() < 1e-4 * np.abs(near).max()
    summary = sim.system.summary(sim.stepper, None)
    assert summary["pml"]["elements"] == summary["pml_im"]["elements"] == 4


def slab_reflectance(omega, k_par, polarization, epsilon=2.25, thickness=0.5):
    """|r|^2 of a slab between vacua (Airy, Fresnel at the angle of (omega, k_par); c = 1)."""
    kz1, kz2 = np.sqrt(omega**2 - k_par**2 + 0j), np.sqrt(epsilon * omega**2 - k_par**2 + 0j)
    r12 = (kz1 - kz2) / (kz1 + kz2) if polarization == "s" else (epsilon * kz1 - kz2) / (epsilon * kz1 + kz2)
    phase = np.exp(2j * kz2 * thickness)
    return np.abs(r12 * (1 - phase) / (1 - r12**2 * phase)) ** 2


@pytest.mark.parametrize("polarization", ["p"])  # s: benchmarks/bloch_slab.py (this test's cost: 2 runs)
def test_oblique_reflection_and_transmission_of_a_slab(polarization, tmp_path):
    """The small version of benchmarks/bloch_slab.py: a phased current sheet at z = 0.75, the slab
    1.25 <= z <= 1.75 (eps = 2.25); `[output.dft] normalize` runs it without the slab first
    (runner/normalization.py). R and T, against Airy at theta(omega) (30 degrees at f = 1), from
    the transforms of E_re + i E_im at a probe between sheet and slab and one behind, and from
    the flux spectra of the complex field through the planes z = 1 and z = 2 (MaxwellSystem.
    flux_spectrum)."""
    from lobatto.analysis.resonance_table import probe_series

    k = math.pi
    omegas = 2 * math.pi * np.array([0.9, 1.0, 1.1])
    data = sheet_case(k, mesh={"elements": [1, 1, 11], "upper": [0.25, 0.25, 2.75]},
                      discretization={"order": 4}, time={"t_end": 10.0})
    current = "Jy" if polarization == "s" else "Jx"
    data["source"] = {"sheet": {"type": "current", current: "exp(-((t-3.6)/1.2)**2)*cos(2*pi*(t-3.6))*exp(-((z-0.75)/0.05)**2)"}}
    data["output"]["probes"] = {"every": 3, "points": [[0.1, 0.1, 1.0], [0.1, 0.1, 2.0]],
                                "fields": ["Ex", "Ey", "Ez", "Ex_im", "Ey_im", "Ez_im"]}
    data["output"]["dft"] = {"frequencies": list(omegas / (2 * math.pi)), "planes": ["z = 1", "z = 2"],
                             "fields": ["Ex"], "normalize": "z = 2"}
    data["material"] = {"slab": {"where": "0.25 - abs(z - 1.5)", "epsilon": 2.25, "sampling": "element"}}
    with pytest.raises(InputError, match="normalize needs the run without the"):  # a bare Simulation
        Simulation(case_from_dict(data, name="slab"), backend="cpu", output_dir=tmp_path / "bare", comm=None).run()
    lobatto.run(case_from_dict(data, name="slab"), backend="cpu", output_dir=tmp_path)
    spectra = {}
    for slab, out in ((True, tmp_path), (False, tmp_path / "normalization")):
        for probe in ("p0", "p1"):
            parts = [probe_series(out, probe, f) for f in ("Ex", "Ey", "Ez", "Ex_im", "Ey_im", "Ez_im")]
            t = parts[0]["time"]
            field = np.stack([parts[c]["values"] + 1j * parts[c + 3]["values"] for c in range(3)])
            spectra[slab, probe] = np.exp(1j * np.outer(omegas, t)) @ (field * np.gradient(t)).T
    vacuum_between, vacuum_behind = spectra[False, "p0"], spectra[False, "p1"]
    R = np.sum(np.abs(spectra[True, "p0"] - vacuum_between) ** 2, axis=1) / np.sum(np.abs(vacuum_between) ** 2, axis=1)
    T = np.sum(np.abs(spectra[True, "p1"]) ** 2, axis=1) / np.sum(np.abs(vacuum_behind) ** 2, axis=1)
    want = slab_reflectance(omegas, k, polarization)
    assert want.min() > 0.02  # something to reflect
    # measured at N = 4: R within 5.4e-4, T within 3.8e-4 of Airy (the benchmark at N = 5 on a
    # longer cell: 1.8e-5 and 1.4e-5); R of s and p differ by 0.085 to 0.105 here
    assert np.abs(R - want).max() < 2e-3 and np.abs(T - (1 - want)).max() < 2e-3, (R, T, want)
    with h5py.File(tmp_path / "slab_dft.h5", "r") as f:  # the flux spectra of the complex field
        flux_R = -f["surfaces/z = 1/normalized_scattered/poynting_flux"][()]  # the reflection runs to -z
        flux_T = f["surfaces/z = 2/normalized/poynting_flux"][()]
    assert np.abs(flux_R - want).max() < 2e-3 and np.abs(flux_T - (1 - want)).max() < 2e-3, (flux_R, flux_T, want)
