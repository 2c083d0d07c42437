"""The monitor contract: what observes a run while it steps (docs/architecture.md, "Adding a
monitor").

A monitor is one short class selected by a table of the case's ``[output]``
(``[output.<section>]``), registered by that name (registry.py); the run's set of them is
run_set.MonitorSet. Its life in a run, on every rank:

    from_case(case, section, system, comm)     set up: points located, parts found
    check_start(step) ... start(u, step, t, ...)   before the first step (step > 0: continued)
    after_step(u, step, t, last)               after the start and after every step
    close(output_dir, attrs)                   its file written, atomically
    describe()                                 its entry in the run's summary

plus ``memory_estimate`` before anything is built and ``state``/``restore`` for checkpoints.

Collectives: every rank calls the same collective sequence (allreduce, gather) in the same
order, also a rank that owns none of the monitor's points or faces (it passes zeros or empty
parts); a collective is never reached under a rank-local condition.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from lobatto.errors import InputError


class Monitor(ABC):
    """One monitor of a run on this rank's part of the mesh.

    A subclass sets ``section`` and implements ``__init__(section, system, comm=None)``,
    ``after_step``, ``close`` and ``describe``. What it needs from the system it reads through
    the System object: ``system.field_names``, ``system.mesh``, ``system.geometry``,
    ``system.quadrature_mass()``, ``system.spec.integrands``, ``system.backend`` (its arrays:
    ``backend.xp``, ``backend.to_host``). Nothing in a generic monitor names a system; a
    system's own monitor lives in the system's package and registers itself from there.
    """

    #: the case's ``[output.<section>]`` table this monitor reads; the name it is registered under
    section: ClassVar[str] = ""
    #: further ``[output.X]`` tables it reads beside ``section`` (the time series: integrals)
    more_sections: ClassVar[tuple[str, ...]] = ()
    #: why a continued run is refused (check_start): what the checkpoint does not hold
    not_in_checkpoint: ClassVar[str] = "its state is not saved in it"
    #: whether its saved state still holds after a restart onto another order or mesh
    #: (``--interpolate``); False: it starts afresh there (state kept at the old points)
    kept_across_interpolation: ClassVar[bool] = True
    #: the mesh dimensions it is built for; (2, 3) when it also works on a 2-D mesh of quads
    #: (arrays (..., E, 1, n, n), edges as faces, values per unit depth): runner/dimension.py
    #: refuses its table on a 2-D mesh otherwise
    dimensions: ClassVar[tuple[int, ...]] = (3,)
    #: its table's declared keys (a config.toolkit.Table of config.physics.Key): the case file's
    #: ``[output.<section>]`` is then read from them (config/declared.py) and the monitor gets
    #: the values as attributes. None: the table is one of config's own ([output.probes], ...)
    table: ClassVar[Any] = None
    #: the case's ``[output] name``: the prefix of its files (set by from_case)
    output_name: str = ""

    @classmethod
    def section_of(cls, output) -> Any:
        """The parsed table this monitor reads from the case's ``[output]`` (``case.output``),
        or None when the case has none: the monitor is then not built."""
        if cls.table is not None:
            return output.monitors.get(cls.section)
        return getattr(output, cls.section, None)

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        """machine.memory_items.MemoryItem of what it allocates, for a RunLayout (known before
        the mesh is built); parts known only once set up are checked again then
        (memory_items.check_allocation). Default: nothing worth counting."""
        return []

    @classmethod
    def from_case(cls, case, section, system, comm=None) -> Monitor:
        """Collective: the monitor of the case's ``section`` (``section_of(case.output)``),
        set up on this rank's part of the mesh. Default: ``cls(section, system, comm)``."""
        monitor = cls(section, system, comm)
        monitor.output_name = case.output.name
        return monitor

    @classmethod
    def keeps_state(cls) -> bool:
        """Whether it saves state in checkpoints (it overrides ``state``)."""
        return cls.state is not Monitor.state

    def check_start(self, step: int) -> None:
        """Before any monitor starts (so a refusal touches no file): InputError when it cannot
        start at ``step``. Default: a run continued from a checkpoint (step > 0) is refused
        unless the monitor restores its state from the checkpoint (it overrides ``restore``).
        Not collective: it runs inside the run's collective_errors."""
        if step > 0 and type(self).restore is Monitor.restore:
            raise InputError(f"[output.{self.section}] cannot continue from a checkpoint: {self.not_in_checkpoint} "
                             "(run from the start)")

    def start(self, u, step: int, t: float, output_dir, attrs: dict) -> None:
        """Before the run's first step ``step`` at time ``t``: open its files (``output_dir``;
        ``attrs``: the files' root attributes, ``attrs["name"]`` the output name). The state is
        then sampled by ``after_step(u, step, t, last)``. Not collective (it runs inside the
        run's collective_errors). Default: nothing."""

    @abstractmethod
    def after_step(self, u, step: int, t: float, last: int) -> None:
        """Collective: observe the state ``u`` at ``step`` and time ``t``, called after the
        start and after every step: a sampler samples when due (a multiple of its every, or
        the run's ``last`` step), a running transform accumulates every step. Device work may
        stay queued; a sample that needs the values synchronizes the backend first."""

    @abstractmethod
    def close(self, output_dir, attrs: dict) -> None:
        """Collective, after the last step: its file in ``output_dir`` written (rank 0),
        atomically (io/atomic.py); ``attrs``: the file's root attributes (the effective
        configuration, the equations, ``attrs["name"]`` the output name)."""

    @abstractmethod
    def describe(self) -> dict:
        """What it adds to the summary's ``time_series`` entry: {key: JSON-able value}, by
        convention one key, its section (``{"dft": {"file": ..., ...}}``)."""

    def state(self) -> dict | None:
        """What a checkpoint keeps of it (JSON-able), handed back to ``restore`` when the run
        continues. Default: nothing to save (None)."""
        return None

    def restore(self, state: dict) -> None:
        """Take back ``state()`` saved in the checkpoint a run continues from. Default:
        nothing (and check_start refuses a continued run)."""

    def state_arrays(self) -> dict:
        """Arrays a checkpoint keeps of it, by name: backend or host arrays with this rank's
        elements on axis 1 (as ``u``), stored by global element id, so a run continued on
        another number of ranks gets its own elements' back in ``restore_arrays``. Default:
        none. Called on every rank, after ``state``."""
        return {}

    def restore_arrays(self, arrays: dict) -> None:
        """Take back ``state_arrays()`` (host arrays, this rank's elements on axis 1), after
        ``restore``. Default: nothing."""

    def parts(self) -> dict:
        """The objects observing each table it reads, by section name (the run set's
        ``series.<section>`` attributes). Default: ``{section: self}``."""
        return {self.section: self}
