"""The monitors of one run (``MonitorSet``): every registered monitor (registry.py) whose
``[output.X]`` table the case has, driven by the run layer through one object.

The run calls, on every rank: ``from_case`` once set up, ``start`` before the first step (the
first sample), ``after_step`` after each step, ``close`` after the last, ``describe`` for the
summary's ``time_series`` entry. The monitors are called in registry order.
"""

from __future__ import annotations

import time

from lobatto.machine.parallel import collective_errors
from lobatto.monitors.registry import MONITORS, section_names


def _present(output) -> list:
    """(class, parsed table) of each registered monitor the case's ``[output]`` asks for."""
    found = []
    for cls in dict.fromkeys(MONITORS.values()):
        section = cls.section_of(output)
        if section is not None:
            found.append((cls, section))
    return found


class MonitorSet:
    """The run's monitors on this rank, set up from the case (collective)."""

    def __init__(self, case, system, output_dir, comm=None):
        self.case, self.system, self.output_dir, self.comm = case, system, output_dir, comm
        self.monitors = [cls.from_case(case, section, system, comm) for cls, section in _present(case.output)]

    @staticmethod
    def memory_estimate(case, layout) -> list:
        """memory_items.MemoryItem of each monitor the case asks for (each class's own count)."""
        items = []
        for cls, section in _present(case.output):
            items += cls.memory_estimate(section, layout)
        return items

    @classmethod
    def from_case(cls, case, system, output_dir, comm=None):
        """The run's monitors, or None when the case asks for none."""
        return cls(case, system, output_dir, comm) if _present(case.output) else None

    def _attrs(self) -> dict:
        """Root attributes of the monitors' files: the effective configuration, the equations,
        the output name (their files' prefix)."""
        return {"config": self.case.to_toml(), "equations": self.system.name, "name": self.case.output.name}

    def start(self, u, step: int, t: float, last: int) -> None:
        """Collective, before the run's first step: every monitor agrees to start at ``step``
        (a continued run: step > 0), then each opens its files; then the state is sampled as
        after a step (step 0 always is)."""
        with collective_errors(self.comm):
            for monitor in self.monitors:  # all checked before any file is touched
                monitor.check_start(step)
            attrs = self._attrs()
            for monitor in self.monitors:
                monitor.start(u, step, t, self.output_dir, attrs)
        self.after_step(u, step, t, last)

    def after_step(self, u, step: int, t: float, last: int) -> float:
        """Collective: each monitor observes the state at ``step`` (``last``: the run's last
        step). Returns the seconds taken (the run counts them as output time)."""
        start = time.perf_counter()
        for monitor in self.monitors:
            monitor.after_step(u, step, t, last)
        return time.perf_counter() - start

    def close(self) -> None:
        """Collective: each monitor's file written (rank 0)."""
        for monitor in self.monitors:
            with collective_errors(self.comm):
                monitor.close(self.output_dir, self._attrs())

    def describe(self) -> dict:
        """The summary's entry: the time series' files and samples (none: [] and 0), then what
        each monitor adds."""
        entry = {"files": [], "samples": 0}
        for monitor in self.monitors:
            entry.update(monitor.describe())
        return entry

    @property
    def checkpoint_state(self):
        """runner/restart.py's hook, called when not None: the state of the monitors that keep
        one (Monitor.state), by section. None while none does, so a checkpoint holds nothing
        for them."""
        keeping = [m for m in self.monitors if m.keeps_state()]
        return (lambda: {m.section: m.state() for m in keeping}) if keeping else None

    @property
    def checkpoint_arrays(self):
        """runner/restart.py's hook, called when not None: {section/name: array (elements on
        axis 1)} of the monitors' state_arrays. None while no monitor keeps state."""
        keeping = [m for m in self.monitors if m.keeps_state()]
        if not keeping:
            return None
        return lambda: {f"{m.section}/{key}": value for m in keeping for key, value in m.state_arrays().items()}

    def restore_checkpoint_arrays(self, saved: dict) -> None:
        """runner/restart.py's hook: each monitor's arrays, {section/name: host array}."""
        for monitor in self.monitors:
            prefix = f"{monitor.section}/"
            mine = {key[len(prefix):]: value for key, value in saved.items() if key.startswith(prefix)}
            if mine:
                monitor.restore_arrays(mine)

    def restore_checkpoint_state(self, saved: dict, interpolated: bool = False) -> list:
        """runner/restart.py's hook: each monitor's saved state handed back (Monitor.restore);
        after a restart onto another order or mesh (``interpolated``) only to the monitors whose
        state is kept_across_interpolation. Returns the sections that start afresh."""
        afresh = []
        for monitor in self.monitors:
            if monitor.section in saved:
                if interpolated and not monitor.kept_across_interpolation:
                    afresh.append(monitor.section)
                else:
                    monitor.restore(saved[monitor.section])
        return afresh

    def __getattr__(self, name: str):
        """``series.probes``, ``series.dft``, ...: the object observing the case's
        ``[output.<name>]`` (Monitor.parts), None when the case has none."""
        if name.startswith("_") or "monitors" not in self.__dict__:
            raise AttributeError(name)
        for monitor in self.monitors:
            parts = monitor.parts()
            if name in parts:
                return parts[name]
        if name in section_names():
            return None
        raise AttributeError(f"{type(self).__name__} has no attribute or monitor '{name}'")
