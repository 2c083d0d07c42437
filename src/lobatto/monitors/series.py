"""The time series of a run: its probes (probes.py) and integrals (integrals.py), sampled at
the start, every K steps (each table its own K) and at the last step, written by rank 0 into
``NAME_probes.csv`` and ``NAME_probes.h5`` (io/timeseries.py, docs/probes.md). One monitor
reads both tables, ``[output.probes]`` and ``[output.integrals]``: they share the files' rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lobatto.machine.parallel import collective_errors, rank_and_size
from lobatto.monitors.base import Monitor
from lobatto.monitors.integrals import Integrals
from lobatto.monitors.probes import Probes


@dataclass(frozen=True)
class SeriesSections:
    """The tables the time series reads: ``[output.probes]`` and ``[output.integrals]``
    (config/probes.py's sections), each None when the case has none."""

    probes: Any = None
    integrals: Any = None


def due(section, step: int, last: int) -> bool:
    """Whether a table with ``every`` samples at ``step`` (a multiple of it, or the ``last``)."""
    return section is not None and (step % section.every == 0 or step == last)


class TimeSeriesMonitor(Monitor):
    """Probes and integrals of one run on this rank's part of the mesh, and rank 0's writer."""

    section = "probes"
    more_sections = ("integrals",)
    dimensions = (2, 3)  # probes at [x, y] (mesh/locate.py), integrals per unit depth

    @classmethod
    def section_of(cls, output) -> SeriesSections | None:
        probes, integrals = getattr(output, "probes", None), getattr(output, "integrals", None)
        return None if probes is None and integrals is None else SeriesSections(probes, integrals)

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        """memory_items.MemoryItem of the probes and of the integrals (each class's own count)."""
        items = []
        if section.probes is not None:
            items += Probes.memory_estimate(section.probes, layout)
        if section.integrals is not None:
            items += Integrals.memory_estimate(section.integrals, layout)
        return items

    def __init__(self, section: SeriesSections, system, comm=None):
        self.settings, self.system, self.comm = section, system, comm
        self.rank, _ = rank_and_size(comm)
        self.probes = Probes(section.probes, system, comm) if section.probes is not None else None
        self.integrals = Integrals(section.integrals, system, comm) if section.integrals is not None else None
        self.writer = None  # rank 0's io.timeseries.TimeSeriesWriter, once started
        self.samples = 0  # rows this process appended
        self.earlier = 0  # rows a continued run kept from the run before it (rank 0: its files)

    def check_start(self, step: int) -> None:
        """A continued run carries on: the files keep the earlier run's samples before ``step``."""

    def start(self, u, step: int, t: float, output_dir, attrs: dict) -> None:
        """Rank 0 opens the files (a continued run keeps the samples before ``step``)."""
        if self.rank == 0 and self.writer is None:
            from lobatto.io.timeseries import TimeSeriesWriter

            self.writer = TimeSeriesWriter(output_dir, attrs["name"],
                                           None if self.probes is None else self.probes.describe(),
                                           None if self.integrals is None else self.integrals.columns, attrs,
                                           continue_from=step if step > 0 else None)
            self.earlier = self.writer.earlier_rows

    def after_step(self, u, step: int, t: float, last: int) -> None:
        """Collective: sample what is due at ``step`` and append it to the files (rank 0)."""
        due_probes, due_integrals = due(self.settings.probes, step, last), due(self.settings.integrals, step, last)
        if not (due_probes or due_integrals):
            return
        self.system.backend.synchronize()
        probes = self.probes.values(u) if due_probes else None
        integrals = self.integrals.values(u) if due_integrals else None
        with collective_errors(self.comm):
            if self.rank == 0:
                self.writer.append(step, t, probes, integrals)
        self.samples += 1

    def close(self, output_dir, attrs: dict) -> None:
        """The HDF5 file brought up to date (rank 0)."""
        if self.writer is not None:
            self.writer.close()

    def describe(self) -> dict:
        """The files, the number of samples in them (on rank 0, which writes them: a continued
        run's count includes the rows kept from the run before), what was sampled."""
        from lobatto.io.timeseries import file_names

        entry = {"files": list(file_names(self.output_name)), "samples": self.earlier + self.samples}
        if self.probes is not None:
            entry["probes"] = {"every": self.settings.probes.every, **self.probes.describe()}
        if self.integrals is not None:
            entry["integrals"] = {"every": self.settings.integrals.every,
                                  "columns": [f"{q}@{w}" for q, w, _, _ in self.integrals.columns]}
        return entry

    def parts(self) -> dict:
        return {"probes": self.probes, "integrals": self.integrals}
