"""Waveguide ports and S-parameters (systems/maxwell/ports.py, port_modes.py, port_launch.py,
port_results.py, runner/ports.py, io/touchstone.py): the analytic rectangular modes, the
decomposition's signs on exact travelling waves, the Touchstone writer read back by
scikit-rf, an empty guide's S-matrix against exp(-i beta L) (the .s2p read by scikit-rf, the
HDF5 by h5py), and the one-line errors."""

from __future__ import annotations

import copy
import json

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import case_from_dict
from lobatto.discretization import gll_points
from lobatto.errors import InputError
from lobatto.io.summary import format_summary_table
from lobatto.io.touchstone import write_touchstone
from lobatto.runner.simulation import Simulation
from lobatto.systems.maxwell.port_launch import PortPlane
from lobatto.systems.maxwell.port_modes import face_weights, impedance, rectangular_mode
from lobatto.systems.maxwell.port_results import scattering, waves
from lobatto.systems.maxwell.ports import PortSpec



def read_touchstone(path):
    """The file as scikit-rf reads it (the test extra has it; skipped where it is missing, as on
    the GPU machine, which runs test_ports_gpu.py importing this module)."""
    skrf = pytest.importorskip("skrf")
    return skrf.Network(str(path))

#: a 1 x 0.5 guide along z, [pml] at both ends (2 elements); TE10 (cutoff 0.5) over 0.6 - 0.9;
#: port "in" driven (one run; both: benchmarks/ports_waveguide.py, tests/mpi/ports_ranks.py)
GUIDE = {
    "mesh": {"elements": [2, 1, 10], "upper": [1.0, 0.5, 5.0]},
    "discretization": {"order": 3},
    "physics": {"equations": "maxwell"},
    "time": {"t_end": 60.0, "until_decayed": 1e-6, "decay_interval": 2.0},  # stops near t = 34
    "pml": {"sides": ["zmin", "zmax"], "elements": 2},
    "port": {"in": {"plane": "z = 2", "source": "z = 1.5", "direction": "+", "mode": "TE10"},
             "out": {"plane": "z = 3", "source": "z = 3.5", "direction": "-", "mode": "TE10"}},
    "ports": {"fmin": 0.6, "fmax": 0.9, "count": 4, "drive": ["in"]},
    "output": {"formats": [], "name": "guide"},
}


def faces(order: int, lower=(0.0, 0.0), size=(1.0, 0.5), split=(2, 1), z=0.75) -> np.ndarray:
    """(3, K, n, n) the GLL points of a rectangle's faces at z."""
    x, out = (gll_points(order) + 1) / 2, []
    for i in range(split[0]):
        for j in range(split[1]):
            u = lower[0] + size[0] * (i + x[:, None] + 0 * x[None]) / split[0]
            v = lower[1] + size[1] * (j + x[None, :] + 0 * x[:, None]) / split[1]
            out.append(np.stack([u, v, z + 0 * u]))
    return np.stack(out, axis=1)


def test_rectangular_modes_are_unit_orthogonal_and_transverse():
    coords = faces(8)
    w = face_weights(coords)
    assert abs(w.sum() - 0.5) < 1e-13
    modes = {name: rectangular_mode(name, coords, 2) for name in ("TE10", "TE01", "TE11", "TM11", "TE20")}
    assert abs(modes["TE10"][0] - np.pi) < 1e-13 and abs(modes["TM11"][0] - np.hypot(np.pi, 2 * np.pi)) < 1e-12
    for a, (_, ea) in modes.items():
        assert np.abs(ea[2]).max() == 0
        for b, (_, eb) in modes.items():
            overlap = float(np.sum(w * np.sum(ea * eb, axis=0)))
            assert abs(overlap - (a == b)) < 1e-10, (a, b, overlap)
    e = modes["TE10"][1]
    assert np.sum(w * e[1]) > 0 and abs(e[1].max() - 2.0) < 1e-12  # sqrt(2 / (a b)) sin(pi x)


def test_not_a_rectangle_and_missing_modes_refused():
    l_shape = np.concatenate([faces(3, split=(2, 1)), faces(3, lower=(0, 0.5), size=(0.5, 0.5), split=(1, 1))], 1)
    with pytest.raises(InputError, match="not a rectangle"):
        rectangular_mode("TE10", l_shape, 2)
    for name, why in (("TM10", "does not exist"), ("TE00", "does not exist"), ("TE1", "one digit each")):
        with pytest.raises(InputError, match=why):
            rectangular_mode(name, faces(3), 2)


@pytest.mark.parametrize("direction", ["+", "-"])
def test_decomposition_separates_exact_travelling_waves(direction):
    """a forward wave E = A e_t, H = A d x e_t / Z gives a = A, b = 0; a backward one b = B."""
    coords, f = faces(5), np.array([0.6, 0.8, 0.3])
    k_c, e = rectangular_mode("TE10", coords, 2)
    port = PortSpec("p", 2, 0.75, None, direction, "rectangle", "TE10")
    plane = PortPlane("p", coords, face_weights(coords), np.arange(2), np.zeros(2, int), k_c, e)
    z = impedance("TE", k_c, f, 1.0, 1.0)
    d = np.zeros(3)
    d[2] = port.sign
    h = np.cross(d[:, None, None, None] + 0 * e, e, axis=0)
    rng = np.random.default_rng(4)
    forward, backward = rng.normal(size=3) + 1j * rng.normal(size=3), rng.normal(size=3) + 1j * rng.normal(size=3)
    field_e = (forward + backward)[:, None, None, None, None] * e[None]
    with np.errstate(invalid="ignore"):  # NaN below the cutoff
        field_h = ((forward - backward) / z)[:, None, None, None, None] * h[None]
    results = {("surface", port.plane_name): {"coordinates": coords,
                                              "transform": np.concatenate([field_e, field_h], axis=1)}}
    a, b, zz = waves(results, plane, port, f, 1.0, 1.0)
    assert np.all(np.isnan(a[2:])) and np.all(np.isnan(zz[2:]))  # f = 0.3: below the cutoff 0.5
    assert np.abs(a[:2] - forward[:2]).max() < 1e-12 and np.abs(b[:2] - backward[:2]).max() < 1e-12
    s = scattering({"p": {"p": (a, b, zz)}}, ["p"], 3)
    assert np.abs(s[:2, 0, 0] - backward[:2] / forward[:2]).max() < 1e-12 and np.isnan(s[2, 0, 0])


@pytest.mark.parametrize("ports", [1, 2, 3, 5])
def test_touchstone_read_back_by_scikit_rf(tmp_path, ports):
    rng = np.random.default_rng(ports)
    f = np.sort(rng.uniform(0.1, 2.0, 4))
    s = rng.normal(size=(4, ports, ports)) + 1j * rng.normal(size=(4, ports, ports))
    path = tmp_path / f"t.s{ports}p"
    write_touchstone(path, f, s, comments=["a comment", "[mesh]\nelements = [1, 2, 3]"])
    network = read_touchstone(path)
    assert np.array_equal(network.f, f) and np.abs(network.s - s).max() < 1e-15 * np.abs(s).max() * 10


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    out = tmp_path_factory.mktemp("guide")
    result = lobatto.run(copy.deepcopy(GUIDE), output_dir=out)
    return out, result


def test_empty_guide_s_parameters(guide):
    out, result = guide
    network = read_touchstone(out / "guide.s2p")
    f, s = network.f, network.s
    beta = np.sqrt((2 * np.pi * f) ** 2 - np.pi**2)
    exact = np.exp(-1j * beta * 1.0)
    assert np.abs(s[:, 1, 0] - exact).max() < 2e-2 and np.abs(s[:, 0, 0]).max() < 1e-2  # N = 3: 8.6e-3, 7.2e-3
    assert np.all(np.isnan(s[:, :, 1]))  # port "out" not driven: its column is undefined
    with h5py.File(out / "guide_sparams.h5", "r") as h5:
        assert np.array_equal(h5["S"][()], s, equal_nan=True) and np.array_equal(h5["frequencies"][()], f)
        assert [p.decode() for p in h5["ports"][()]] == ["in", "out"]
        assert [p.decode() for p in h5["planes"][()]] == ["z = 2", "z = 3"]
        assert "[port.in]" in h5.attrs["config"] and list(h5["driven"][()]) == [True, False]
    assert (out / "port_in" / "guide_dft.h5").is_file() and not (out / "port_out").exists()
    assert set(result.summary["ports"]["runs"]) == {"in"}
    assert result.summary["ports"]["runs"]["in"]["stopped"] == "decayed"  # [time] until_decayed
    assert json.loads((out / "summary.json").read_text())["ports"]["files"]["touchstone"] == "guide.s2p"
    table = format_summary_table(result.summary)
    assert "S-parameters: guide.s2p, guide_sparams.h5 (4 frequencies)" in table and "TE10 at z = 3, into -" in table
    # the last run's transforms are named from <output>, where this summary lies
    assert "transforms: port_in/guide_dft.h5" in table
    assert (out / result.summary["time_series"]["dft"]["file"]).is_file()


def test_dft_and_ports_refused(tmp_path):
    data = _with(output__dft={"frequencies": [0.7], "planes": ["z = 2.5"]})
    with pytest.raises(InputError, match=r"\[output.dft\] cannot go with \[port\] tables"):
        lobatto.run(data, output_dir=tmp_path)


def _with(**changes):
    data = copy.deepcopy(GUIDE)
    for path, value in changes.items():
        *head, key = path.split("__")
        table = data
        for part in head:
            table = table.setdefault(part, {})
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return data


PARSE_ERRORS = [
    ({"port__in__plane": None}, r"\[port.in\] needs surface .* or plane and direction \(plane is missing\)"),
    ({"port__in__direction": "up"}, r"\[port.in\] direction"),
    ({"port__in__source": "z = 2.0"}, r"upstream of plane"),
    ({"port__in__source": "x = 0.5"}, r"same axis"),
    ({"port__in__mode": "TM10"}, r"does not exist"),
    ({"port__in__mode": "HE11"}, r"\[port.in\] mode"),
    ({"port__in__colour": 1}, r"colour"),
    ({"ports__frequencies": [0.7]}, r"frequencies and fmin"),
    ({"ports__count": None}, r"needs the frequencies"),
    ({"ports__drive": 3}, r"\[ports\] drive"),
]


@pytest.mark.parametrize("changes, message", PARSE_ERRORS)
def test_parse_errors(changes, message):
    with pytest.raises(InputError, match=message):
        case_from_dict(_with(**changes))


SETUP_ERRORS = [
    ({"ports__drive": ["sideways"]}, r"drive names \"sideways\", which is no port"),
    ({"port__out__source": None, "ports__drive": ["out"]}, r"has no source"),
    ({"port__in__plane": "z = 2.25"}, r"lies on no element face.*\"z = 2\" and \"z = 2.5\""),
    ({"port__in__plane": "x = 0.5", "port__in__source": "x = 0"}, r"needs a \[pml\] on side xmin behind it"),
    ({"pml__sides": ["zmax"]}, r"\[port.in\] direction = \"\+\" needs a \[pml\] on side zmin"),
    ({"port__out__direction": "+", "port__out__source": "z = 2.5"}, r"\[port.in\] plane \"z = 2\" lies behind "
                                                                   r"\[port.out\]"),
    ({"time": {"t_end": 3.0}}, r"t_end = 3 ends before the ports' pulse has been launched"),
    ({"port__in__source": "z = 1"}, r"touches the \[pml\] layer"),
    # a port driven only in a later run: its source is checked in the first run already
    ({"port__out__source": "z = 4"}, r"\[port.out\] source \"z = 4\" touches the \[pml\] layer"),
    ({"ports__fmin": 0.2, "ports__fmax": 0.45}, r"below its cutoff 0.5 at every"),
    # a band in GHz on a unit-free mesh: ran to S ~ 0 with exit 0
    ({"ports__fmin": 6e9, "ports__fmax": 9e9}, r"highest frequency 9e\+09 has a wavelength of .* cannot carry it"),
    ({"port__in__shape": "circle", "port__in__mode": "TE11"}, r"the cross-section is not a disc"),
    ({"port__in__shape": "circle"}, r"mode = 'TE10': unknown mode name"),
    ({"material": {"lens": {"where": "2.25 - z", "epsilon": 2.0}}}, r"\[port.in\].*background"),
    # a dispersive filling whose eps_inf is the background's: not the background either
    ({"material": {"fill": {"where": "1", "epsilon": 1.0, "poles": [{"model": "debye", "delta_epsilon": 0.5,
                                                                     "relaxation_time": 0.3}]}}},
     r"\[port.in\].*other than the background.*no poles"),
    ({"port__out__plane": "z = 2"}, r"also \[port.in\] plane"),
    ({"mesh__periodic": [True, False, False]}, r"side xmin is periodic"),
    ({"mesh__boundary": "pmc"}, r"side xmin is pmc"),
]


@pytest.mark.parametrize("changes, message", SETUP_ERRORS)
def test_setup_errors(tmp_path, changes, message):
    data = _with(**{k: v for k, v in changes.items() if k != "material"})
    if "material" in changes:
        data["material"] = changes["material"]
    with pytest.raises(InputError, match=message):
        Simulation(case_from_dict(data), backend="cpu", output_dir=tmp_path, comm=None)


def test_tm11_along_x_driven_into_minus_x(tmp_path):
    """Another axis, a TM mode (Z = beta / (omega eps)), the driven port's direction "-" and a
    port only measured: S21 = exp(-i beta L) with beta^2 = omega^2 - 2 pi^2 (N = 3: within 1e-2)."""
    data = {"mesh": {"elements": [11, 2, 2], "upper": [5.5, 1.0, 1.0]}, "discretization": {"order": 3},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 40.0},
            "pml": {"sides": ["xmin", "xmax"], "thickness": 1.0, "reflection": 1e-8},
            "port": {"a": {"plane": "x = 3.5", "source": "x = 4", "direction": "-", "mode": "TM11"},
                     "b": {"plane": "x = 2", "direction": "+", "mode": "TM11"}},
            "ports": {"frequencies": [0.8, 0.9, 1.0]}, "output": {"formats": [], "name": "tm"}}
    lobatto.run(data, output_dir=tmp_path)
    network = read_touchstone(tmp_path / "tm.s2p")
    beta = np.sqrt((2 * np.pi * network.f) ** 2 - 2 * np.pi**2)
    s = network.s
    assert np.abs(s[:, 1, 0] - np.exp(-1.5j * beta)).max() < 1.5e-2 and np.abs(s[:, 0, 0]).max() < 1.5e-2
    assert np.all(np.isnan(s[:, :, 1]))  # b has no source: not driven


def test_a_band_above_the_next_cutoff_is_warned(tmp_path, capsys):
    """TE20 and TE01 cut on at f = 1 in the 1 x 0.5 guide: a band up to 1.3 is warned about
    (once per port), one up to 0.95 is not."""
    from lobatto.api import Simulation

    for fmax, warned in ((1.3, True), (0.95, False)):
        data = _with(ports__fmax=fmax)
        Simulation(case_from_dict(data, name="g"), backend="cpu", output_dir=str(tmp_path / str(fmax)), comm=None).close()
        lines = [line for line in capsys.readouterr().out.splitlines() if "a second mode propagates" in line]
        assert len(lines) == (2 if warned else 0), lines
        if warned:
            f_next = float(lines[0].split("above f = ")[1].split()[0])
            assert abs(f_next - 1.0) < 0.02  # the coarse plane's mode solve


def test_checkpoints_are_refused_with_ports(tmp_path):
    """A port's run cannot continue from a checkpoint, so writing one would promise a restart
    that `--restart` then refuses: [checkpoint] is refused before any run."""
    data = _with(checkpoint={"every": 10})
    with pytest.raises(InputError, match=r"\[checkpoint\] cannot go with \[port\] tables"):
        lobatto.run(case_from_dict(data, name="g"), output_dir=tmp_path)
    assert not any(tmp_path.iterdir())
