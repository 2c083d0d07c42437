"""Restart onto another order or mesh (runner/restart_onto.py, docs/restart.md): the
checkpoint's fields interpolated onto the case's GLL points.

* A Navier–Stokes state that is a polynomial of degree 3 (random coefficients) comes out exact
  to round-off at order N + 2 and N - 1 = 3 on the same mesh, and on a refined, deformed box of
  the same domain; the continued BDF2 run starts its history again (BDF1 first, as a fresh run
  from that state does: its step equals the fresh run's).
* A state that is no polynomial (a few steps of a flow) taken up to N + 2 and back down to N is
  the checkpoint's own values (interpolation of a degree-N polynomial is exact).
* Acoustics (a single-step scheme, exact standing wave): continued at N + 2 after the restart,
  it matches the exact solution at t_end as a run at that order does.
* Refused with exit 2: a mesh that does not cover the old domain (naming how many points and
  where), another system, another order without --interpolate.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import case_from_dict
from lobatto.errors import InputError
from lobatto.operators.interpolation import gll_to_gll
from lobatto.runner.simulation import Simulation

ORDER = 4


def poly_case(order=ORDER, elements=(2, 1, 2), upper=(1.0, 1.0, 1.0), deform=None, coefficients=(1, 1, 1, 1),
              t_end=0.002, integrator="bdf2"):
    a, b, c, d = coefficients
    fields = {"ux": f"{a:.6f}*y*z + y**2", "uy": f"{b:.6f}*x**2*z - z**3", "uz": f"{c:.6f}*x*y**2 + 0.5",
              "p": f"{d:.6f}*x*z**2 - y"}
    mesh = {"elements": list(elements), "lower": [0.0, 0.0, 0.0], "upper": list(upper)}
    if deform:
        mesh["deform"] = deform
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.1},
        "mesh": mesh, "discretization": {"order": order},
        "time": {"integrator": integrator, "dt": 2e-3, "t_end": t_end},
        "boundary": {side: {k: fields[k] for k in ("ux", "uy", "uz")}
                     for side in ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")},
        "initial": fields, "exact": fields, "output": {"formats": [], "name": "poly"},
    }, name="poly")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A checkpoint of the polynomial state at step 0 (order 4, 2 x 1 x 2 elements)."""
    coefficients = tuple(np.random.default_rng().uniform(0.5, 1.5, 4))
    out = tmp_path_factory.mktemp("source")
    sim = Simulation(poly_case(coefficients=coefficients), "cpu", out, comm=None)
    path = sim.checkpoint()
    sim.close()
    return path, coefficients


def continued(case, path, out, interpolate=True):
    sim = Simulation(case, "cpu", out, comm=None)
    sim.restart(path, interpolate=interpolate)
    return sim


@pytest.mark.parametrize("order, elements, deform", [
    (ORDER + 2, (2, 1, 2), None),          # the same mesh, higher order
    (ORDER - 1, (2, 1, 2), None),          # lower order: exact for degree <= 3
    (ORDER, (3, 2, 3), {"x": "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"}),  # another (curved) mesh
])
def test_polynomial_state_is_exact_on_the_new_grid(source, tmp_path, capsys, order, elements, deform):
    path, coefficients = source
    case = poly_case(order, elements, deform=deform, coefficients=coefficients)
    sim = continued(case, path, tmp_path)
    assert "interpolated from order 4" in capsys.readouterr().out
    errors = sim.errors()
    assert errors["all"]["max"] < 1e-12, errors
    assert sim.step_count == 0 and sim.t == 0.0 and sim.stepper.steps_taken == 0
    summary = sim.run()
    assert summary["restarts"][-1]["interpolated"]["order"] == [ORDER, order] and sim.step_count == 1
    # its step is a fresh run's first (BDF1) from the same state on the new grid
    fresh = Simulation(case, "cpu", tmp_path / "fresh", comm=None)
    fresh.run()
    for name, values in fresh.fields().items():
        assert np.abs(sim.fields()[name] - values).max() < 1e-9 * np.abs(values).max(), name


def test_any_state_goes_up_and_back_exactly(tmp_path):
    """Two steps of a flow (no polynomial), checkpointed at order 4; taken to order 6 and
    its checkpoint taken back to order 4: the first checkpoint's values. Time, step and a
    fixed dt planned again from [time] go on."""
    first = Simulation(poly_case(t_end=0.006), "cpu", tmp_path / "a", comm=None)
    first.advance(2)
    path = first.checkpoint()
    first.close()
    up = continued(poly_case(ORDER + 2, t_end=0.006), path, tmp_path / "b")
    assert up.step_count == 2 and up.t == pytest.approx(0.004, rel=1e-14) and up.steps == 3
    J = gll_to_gll(ORDER, ORDER + 2)
    old = first.fields()["ux"]
    assert np.allclose(up.fields()["ux"], np.einsum("ai,bj,ck,ekji->ecba", J, J, J, old), rtol=0, atol=1e-13)
    back_path = up.checkpoint(tmp_path / "b" / "up")
    up.close()
    back = continued(poly_case(ORDER, t_end=0.006), back_path, tmp_path / "c")
    for name, values in first.fields().items():
        assert np.abs(back.fields()[name] - values).max() < 1e-12 * max(1.0, np.abs(values).max()), name
    summary = back.run()
    assert back.step_count == 3 and back.t == pytest.approx(0.006, rel=1e-14)
    assert [r["step"] for r in summary["restarts"]] == [2, 2]


ACOUSTIC = {
    "mesh": {"elements": [2, 2, 2], "boundary": "wall"},
    "physics": {"equations": "acoustics", "density": 1.3, "sound_speed": 0.7},
    "initial": {"p": "cos(pi*x)*cos(pi*y)*cos(pi*z)"},
    "exact": {
        "p": "cos(pi*x)*cos(pi*y)*cos(pi*z)*cos(0.7*sqrt(3)*pi*t)",
        "ux": "sin(pi*x)*cos(pi*y)*cos(pi*z)*sin(0.7*sqrt(3)*pi*t)/(1.3*0.7*sqrt(3))",
        "uy": "cos(pi*x)*sin(pi*y)*cos(pi*z)*sin(0.7*sqrt(3)*pi*t)/(1.3*0.7*sqrt(3))",
        "uz": "cos(pi*x)*cos(pi*y)*sin(pi*z)*sin(0.7*sqrt(3)*pi*t)/(1.3*0.7*sqrt(3))",
    },
    "output": {"formats": [], "name": "mode"},
}


def acoustic_case(order, t_end):
    return case_from_dict({**ACOUSTIC, "discretization": {"order": order}, "time": {"t_end": t_end, "cfl": 0.3}},
                          name="mode")


def test_single_step_system_continues_at_the_higher_order(tmp_path):
    low = Simulation(acoustic_case(4, 0.2), "cpu", tmp_path / "a", comm=None)
    low.run()
    path = low.checkpoint()
    error_low = low.errors()["all"]["l2"]
    high = continued(acoustic_case(6, 0.3), path, tmp_path / "b")
    assert high.t == pytest.approx(low.t, rel=1e-14) and high.step_count == low.step_count
    high.run()
    assert high.t == pytest.approx(0.3, rel=1e-13)
    # the order-4 error at t = 0.2 is carried, not grown: order 6 adds little of its own
    error_high = high.errors()["all"]["l2"]
    assert error_high < 1.5 * error_low, (error_high, error_low)


def test_another_integrator_on_the_same_grid(source, tmp_path):
    """The same mesh and order, BDF3 instead of BDF2: the state as it was, a fresh history."""
    path, coefficients = source
    sim = continued(poly_case(coefficients=coefficients, integrator="bdf3"), path, tmp_path)
    assert sim.errors()["all"]["max"] < 1e-13 and sim.stepper.steps_taken == 0
    assert sim.restarts[-1]["interpolated"]["order"] == [ORDER, ORDER]


def test_refused_inputs(source, tmp_path):
    path, coefficients = source
    with pytest.raises(InputError, match=r"GLL points lie outside the checkpoint's mesh .*between"):
        continued(poly_case(upper=(1.0, 1.2, 1.0), coefficients=coefficients), path, tmp_path / "a")
    with pytest.raises(InputError, match="a restart continues the same system"):
        continued(acoustic_case(ORDER, 0.1), path, tmp_path / "b")
    with pytest.raises(InputError, match=r"order differs .*--interpolate"):
        continued(poly_case(ORDER + 1, coefficients=coefficients), path, tmp_path / "c", interpolate=False)


def test_cli_exit_2_outside_the_old_mesh(source, tmp_path, capsys):
    from lobatto.cli import main

    path, _ = source
    case = poly_case(upper=(1.5, 1.0, 1.0)).to_toml()
    (tmp_path / "poly.toml").write_text(case)
    code = main(["run", str(tmp_path / "poly.toml"), "-o", str(tmp_path / "out"), "-q", "--restart", str(path),
                 "--interpolate"])
    err = capsys.readouterr().err
    assert code == 2 and "outside the checkpoint's mesh" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "summary.json").exists()


def test_statistics_start_afresh_onto_another_order(tmp_path, capsys):
    """The averages are sums at the checkpoint's points (or its profile grid): an interpolated
    restart starts them afresh, says so, and records it; the run goes on (no traceback)."""
    import h5py

    def case(order):
        return case_from_dict({
            "physics": {"equations": "navier_stokes", "viscosity": 0.05, "flow_rate": 1.0},
            "mesh": {"elements": [2, 2, 2], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
                     "periodic": [True, False, True], "boundary": "wall"},
            "discretization": {"order": order},
            "time": {"dt": 0.01, "t_end": 0.08},
            "initial": {"ux": "1.5*(1 - y**2) + 0.1*(1 - y**2)*sin(pi*x)"},
            "output": {"formats": [], "name": "stats", "statistics": {"start": 0.0, "every": 1, "average": ["x", "z"]}},
        }, name="stats")

    first = Simulation(case(3), "cpu", tmp_path / "a", comm=None)
    first.advance(4)
    path = first.checkpoint()
    first.close()
    second = Simulation(case(4), "cpu", tmp_path / "b", comm=None)
    second.restart(path, interpolate=True)
    assert second.restarts[-1]["outputs_started_afresh"] == ["statistics"]
    assert "[output.statistics] start afresh" in capsys.readouterr().out
    second.run()
    with h5py.File(tmp_path / "b" / "stats_statistics.h5") as f:
        assert 4 <= f.attrs["samples"] <= 5 and f.attrs["t_first"] > 0.04 - 1e-12  # from the restart on only
        assert len(f["coordinates/y"]) == 2 * 4 + 1  # the new order's profile grid
