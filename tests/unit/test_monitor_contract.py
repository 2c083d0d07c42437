"""The monitor contract (lobatto/monitors/base.py, docs/architecture.md "Adding a monitor"): a
monitor written in one module and registered with one line is built by the run's MonitorSet
from its ``[output.<section>]`` table, started, sampled when due, closed into its own file and
described in the summary; a continued run is refused by default; checkpoints hold nothing for
monitors that keep no state; the registry refuses inconsistent names."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import lobatto
from lobatto.errors import InputError
from lobatto.io.atomic import atomic_open
from lobatto.machine.memory_items import MemoryItem, RunLayout
from lobatto.machine.parallel import allreduce
from lobatto.monitors import MONITORS, Monitor, MonitorSet, register_monitor, unregister_monitor


# The toy monitor: all of it (its module, in a real monitor) -----------------------------------
@dataclass(frozen=True)
class ToySection:
    every: int = 2


class ToyMonitor(Monitor):
    """The mass-weighted sum of the first field, every K steps, into NAME_toy.csv."""

    section = "toy"

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


@pytest.fixture(scope="module")
def simulation(tmp_path_factory):
    case = lobatto.case_from_dict({"mesh": {"elements": [2, 2, 2]}, "discretization": {"order": 2},
                                   "time": {"t_end": 0.04, "dt": 0.01}, "initial": {"Ex": "1 + x"},
                                   "output": {"every": 0, "formats": []}}, name="toy")
    sim = lobatto.Simulation(case, backend="cpu", output_dir=tmp_path_factory.mktemp("toy"), comm=None)
    yield sim
    sim.close()


def with_toy(case, section):
    """The case with an ``[output.toy]`` table (the case-file schema declares the built-in tables)."""
    output = SimpleNamespace(**{f.name: getattr(case.output, f.name) for f in dataclasses.fields(case.output)},
                             toy=section)
    return SimpleNamespace(output=output, to_toml=case.to_toml, source=case.source)


def test_a_registered_monitor_is_built_from_its_section_sampled_and_written(toy, simulation, tmp_path):
    case, system = simulation.case, simulation.system
    assert MonitorSet.from_case(case, system, tmp_path) is None  # no table of any monitor: no set
    toy_case = with_toy(case, ToySection(every=2))
    layout = RunLayout(elements=8, total_elements=8, order=2, fields=6, steps=4)
    assert [item.what for item in MonitorSet.memory_estimate(toy_case, layout)] == ["[output.toy] one row per sample"]

    monitors = MonitorSet.from_case(toy_case, system, tmp_path)
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
    toy_case = with_toy(simulation.case, ToySection())
    monitors = MonitorSet.from_case(toy_case, simulation.system, tmp_path)
    with pytest.raises(InputError, match=r"^\[output.toy\] cannot continue from a checkpoint: its state is not saved "
                                         r"in it \(run from the start\)$"):
        monitors.start(simulation.u, 3, 0.03, 4)
    assert not list(tmp_path.iterdir())  # refused before any file was touched

    unregister_monitor("toy")
    register_monitor("toy", KeepingToy)
    monitors = MonitorSet.from_case(toy_case, simulation.system, tmp_path)
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
