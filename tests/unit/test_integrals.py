"""``[output.integrals]`` on every system (docs/probes.md): volume and surface integrals of
known fields on a non-unit box against their exact values (GLL quadrature is exact for these
polynomials), and on a curved mesh against the exact volume. The first sample (step 0) is
the initial state; Poisson's one sample is its solution."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import lobatto
from lobatto.errors import InputError
from lobatto.io.timeseries import read_csv

LOWER, UPPER = (-1.0, 0.0, 1.0), (2.0, 3.0, 1.5)  # a box of 3 x 3 x 0.5
SIDES = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]
#: a curving of the interior that keeps the box's sides (so its volume is unchanged)
CURVED = {"x": "0.1*sin(pi*(x+1)/3)*sin(pi*y/3)*sin(2*pi*(z-1))",
          "y": "0.08*sin(2*pi*(x+1)/3)*sin(pi*y/3)*sin(2*pi*(z-1))"}


def integral(powers, lower=LOWER, upper=UPPER, fixed=None) -> float:
    """Exact integral of x^a y^b z^c over the box (or over its side where ``fixed`` = (axis,
    value) holds one coordinate)."""
    total = Fraction(1)
    for axis, (p, lo, hi) in enumerate(zip(powers, lower, upper)):
        if fixed is not None and fixed[0] == axis:
            total *= Fraction(fixed[1]) ** p
        else:
            lo, hi = Fraction(lo), Fraction(hi)
            total *= (hi ** (p + 1) - lo ** (p + 1)) / (p + 1)
    return float(total)


def first_sample(tmp_path, data, name):
    case = lobatto.case_from_dict(data, name=name)
    lobatto.run(case, output_dir=tmp_path / name, backend="cpu")
    series = read_csv(tmp_path / name / f"{name}_probes.csv")
    return {column: values[0] for column, values in series["values"].items()}


def box(**extra):
    return {"elements": [3, 2, 2], "lower": list(LOWER), "upper": list(UPPER), **extra}


def test_maxwell_energy_and_poynting_flux_of_known_fields(tmp_path):
    data = {"physics": {"equations": "maxwell", "epsilon": 2.0, "mu": 3.0}, "mesh": box(),
            "discretization": {"order": 3}, "time": {"t_end": 1e-3},
            "initial": {"Ex": "x + 2*y", "Ez": "y", "Hy": "z", "Hz": "x*z"},
            "output": {"integrals": {"volume": ["energy", "electric_energy", "magnetic_energy"],
                                     "surfaces": ["xmax", "ymin", "zmax"]}}}
    got = first_sample(tmp_path, data, "maxwell")
    # (x + 2y)^2 + y^2 = x^2 + 4xy + 5y^2;  z^2 + x^2 z^2
    electric = 0.5 * 2.0 * (integral((2, 0, 0)) + 4 * integral((1, 1, 0)) + 5 * integral((0, 2, 0)))
    magnetic = 0.5 * 3.0 * (integral((0, 0, 2)) + integral((2, 0, 2)))
    assert got["electric_energy@all"] == pytest.approx(electric, rel=1e-13)
    assert got["magnetic_energy@all"] == pytest.approx(magnetic, rel=1e-13)
    assert got["energy@all"] == pytest.approx(electric + magnetic, rel=1e-13)
    # (E x H) . n: x-component Ey Hz - Ez Hy = -y z on xmax (n = +x);
    # y-component Ez Hx - Ex Hz = -(x + 2y) x z on ymin (y = 0, n = -y): +x^2 z;
    # z-component Ex Hy - Ey Hx = (x + 2y) z on zmax (z = 1.5, n = +z)
    assert got["poynting_flux@xmax"] == pytest.approx(-integral((0, 1, 1), fixed=(0, 2.0)), rel=1e-13)
    assert got["poynting_flux@ymin"] == pytest.approx(integral((2, 0, 1), fixed=(1, 0.0)), rel=1e-13)
    zmax = integral((1, 0, 1), fixed=(2, 1.5)) + 2 * integral((0, 1, 1), fixed=(2, 1.5))
    assert got["poynting_flux@zmax"] == pytest.approx(zmax, rel=1e-13)


def test_acoustics_energy_and_intensity_of_known_fields(tmp_path):
    rho, c = 1.5, 2.0
    data = {"physics": {"equations": "acoustics", "density": rho, "sound_speed": c}, "mesh": box(),
            "discretization": {"order": 3}, "time": {"t_end": 1e-3},
            "initial": {"p": "x*y + 1", "uy": "z", "uz": "x"},
            "output": {"integrals": {"volume": ["energy", "potential_energy", "kinetic_energy"],
                                     "surfaces": ["ymax", "zmin"]}}}
    got = first_sample(tmp_path, data, "acoustics")
    potential = (integral((2, 2, 0)) + 2 * integral((1, 1, 0)) + integral((0, 0, 0))) / (2 * rho * c**2)
    kinetic = 0.5 * rho * (integral((0, 0, 2)) + integral((2, 0, 0)))
    assert got["potential_energy@all"] == pytest.approx(potential, rel=1e-13)
    assert got["kinetic_energy@all"] == pytest.approx(kinetic, rel=1e-13)
    assert got["energy@all"] == pytest.approx(potential + kinetic, rel=1e-13)
    # p u . n: on ymax (y = 3, n = +y) (3x + 1) z; on zmin (z = 1, n = -z) -(x y + 1) x
    ymax = 3 * integral((1, 0, 1), fixed=(1, 3.0)) + integral((0, 0, 1), fixed=(1, 3.0))
    zmin = -(integral((2, 1, 0), fixed=(2, 1.0)) + integral((1, 0, 0), fixed=(2, 1.0)))
    assert got["intensity_flux@ymax"] == pytest.approx(ymax, rel=1e-13)
    assert got["intensity_flux@zmin"] == pytest.approx(zmin, rel=1e-13)


def test_navier_stokes_kinetic_energy_and_volume_flux(tmp_path):
    # the crash of issue 28: Integrals read the mass from a dict the flow system does not have
    data = {"physics": {"equations": "navier_stokes", "viscosity": 0.1}, "mesh": box(),
            "discretization": {"order": 3}, "time": {"t_end": 0.02, "dt": 0.01},
            "initial": {"ux": "y*(3 - y)", "uy": "x", "uz": "0.5*z"},
            "output": {"integrals": {"volume": ["kinetic_energy"], "surfaces": ["xmin", "xmax", "ymax", "zmin"]}}}
    got = first_sample(tmp_path, data, "flow")
    # |u|^2 = y^2 (3 - y)^2 + x^2 + z^2 / 4 = 9 y^2 - 6 y^3 + y^4 + x^2 + z^2 / 4
    kinetic = 0.5 * (9 * integral((0, 2, 0)) - 6 * integral((0, 3, 0)) + integral((0, 4, 0)) + integral((2, 0, 0))
                     + 0.25 * integral((0, 0, 2)))
    assert got["kinetic_energy@all"] == pytest.approx(kinetic, rel=1e-13)
    inflow = 3 * integral((0, 1, 0), fixed=(0, -1.0)) - integral((0, 2, 0), fixed=(0, -1.0))
    assert got["volume_flux@xmin"] == pytest.approx(-inflow, rel=1e-13)
    assert got["volume_flux@xmax"] == pytest.approx(inflow, rel=1e-13)
    assert got["volume_flux@ymax"] == pytest.approx(integral((1, 0, 0), fixed=(1, 3.0)), abs=1e-13)
    assert got["volume_flux@zmin"] == pytest.approx(-0.5 * integral((0, 0, 0), fixed=(2, 1.0)), rel=1e-13)


def test_poisson_integrals_of_the_solution(tmp_path):
    # u = x^2 + y z solves -lap u = -2 with its own values on every side: a polynomial of
    # degree 2, which order 3 represents exactly (to the solver's tolerance)
    data = {"physics": {"equations": "poisson", "f": "-2"}, "mesh": box(), "discretization": {"order": 3},
            "boundary": {side: {"value": "x*x + y*z"} for side in SIDES}, "solver": {"tolerance": 1e-13},
            "output": {"integrals": {"volume": ["integral", "square"], "surfaces": ["xmin", "zmax"]},
                       "probes": {"points": [[0.3, 1.7, 1.2]]}}}
    got = first_sample(tmp_path, data, "poisson")
    assert got["u@p0"] == pytest.approx(0.09 + 1.7 * 1.2, rel=1e-10)
    assert got["integral@all"] == pytest.approx(integral((2, 0, 0)) + integral((0, 1, 1)), rel=1e-10)
    square = integral((4, 0, 0)) + 2 * integral((2, 1, 1)) + integral((0, 2, 2))
    assert got["square@all"] == pytest.approx(square, rel=1e-10)
    assert got["surface_integral@xmin"] == pytest.approx(integral((2, 0, 0), fixed=(0, -1.0))
                                                         + integral((0, 1, 1), fixed=(0, -1.0)), rel=1e-10)
    assert got["surface_integral@zmax"] == pytest.approx(integral((2, 0, 0), fixed=(2, 1.5))
                                                         + integral((0, 1, 1), fixed=(2, 1.5)), rel=1e-10)
    summary = json.loads((tmp_path / "poisson" / "summary.json").read_text())
    assert summary["time_series"]["samples"] == 1
    assert summary["time_series"]["integrals"]["columns"][0] == "integral@all"


@pytest.mark.parametrize("equations, field, quantity", [("maxwell", "Ez", "electric_energy"),
                                                        ("acoustics", "p", "potential_energy"),
                                                        ("navier_stokes", "ux", "kinetic_energy")])
def test_volume_of_a_curved_box(tmp_path, equations, field, quantity):
    """A constant field over the curved box: its volume, to the quadrature error of the map."""
    data = {"physics": {"equations": equations}, "mesh": box(deform=CURVED), "discretization": {"order": 6},
            "time": {"t_end": 1e-3, "dt": 1e-3}, "initial": {field: "1"},
            "output": {"integrals": {"volume": [quantity]}}}
    got = first_sample(tmp_path, data, equations)[f"{quantity}@all"]
    volume = 3 * 3 * 0.5
    assert got == pytest.approx(0.5 * volume, rel=1e-6)


def test_steady_run_refuses_running_transforms(tmp_path):
    data = {"physics": {"equations": "poisson", "f": "1"}, "mesh": {"elements": [2, 2, 2]},
            "discretization": {"order": 2}, "output": {"dft": {"frequencies": [1.0], "regions": ["all"]}}}
    with pytest.raises(InputError, match=r"\[output.dft\] .* does not apply"):
        lobatto.run(lobatto.case_from_dict(data, name="steady"), output_dir=tmp_path / "s", backend="cpu")
