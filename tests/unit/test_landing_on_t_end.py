"""Variable dt lands on t_end without a step of another size (integrators/step_size.landing_dt):
the time left is divided evenly into whole steps. A Navier-Stokes run with target_cfl then ends
with the same values as a constant-dt run of the same step; before, its last step was shortened
to land on t_end (or the last two halved), and the end values (a steady flow's pressure
included) depended on where t_end fell between steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lobatto
from lobatto.integrators.step_size import MAX_GROWTH, landing_dt, steps_left

K = "(20 - sqrt(400 + 4*pi**2))"
UX, UY = f"1 - exp({K}*x)*cos(2*pi*y)", f"{K}/(2*pi)*exp({K}*x)*sin(2*pi*y)"
P = f"0.5*(1 - exp(2*{K}*x))"
T_END = 0.37  # about 19 steps at target_cfl 0.4: t_end falls between whole steps of the controller's dt


def kovasznay(name: str, **time_) -> lobatto.Simulation:
    """Kovasznay flow (Re = 40) from its exact fields, N = 4 on 2 x 2 x 1 elements."""
    sides = {side: {"ux": UX, "uy": UY} for side in ("xmin", "xmax", "ymin", "ymax")}
    return lobatto.case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.025},
        "mesh": {"elements": [2, 2, 1], "lower": [-0.5, -0.5, 0.0], "upper": [1.0, 1.5, 1.0],
                 "periodic": [False, False, True]},
        "discretization": {"order": 4},
        "time": {"integrator": "bdf2", "t_end": T_END, **time_},
        "solver": {"pressure": {"tolerance": 1e-11}, "velocity": {"tolerance": 1e-12}},
        "initial": {"ux": UX, "uy": UY, "uz": "0", "p": P},
        "boundary": sides,
        "output": {"formats": [], "log_every": 0},
    }, name=name)


def test_navier_stokes_with_target_cfl_ends_as_a_constant_dt_run(tmp_path):
    variable = lobatto.run(kovasznay("variable", target_cfl=0.4), output_dir=tmp_path / "variable", backend="cpu")
    steps = variable.summary["steps"]
    low, high = variable.summary["dt_range"]
    assert variable.summary["t_final"] == T_END
    assert high / low - 1 < 1e-12, (low, high)  # one step size from the first step to t_end
    assert high == pytest.approx(T_END / steps, rel=1e-12)
    fixed = lobatto.run(kovasznay("fixed", dt=T_END / steps), output_dir=tmp_path / "fixed", backend="cpu")
    assert fixed.summary["steps"] == steps
    for name in ("ux", "uy", "p"):
        a, b = variable.fields[name], fixed.fields[name]
        assert np.abs(b).max() > 0.1
        # the old code: 4e-4 (ux), 5e-2 (p) from steps of another size, the last one shortened
        assert np.abs(a - b).max() <= 1e-11 * np.abs(b).max(), name


def walk(t_end: float, proposals, trail: list | None = None) -> list[float]:
    """The steps taken from 0 to t_end when the controller proposes proposals(step, t);
    (t, proposal) of each step appended to ``trail``."""
    t, taken = 0.0, []
    for k in range(10_000):
        proposal = proposals(k, t)
        dt, last = landing_dt(t, t_end, proposal)
        taken.append(dt)
        if trail is not None:
            trail.append((t, proposal))
        t = t_end if last else t + dt
        if last:
            return taken
    raise AssertionError("no landing")


@pytest.mark.parametrize("t_end, dt", [(1.0, 0.3), (1.0, 0.1), (2.5, 0.07), (1.0, 0.5000000001), (0.37, 0.0195)])
def test_steady_proposals_give_equal_steps(t_end, dt):
    taken = walk(t_end, lambda k, t: dt)
    assert len(taken) == math.ceil(t_end / dt * (1 - 1e-10)) == steps_left(0.0, t_end, dt)
    assert max(taken) / min(taken) - 1 < 1e-12 and max(taken) <= dt * (1 + 1e-12)
    assert math.isclose(sum(taken), t_end, rel_tol=1e-12)


def test_changing_proposals_are_followed_within_bounds():
    rng = np.random.default_rng(28)
    wobble = 1 + 0.3 * rng.random(400)  # the controller's dt varies by up to 30 % from step to step
    proposals = lambda k, t: 0.01 * wobble[k]  # noqa: E731
    trail = []
    taken = walk(1.7, proposals, trail)
    assert len(taken) < 400
    for dt, (t, proposal) in zip(taken, trail):
        assert dt <= proposal * (1 + 1e-12)  # never over the controller's step
        left = steps_left(t, 1.7, proposal)  # and short of it by at most one step's share of those left
        assert dt >= proposal * (left - 1) / left * (1 - 1e-12)
    ratios = np.array(taken[1:]) / np.array(taken[:-1])
    assert ratios.max() <= 1.3 * MAX_GROWTH and math.isclose(sum(taken), 1.7, rel_tol=1e-12)
