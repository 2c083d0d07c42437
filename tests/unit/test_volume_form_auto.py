"""[discretization] volume_form = "auto" (the default; systems/maxwell/volume_form.py): the Galerkin
form on 3-D Maxwell meshes with a curved element, the split form on affine and 2-D meshes, on
other systems, and where a curved case uses a table the Galerkin form does not take yet (with a
one-line note); the choice and its reason are in the run's summary."""

from __future__ import annotations

import numpy as np
import pytest

from cylwave import cylinder_rea, tm01
from lobatto.api import Simulation, case_from_dict, run
from lobatto.systems.maxwell import volume_form

BOX = {"elements": [2, 2, 2], "boundary": "pec"}
DEFORMED = {**BOX, "deform": {"x": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}}


def case(mesh, extra=None, form=None):
    data = {"mesh": mesh, "discretization": {"order": 3}, "physics": {"equations": "maxwell"},
            "initial": {"Ez": "sin(pi*x)*sin(pi*y)"}, "time": {"t_end": 0.05}, "output": {"formats": []}}
    if form is not None:
        data["discretization"]["volume_form"] = form
    data.update(extra or {})
    return case_from_dict(data, name="auto")


def choice(tmp_path, c):
    sim = Simulation(c, backend="cpu", output_dir=str(tmp_path / "run"), comm=None)
    try:
        return dict(sim.system.volume_form_choice), sim.system.galerkin is not None
    finally:
        sim.close()


def test_default_is_auto_and_is_stored():
    c = case(BOX)
    assert c.discretization.volume_form == "auto" and c.to_dict()["discretization"]["volume_form"] == "auto"


def test_curved_mesh_takes_the_galerkin_form(tmp_path):
    chosen, attached = choice(tmp_path, case(DEFORMED))
    assert chosen["setting"] == "auto" and chosen["form"] == "galerkin" and attached
    assert chosen["reason"].startswith("curved elements")


def test_affine_mesh_takes_the_split_form(tmp_path):
    chosen, attached = choice(tmp_path, case(BOX))
    assert chosen["form"] == "split" and not attached and "affine" in chosen["reason"]


def test_named_form_is_kept(tmp_path):
    chosen, attached = choice(tmp_path, case(DEFORMED, form="split"))
    assert chosen == {"setting": "split", "form": "split", "reason": "chosen by the case"} and not attached


def test_curved_case_with_a_refused_table_runs_split_with_a_note(tmp_path, capsys):
    wave = {"inc": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0], "waveform": "gaussian",
                    "t0": 0.6, "width": 0.2, "incident_field": "discrete", "lower": [0.25, 0.0, 0.0],
                    "upper": [0.75, 1.0, 1.0]}}
    mesh = {"elements": [4, 1, 1], "periodic": [False, True, True], "boundary": "absorbing",
            "deform": {"y": "0.02*sin(pi*x)*sin(2*pi*y)*sin(2*pi*z)"}}
    c = case(mesh, {"source": wave})
    assert volume_form.refused_tables(c) == ['[source.inc] incident_field = "discrete"']
    chosen, attached = choice(tmp_path, c)
    assert chosen["form"] == "split" and not attached
    out = capsys.readouterr().out
    assert 'volume_form = "auto" runs "split" on this curved mesh' in out and "[source.inc]" in out


def test_other_systems_and_2d_take_the_split_form(tmp_path):
    acoustics = case_from_dict({"mesh": {**DEFORMED, "boundary": "wall"}, "discretization": {"order": 2},
                                "physics": {"equations": "acoustics"}, "time": {"t_end": 0.01},
                                "output": {"formats": []}}, name="acoustics")
    sim = Simulation(acoustics, backend="cpu", output_dir=str(tmp_path / "a"), comm=None)
    assert sim.system.volume_form == "split"
    sim.close()
    planar = case({"elements": [2, 2], "boundary": "pec", "deform": {"x": "0.05*sin(pi*x)*sin(pi*y)"}})
    chosen, attached = choice(tmp_path / "p", planar)
    assert chosen["form"] == "split" and "2-D" in chosen["reason"] and not attached


def test_cylinder_case_file_with_the_default_form_is_the_galerkin_run(tmp_path):
    """The O-grid cylinder (.rea with circle sides) from a case file that names no form: the run is
    the Galerkin one, bit for bit, and more accurate than the split form's."""
    path = tmp_path / "cyl.rea"
    cylinder_rea(path, m=1, layers=2, length=4.0)
    mesh = {"generator": "nek", "file": str(path), "boundaries": {"PEC": "pec"}}
    fields, errors = {}, {}
    for form in (None, "galerkin", "split"):
        data = {"mesh": mesh, "discretization": {"order": 4}, "physics": {"equations": "maxwell"},
                "time": {"t_end": 0.2, "cfl": 0.3}, "output": {"formats": []}}
        if form:
            data["discretization"]["volume_form"] = form
        sim = Simulation(case_from_dict(data, name="cyl"), backend="cpu", output_dir=str(tmp_path / str(form)),
                         comm=None)
        g = sim.system.geometry
        sim.u[...] = tm01(g.coords, 0.0)[0]
        sim.energy_initial = sim.system.energy(sim.u)
        sim.advance(sim.steps)
        exact = tm01(g.coords, sim.t)[0]
        fields[form] = sim.u.copy()
        errors[form] = float(np.sqrt((g.mass * (sim.u - exact) ** 2).sum() / (g.mass * exact**2).sum()))
        sim.close()
    assert np.array_equal(fields[None], fields["galerkin"])
    assert errors["galerkin"] < 0.5 * errors["split"], errors


@pytest.mark.parametrize("bad", ["Auto", "galerkin2", 3])
def test_bad_volume_form_is_an_input_error(bad, tmp_path):
    from lobatto.errors import InputError

    with pytest.raises(InputError, match="volume_form"):
        case(BOX, form=bad)
