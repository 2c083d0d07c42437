"""A checked case: the :class:`Case` and its immutable sections, with attribute access
(``case.mesh.elements``, ``case.time.t_end``), ``case.to_dict()`` for the effective
configuration (defaults included) and ``case.to_toml()`` for the same as TOML text.
config/schema.py builds one from a case file."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from lobatto.config.system_tables import tables_to_dict
from lobatto.config.toml_text import to_toml

__all__ = ["Case", "MeshSection", "DiscretizationSection", "PhysicsSection", "FieldsSection", "TimeSection",
           "OutputSection", "CheckpointSection", "BackendSection", "ParallelSection"]


@dataclass(frozen=True)
class MeshSection:
    generator: str  # "box", or a file format: "gmsh", "nek"
    elements: tuple | None  # (ex, ey, ez) ints, or (ex, ey) for a 2-D box; None for a file mesh
    lower: tuple | None  # (x, y, z) floats (one per axis of elements); None for a file mesh
    upper: tuple | None
    periodic: tuple  # (bool, bool, bool) (one per axis of elements); all False for a file mesh (its file says)
    boundary: str  # default kind for every non-periodic side (box) or unmapped group (file)
    boundaries: dict  # box: side -> kind or "periodic", all 2*dim sides; file: group name -> kind, as given
    deform: dict  # axis -> Expression, only the axes given (may be empty)
    file: str | None = None  # the mesh file (absolute, or as given when the case has no file)
    extrude: tuple = ()  # file meshes: ({"surface", "layers", "thickness"}, ...) in order (mesh/extrude.py)

    @property
    def from_file(self) -> bool:
        return self.file is not None

    @property
    def num_elements(self) -> int | None:
        """Elements of a box; None for a file mesh (known once the file is read)."""
        if self.elements is None:
            return None
        return math.prod(self.elements)

    @property
    def dim(self) -> int | None:
        """2 or 3 for a box (the entries of elements); None for a file mesh (known once read)."""
        return None if self.elements is None else len(self.elements)


@dataclass(frozen=True)
class DiscretizationSection:
    order: int
    flux: str
    volume_form: str = "auto"  # DG volume terms on curved elements: "auto", "split", "chain" or "galerkin" (VOLUME_FORMS)


@dataclass(frozen=True)
class PhysicsSection:
    """``[physics]``: the system's name and its own keys (``values``, defaults filled in),
    also readable as attributes (``case.physics.epsilon``)."""

    equations: str
    values: dict = field(default_factory=dict)

    def __getattr__(self, key):
        values = self.__dict__.get("values", {})
        if key in values:
            return values[key]
        raise AttributeError(f"[physics] of '{self.__dict__.get('equations')}' has no key {key!r}")


@dataclass(frozen=True)
class FieldsSection:
    """``[initial]`` or ``[exact]``.

    ``fields`` maps every field name of the system to an Expression (a missing
    component is the constant ``0``), or is None for an ``[exact]`` section
    that the case does not have. ``given`` lists the components the file set.
    """

    fields: dict | None
    given: tuple = ()

    @property
    def present(self) -> bool:
        return self.fields is not None

    def __bool__(self) -> bool:
        return self.fields is not None


@dataclass(frozen=True)
class TimeSection:
    integrator: str
    t_end: float
    cfl: float
    dt: float | None  # None: computed from cfl
    cfl_check: bool = True  # refuse a cfl above the integrator's stability bound
    growth_check: bool = True  # stop a run whose energy grows exponentially (runner/growth_guard.py)
    target_cfl: float | None = None  # variable dt aiming at this CFL number (not with dt or cfl)
    initial_dt: float | None = None  # the first step with target_cfl (None: from the initial state)
    max_cfl: float | None = None  # a step over this CFL number stops the run (None: not checked)
    substeps: int = 0  # RK4 sub-steps of the advection term per step (navier_stokes); 0: extrapolated
    steady_tolerance: float | None = None  # stop once the relative change per unit time is below (runner/steady_stop.py)
    steady_every: int = 10  # steps between the steady_tolerance checks
    until_decayed: float | None = None  # stop once the watched field fell below this fraction (runner/decay_stop.py)
    decay_interval: float | None = None  # the time over which the watched maximum is taken, between checks
    decay_watch: str | None = None  # "probes" (|fields|^2 at [output.probes]) or "energy"


@dataclass(frozen=True)
class OutputSection:
    every: int
    formats: tuple
    name: str
    compression: str = "none"  # HDF5 snapshots: io/compression.py
    probes: Any = None  # config/probes.py ProbesSection, or None
    integrals: Any = None  # config/probes.py IntegralsSection, or None
    dft: Any = None  # config/dft.py DftSection, or None
    log_every: int = 1  # a step line every this many steps (systems with step reports); 0: none
    #: the tables of monitors that declare their keys (config/declared.py), by name; each is
    #: also an attribute (``case.output.far_field``)
    monitors: Mapping[str, Any] = field(default_factory=dict)
    #: [output] derived: fields the system computes at each snapshot (config/derived.py), and
    #: the formats' own lists ([output.vtk] derived ...), by format
    derived: tuple = ()
    format_derived: Mapping[str, tuple] = field(default_factory=dict)

    def derived_for(self, fmt: str) -> tuple:
        """The derived fields written to the snapshots of format ``fmt``."""
        return tuple(self.format_derived.get(fmt, self.derived))

    def __getattr__(self, name: str):
        monitors = self.__dict__.get("monitors", {})
        if name in monitors:
            return monitors[name]
        raise AttributeError(f"[output] has no table {name!r}")


@dataclass(frozen=True)
class CheckpointSection:
    """``[checkpoint]``: when to write a restartable checkpoint (docs/restart.md)."""

    every: int = 0  # steps between checkpoints; 0: none by step count
    wall_minutes: float | None = None  # wall time between checkpoints; None: none by time
    keep: int = 2  # the newest this many are kept
    compression: str = "none"
    #: one more at the end of the run; None (not given): true when every or wall_minutes is
    #: given; true given alone turns checkpoints on with that one only (a user who writes
    #: at_end = true expects a final checkpoint, not none)
    at_end: bool | None = None

    @property
    def enabled(self) -> bool:
        return self.every > 0 or self.wall_minutes is not None or self.at_end is True


@dataclass(frozen=True)
class BackendSection:
    name: str
    precision: str


@dataclass(frozen=True)
class ParallelSection:
    exchange: str
    method: str
    partitioner: str
    overlap: bool | str = "auto"  # True, False or "auto"


@dataclass(frozen=True)
class Case:
    """A checked case. Sections are attributes; ``name`` is the file stem."""

    name: str
    source: str
    mesh: MeshSection
    discretization: DiscretizationSection
    physics: PhysicsSection
    initial: FieldsSection
    exact: FieldsSection
    time: TimeSection | None  # None for a steady system (PhysicsSpec.steady)
    output: OutputSection
    backend: BackendSection
    parallel: ParallelSection
    _raw: dict = field(default=None, repr=False, compare=False)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    #: the system's own tables and [boundary.<name>] data (config/system_tables.py)
    tables: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The effective configuration (defaults included) as plain Python data."""
        m = self.mesh
        if m.from_file:
            mesh: dict[str, Any] = {"generator": m.generator, "file": m.file, "boundary": m.boundary}
        else:
            mesh = {
                "generator": m.generator,
                "elements": list(m.elements),
                "lower": list(m.lower),
                "upper": list(m.upper),
                "periodic": list(m.periodic),
                "boundary": m.boundary,
            }
        sides = {s: k for s, k in m.boundaries.items() if k != "periodic"}
        if sides:
            mesh["boundaries"] = sides
        if m.deform:
            mesh["deform"] = {a: e.text for a, e in m.deform.items()}
        if m.extrude:
            mesh["extrude"] = [dict(e) for e in m.extrude]
        out: dict[str, Any] = {
            "mesh": mesh,
            "discretization": {
                "order": self.discretization.order,
                "flux": self.discretization.flux,
                "volume_form": self.discretization.volume_form,
            },
            "physics": {"equations": self.physics.equations,
                        **{k: getattr(v, "text", v) for k, v in self.physics.values.items() if v is not None}},
            "initial": {n: e.text for n, e in self.initial.fields.items()},
        }
        if self.exact.fields is not None:
            out["exact"] = {n: e.text for n, e in self.exact.fields.items()}
        if self.time is not None:  # None: a steady system
            time: dict[str, Any] = {
                "integrator": self.time.integrator,
                "t_end": self.time.t_end,
                "cfl": self.time.cfl,
            }
            if self.time.dt is not None:
                time["dt"] = self.time.dt
            time["cfl_check"] = self.time.cfl_check
            if not self.time.growth_check:  # (only when off: older effective configurations stay equal)
                time["growth_check"] = False
            for key in ("target_cfl", "initial_dt", "max_cfl"):
                if getattr(self.time, key) is not None:
                    time[key] = getattr(self.time, key)
            if self.time.substeps:
                time["substeps"] = self.time.substeps
            if self.time.steady_tolerance is not None:
                time["steady_tolerance"] = self.time.steady_tolerance
                time["steady_every"] = self.time.steady_every
            if self.time.until_decayed is not None:
                for key in ("until_decayed", "decay_interval", "decay_watch"):
                    time[key] = getattr(self.time, key)
            if self.time.target_cfl is not None:  # cfl does not apply (and may not be given with it)
                del time["cfl"]
            out["time"] = time
        out.update(tables_to_dict(self.tables))
        out["output"] = {
            "every": self.output.every,
            "formats": list(self.output.formats),
            "name": self.output.name,
        }
        if self.output.compression != "none":
            out["output"]["compression"] = self.output.compression
        if self.output.log_every != 1:
            out["output"]["log_every"] = self.output.log_every
        for series in ("probes", "integrals", "dft"):  # [output.probes], [output.integrals], [output.dft]
            if getattr(self.output, series) is not None:
                out["output"][series] = getattr(self.output, series).to_dict()
        for monitor, values in self.output.monitors.items():
            out["output"][monitor] = values.to_dict()
        if self.output.derived:
            out["output"]["derived"] = list(self.output.derived)
        for fmt, names in self.output.format_derived.items():  # [output.vtk] derived ...
            out["output"][fmt] = {"derived": list(names)}
        if self.checkpoint != CheckpointSection():
            c = self.checkpoint
            out["checkpoint"] = {"every": c.every, "keep": c.keep, "compression": c.compression}
            if c.at_end is not None:
                out["checkpoint"]["at_end"] = c.at_end
            if c.wall_minutes is not None:
                out["checkpoint"]["wall_minutes"] = c.wall_minutes
        out["backend"] = {"name": self.backend.name, "precision": self.backend.precision}
        out["parallel"] = {
            "exchange": self.parallel.exchange,
            "method": self.parallel.method,
            "partitioner": self.parallel.partitioner,
            "overlap": self.parallel.overlap,
        }
        return out

    def to_toml(self) -> str:
        """TOML text of the effective configuration; parses back to the same case."""
        about = " ".join(f"case '{self.name}' (source: {self.source})".split())
        header = f"# effective configuration of {about}\n"
        return header + to_toml(self.to_dict())

    @property
    def raw(self) -> dict:
        """The dict the case was parsed from (as read, before defaults)."""
        return self._raw
