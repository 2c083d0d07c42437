"""The monitor contract (lobatto/monitors/base.py, docs/architecture.md "Adding a monitor"): a
monitor written in one module and registered with one line is built by the run's MonitorSet
from its ``[output.<section>]`` table, started, sampled when due, closed into its own file and
described in the summary; a continued run is refused by default; checkpoints hold nothing for
monitors that keep no state; the registry refuses inconsistent names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import lobatto
from lobatto.config.physics import Key
from lobatto.config.ranges import Range
from lobatto.config.toolkit import Table
from lobatto.errors import InputError
from lobatto.io.atomic import atomic_open
from lobatto.machine.memory_items import MemoryItem, RunLayout
from lobatto.machine.parallel import allreduce
from lobatto.monitors import MONITORS, Monitor, MonitorSet, register_monitor, unregister_monitor


# The toy monitor: all of it (its module, in a real monitor) -----------------------------------
class ToyMonitor(Monitor):
    """The mass-weighted sum of the first field, every K steps, into NAME_toy.csv."""

    section = "toy"
    table = Table("output.toy", (
        Key("every", "positive_integer", 2, "steps between samples",
            range=Range(1, 10**9, "a run takes at most 1e9 steps")),
    ))

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        return [MemoryItem("[output.toy] one row per sample", host=16.0 * ((layout.steps or 0) // section.every + 2))]

    def __init__(self, section, system, comm=None):
        self.settings, self.system, self.comm = section, system, comm
        self.mass = system.quadrature_mass()  # what it needs from the system, through the System
        self.rows = []

    def after_step(self, u, step, t, last):
        if step % self.settings.every == 0 or step == last:  # every rank: the allreduce below
            local = float(self.system.backend.xp.sum(self.mass * u[0], dtype=np.float64))
            self.rows.append((step, t, allreduce(self.comm, local)))

    def close(self, output_dir, attrs):
        with atomic_open(Path(output_dir) / f"{attrs['name']}_toy.csv") as fh:
            fh.write("step,time,sum\n" + "".join(f"{s},{t!r},{v!r}\n" for s, t, v in self.rows))

    def describe(self):
        return {"toy": {"file": f"{self.output_name}_toy.csv", "samples": len(self.rows)}}


class KeepingToy(ToyMonitor):
    """A toy whose rows are saved in checkpoints: it may continue a run."""

    def state(self):
        return {"rows": [list(row) for row in self.rows]}

    def restore(self, state):
        self.rows = [tuple(row) for row in state["rows"]]


# ---------------------------------------------------------------------------------------------
@pytest.fixture
def toy():
    """ToyMonitor registered for the test only: the one registry line of a new monitor."""
    register_monitor("toy", ToyMonitor)
    try:
        yield ToyMonitor
    finally:
        unregister_monitor("toy")
    assert "toy" not in MONITORS


CASE = {"mesh": {"elements": [2, 2, 2]}, "discretization": {"order": 2}, "time": {"t_end": 0.04, "dt": 0.01},
        "initial": {"Ex": "1 + x"}, "output": {"every": 0, "formats": []}}


def toy_case(**toy):
    """The case with an ``[output.toy]`` table, read through the API (the registry's tables)."""
    return lobatto.case_from_dict({**CASE, "output": {**CASE["output"], "toy": toy}}, name="toy")


@pytest.fixture(scope="module")
def simulation(tmp_path_factory):
    case = lobatto.case_from_dict(CASE, name="toy")
    sim = lobatto.Simulation(case, backend="cpu", output_dir=tmp_path_factory.mktemp("toy"), comm=None)
    yield sim
    sim.close()


def test_a_registered_monitor_runs_from_its_declared_table(toy, tmp_path):
    """The whole path: the case file's [output.toy] read from the declaration, the memory
    estimate, set-up, samples when due, its file, the summary, the effective configuration."""
    case = toy_case(every=3)
    assert case.output.monitors["toy"].every == 3 and "[output.toy]\nevery = 3" in case.to_toml()
    layout = RunLayout(elements=8, total_elements=8, order=2, fields=6, steps=4)
    assert [item.what for item in MonitorSet.memory_estimate(case, layout)] == ["[output.toy] one row per sample"]
    sim = lobatto.Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    try:
        summary = sim.run()
        final = float(np.sum(sim.system.quadrature_mass() * sim.u[0]))
    finally:
        sim.close()
    lines = (tmp_path / "toy_toy.csv").read_text().splitlines()
    assert lines[0] == "step,time,sum" and [int(line.split(",")[0]) for line in lines[1:]] == [0, 3, 4]
    assert float(lines[1].split(",")[2]) == pytest.approx(1.5, rel=1e-13)  # the integral of 1 + x over the cube
    assert float(lines[-1].split(",")[2]) == final
    assert summary["time_series"]["toy"] == {"file": "toy_toy.csv", "samples": 3}


def test_its_keys_are_checked_like_every_table(toy):
    assert toy_case().output.monitors["toy"].every == 2  # the declared default
    with pytest.raises(InputError, match=r"unknown key 'output.toy.evry' \(did you mean 'output.toy.every'\?\)"):
        toy_case(evry=2)
    with pytest.raises(InputError, match=r"\[output.toy\] every must be"):
        toy_case(every=0)


def test_an_unregistered_table_is_an_unknown_key():
    assert "toy" not in MONITORS
    with pytest.raises(InputError, match=r"unknown key 'output.toy'"):
        toy_case(every=2)


def test_a_registered_monitor_is_built_from_its_section_sampled_and_written(toy, simulation, tmp_path):
    case, system = simulation.case, simulation.system
    assert MonitorSet.from_case(case, system, tmp_path) is None  # no table of any monitor: no set
    monitors = MonitorSet.from_case(toy_case(every=2), system, tmp_path)
    assert isinstance(monitors.toy, ToyMonitor) and monitors.dft is None and monitors.probes is None
    assert monitors.checkpoint_state is None  # nothing kept: checkpoints hold nothing for it
    u, last = simulation.u, 5
    monitors.start(u, 0, 0.0, last)  # the first sample
    for step in range(1, last + 1):
        monitors.after_step(u, step, 0.01 * step, last)
    monitors.close()

    expected = float(np.sum(system.quadrature_mass() * u[0]))
    lines = (tmp_path / "toy_toy.csv").read_text().splitlines()
    assert lines[0] == "step,time,sum" and [int(line.split(",")[0]) for line in lines[1:]] == [0, 2, 4, 5]
    assert all(float(line.split(",")[2]) == expected for line in lines[1:])
    assert monitors.describe() == {"files": [], "samples": 0, "toy": {"file": "toy_toy.csv", "samples": 4}}


def test_a_continued_run_is_refused_unless_the_monitor_keeps_state(toy, simulation, tmp_path):
    case = toy_case()
    monitors = MonitorSet.from_case(case, simulation.system, tmp_path)
    with pytest.raises(InputError, match=r"^\[output.toy\] cannot continue from a checkpoint: its state is not saved "
                                         r"in it \(run from the start\)$"):
        monitors.start(simulation.u, 3, 0.03, 4)
    assert not list(tmp_path.iterdir())  # refused before any file was touched

    unregister_monitor("toy")
    register_monitor("toy", KeepingToy)
    monitors = MonitorSet.from_case(case, simulation.system, tmp_path)
    monitors.restore_checkpoint_state({"toy": {"rows": [[0, 0.0, 1.5], [2, 0.02, 2.5]]}})
    monitors.start(simulation.u, 3, 0.03, 4)  # continues; step 3 is not due
    assert monitors.checkpoint_state() == {"toy": {"rows": [[0, 0.0, 1.5], [2, 0.02, 2.5]]}}


def test_the_registry_refuses_inconsistent_names(toy):
    with pytest.raises(ValueError, match="already registered"):
        register_monitor("toy", KeepingToy)
    with pytest.raises(ValueError, match="section is 'toy'"):
        register_monitor("other", ToyMonitor)
    with pytest.raises(TypeError):
        register_monitor("toy", object)
    with pytest.raises(ValueError, match="built-in"):
        unregister_monitor("dft")
    assert register_monitor("toy", ToyMonitor) is ToyMonitor  # the same class again: nothing changes


def test_the_built_in_monitors_are_registered_in_their_order():
    import lobatto.systems.registry  # noqa: F401  (the systems register theirs when imported)

    names = list(MONITORS)
    assert names[:2] == ["probes", "dft"]  # the time series (probes and integrals), then the transforms
    assert "far_field" in names  # registered by the system that has it, from its own package


class PlanarToy(ToyMonitor):
    """A toy that says it works on a 2-D mesh too (its sum is per unit depth there)."""

    dimensions = (2, 3)


@pytest.mark.parametrize("cls", [ToyMonitor, PlanarToy])
def test_a_registered_monitor_declares_the_dimensions_it_runs_in(cls, tmp_path):
    """The runner asks the monitor (Monitor.dimensions), not a list of names: a monitor
    registered by a system or a user runs on a 2-D mesh when it says so, else is refused."""
    register_monitor("toy", cls)
    try:
        case = lobatto.case_from_dict({**CASE, "mesh": {"elements": [2, 2]},
                                       "output": {**CASE["output"], "toy": {"every": 2}}}, name="toy")
        if cls is ToyMonitor:
            with pytest.raises(InputError, match=r"\[output.toy\] is not built on a 2-D mesh"):
                lobatto.Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
            return
        sim = lobatto.Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
        try:
            sim.run()
        finally:
            sim.close()
        assert (tmp_path / "toy_toy.csv").read_text().splitlines()[0] == "step,time,sum"
    finally:
        unregister_monitor("toy")
