"""The declared keys of the generic tables of a case file ([mesh], [discretization], [time],
[output], [checkpoint], [backend], [parallel] and the top level), their choices, and the
catalogue of every known key (:func:`schema_keys`) that unknown keys are checked against.

Each table is a :class:`~lobatto.config.toolkit.Table` of :class:`~lobatto.config.physics.Key`
(name, kind, default, help, range); the monitor tables declare theirs beside their readers
(config/probes.py, dft.py), a system its own in its :class:`PhysicsSpec`, a monitor that
declares its table in its own module (config/declared.py) there.
docs/case-file.md lists every declared key (tests/unit/test_config_toolkit.py checks it).
"""

from __future__ import annotations

from lobatto.config.derived import DERIVED_KEY, FORMAT_TABLES, SNAPSHOT_FORMATS
from lobatto.config.dft import DFT
from lobatto.config.physics import Key, PhysicsSpec
from lobatto.config.probes import INTEGRALS, PROBES
from lobatto.config.ranges import section_range
from lobatto.config.toolkit import Table
from lobatto.io.compression import COMPRESSIONS

__all__ = ["SIDES", "AXES", "GENERIC_TABLES", "MONITOR_TABLES", "schema_keys"]

SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")
AXES = ("x", "y", "z")
INTEGRATORS = ("lsrk45", "rk4", "ssprk3", "bdf1", "bdf2", "bdf3")  # each system takes some (PhysicsSpec.integrators)
MULTISTEP_INTEGRATORS = ("bdf1", "bdf2", "bdf3")
#: [time] cfl default per integrator, lowered to 0.9 of a system's stability bound where that is
#: lower (PhysicsSpec.default_cfl; benchmarks/notes-stability.md); for the multistep schemes
#: the CFL number is the system's advective one (its ``courant``)
DEFAULT_CFL = {"lsrk45": 0.5, "rk4": 0.3, "ssprk3": 0.25, "bdf1": 0.5, "bdf2": 0.5, "bdf3": 0.5}
#: [time] max_cfl default of the multistep schemes: a guard against a run gone wrong, not a
#: stability bound (extrapolated advection is unstable well below it: docs/case-file.md)
DEFAULT_MAX_CFL = 2.0


def default_max_cfl(substeps: int) -> float:
    """[time] max_cfl default of a multistep scheme with ``substeps`` sub-steps per step: the
    sub-steps carry the advection term, so a step's CFL number may be ``substeps`` times a
    sub-step's; the guard grows with it (2, 6, 10, ... for 0, 1, 2 sub-steps), staying above
    the stable range measured in docs/navier-stokes.md ("Sub-stepping")."""
    return DEFAULT_MAX_CFL * (1 + 2 * int(substeps))

OUTPUT_FORMATS = SNAPSHOT_FORMATS  # ("hdf5", "nek", "vtk"): each has an [output.<format>] table (config/derived.py)
BACKENDS = ("cpu", "cuda", "auto")
PRECISIONS = ("float64", "float32")
EXCHANGES = ("auto", "nccl", "cuda-aware-mpi", "host")
METHODS = ("auto", "pairwise", "crystal_router", "allreduce")
PARTITIONERS = ("rcb", "metis", "rsb")
MESH_GENERATORS = ("box", "gmsh", "nek")  # the box generator, and the mesh file formats
MAX_ORDER = 24
MAX_ELEMENTS = 10**12  # far beyond any machine; keeps element ids within int64
#: the DG systems' volume terms on curved elements: "split" (half chain rule, half
#: conservative: the discrete energy never grows) or "chain" (the chain rule alone, more
#: accurate on coarse curved elements at low N, but it can gain energy there) or "galerkin"
#: (a weight-adjusted Galerkin form with a skew-symmetric volume term on Gauss rules of N + 1
#: points, energy-stable and more accurate than the chain rule; only for the systems that offer
#: it: docs/case-file.md)
VOLUME_FORMS = ("auto", "split", "chain", "galerkin")


TOP = Table("", tuple(Key(name, "table", None, doc) for name, doc in (
    ("mesh", "the mesh"), ("discretization", "polynomial order and fluxes"), ("physics", "the system and its keys"),
    ("initial", "initial fields"), ("exact", "exact solution"), ("time", "time stepping"),
    ("output", "snapshots and monitors"), ("backend", "where and in what precision"),
    ("parallel", "MPI exchange and partitioning"), ("checkpoint", "restartable checkpoints"))))

MESH = Table("mesh", (
    Key("generator", "choice", "box", "how the mesh is made", choices=MESH_GENERATORS),
    Key("file", "string", None, "the mesh file of a file generator, relative to the case file"),
    Key("elements", "vector", None, "elements along x, y, z (box); two entries: a 2-D mesh of quadrilaterals",
        required=True),
    Key("lower", "vector", [0.0, 0.0, 0.0], "lower corner of the box", range=section_range("mesh", "lower")),
    Key("upper", "vector", [1.0, 1.0, 1.0], "upper corner of the box", range=section_range("mesh", "upper")),
    Key("periodic", "vector", [False, False, False], "periodic axes"),
    Key("boundary", "string", None, "the boundary kind of every side (default: the system's)"),
    Key("boundaries", "table", None, "boundary kinds by side or surface group"),
    Key("deform", "table", None, "expressions mapping the box's coordinates"),
    Key("extrude", "list", None, "mesh files: layers grown outward from named planar surfaces, "
        '[{surface = "port1", layers = 6, thickness = 0.25}] (written by [port] surface)'),
))
MESH_BOUNDARIES = Table("mesh.boundaries", tuple(Key(s, "string", None, f"the boundary kind of {s}") for s in SIDES))
MESH_DEFORM = Table("mesh.deform", tuple(Key(a, "expression", None, f"displacement added to the {a} coordinate")
                                         for a in AXES))

DISCRETIZATION = Table("discretization", (
    Key("order", "integer", 7, f"polynomial order N, 1 to {MAX_ORDER}"),
    Key("flux", "string", None, "numerical flux between elements (default: the system's first)"),
    Key("volume_form", "choice", VOLUME_FORMS[0], "DG volume terms on curved elements", choices=VOLUME_FORMS),
))
PHYSICS = Table("physics", (Key("equations", "string", None, "the system solved (default: the first registered)"),))

TIME = Table("time", (
    Key("integrator", "string", None, "the time stepper (default: the system's)"),
    Key("t_end", "positive", None, "final time", required=True, range=section_range("time", "t_end")),
    Key("cfl", "positive", None, "CFL number of the step (default: per integrator)",
        range=section_range("time", "cfl")),
    Key("dt", "positive", None, "fixed step size", range=section_range("time", "dt")),
    Key("cfl_check", "bool", True, "refuse a cfl above the stability bound"),
    Key("growth_check", "bool", True, "stop a run whose energy grows exponentially beyond what its sources inject"),
    Key("target_cfl", "positive", None, "variable dt aiming at this CFL number",
        range=section_range("time", "target_cfl")),
    Key("initial_dt", "positive", None, "the first step with target_cfl", range=section_range("time", "initial_dt")),
    Key("max_cfl", "positive", None, "a step over this CFL number stops the run (default for bdf*: 2 (1 + 2 "
        "substeps), as sub-steps carry the advection past CFL 2)", range=section_range("time", "max_cfl")),
    Key("substeps", "count", 0, "RK4 sub-steps of the advection term per step (navier_stokes; 0: extrapolated)",
        range=section_range("time", "substeps")),
    Key("steady_tolerance", "positive", None, "stop before t_end once the state's relative change per unit "
        "time is below this (a steady state)", range=section_range("time", "steady_tolerance")),
    Key("steady_every", "count", 10, "steps between the steady_tolerance checks (the change is measured over "
        "them)", range=section_range("time", "steady_every")),
    Key("until_decayed", "positive", None, "stop before t_end once the watched field's maximum over the last "
        "decay_interval is below this fraction of its maximum so far", range=section_range("time", "until_decayed")),
    Key("decay_interval", "positive", None, "the time over which the watched maximum is taken, between the "
        "until_decayed checks (required with it)", range=section_range("time", "decay_interval")),
    Key("decay_watch", "choice", None, "what until_decayed watches: the [output.probes] points' sum of squares of "
        "their fields, or the energy (default: probes when the case has them)", choices=("probes", "energy")),
))

OUTPUT = Table("output", (
    Key("every", "count", 0, "steps between snapshots; 0: only the final state",
        range=section_range("output", "every")),
    Key("formats", "list", ["hdf5"], "snapshot formats", choices=OUTPUT_FORMATS),
    Key("name", "string", None, "stem of the output file names (default: the case file's)"),
    Key("compression", "choice", "none", "compression of the HDF5 snapshots", choices=COMPRESSIONS),
    Key("probes", "table", None, "point time series ([output.probes])"),
    Key("integrals", "table", None, "integral time series ([output.integrals])"),
    Key("dft", "table", None, "running Fourier transforms ([output.dft])"),
    Key("log_every", "count", 1, "a step line every this many steps; 0: none",
        range=section_range("output", "log_every")),
    DERIVED_KEY,
    *(Key(fmt, "table", None, f"the {fmt} snapshots' own derived fields ([output.{fmt}])") for fmt in SNAPSHOT_FORMATS),
))

CHECKPOINT = Table("checkpoint", (
    Key("every", "count", 0, "steps between checkpoints; 0: none by step count",
        range=section_range("checkpoint", "every")),
    Key("wall_minutes", "positive", None, "wall time between checkpoints",
        range=section_range("checkpoint", "wall_minutes")),
    Key("keep", "positive_integer", 2, "the newest this many are kept", range=section_range("checkpoint", "keep")),
    Key("compression", "choice", "none", "compression of the checkpoints", choices=COMPRESSIONS),
    Key("at_end", "bool", True, "one more checkpoint at the end of the run (given alone: only that one)"),
))

BACKEND = Table("backend", (
    Key("name", "choice", "cpu", "where to compute", choices=BACKENDS),
    Key("precision", "choice", "float64", "floating-point precision of the fields", choices=PRECISIONS),
))

PARALLEL = Table("parallel", (
    Key("exchange", "choice", "auto", "transport of face data between ranks", choices=EXCHANGES),
    Key("method", "choice", "auto", "gather-scatter communication pattern", choices=METHODS),
    Key("partitioner", "choice", "rcb", "element partitioner", choices=PARTITIONERS),
    Key("overlap", "bool_or_auto", "auto", "overlap interior updates with the face exchange"),
))

#: the monitor tables under [output]
MONITOR_TABLES = (PROBES, INTEGRALS, DFT)
#: every generic table, the top level first
GENERIC_TABLES = (TOP, MESH, MESH_BOUNDARIES, MESH_DEFORM, DISCRETIZATION, PHYSICS, TIME, OUTPUT, CHECKPOINT, BACKEND,
                  PARALLEL) + MONITOR_TABLES + FORMAT_TABLES

# Known keys of the generic sections, for "did you mean" suggestions across sections; the
# [physics], [initial] and [exact] keys come from the system (schema_keys).
# (in this order: the first table holding a misplaced key is the one suggested)
_KNOWN_KEYS: dict[str, tuple] = {table.name: table.key_names for table in (
    TOP, MESH, MESH_BOUNDARIES, MESH_DEFORM, DISCRETIZATION, PHYSICS, Table("initial", ()), Table("exact", ()), TIME,
    OUTPUT, DFT, PROBES, INTEGRALS, CHECKPOINT, BACKEND, PARALLEL) + FORMAT_TABLES}


def schema_keys(spec: PhysicsSpec | None) -> dict:
    """Every known key by section, with the [physics] keys and field names of ``spec``."""
    keys = dict(_KNOWN_KEYS)
    if spec is not None:
        keys["physics"] = ("equations",) + spec.key_names
        keys["initial"] = keys["exact"] = tuple(spec.fields)
        # a dotted table name ("solver.pressure") is a subtable: [solver] holds [solver.pressure]
        tops = tuple(dict.fromkeys(name.split(".")[0] for name in spec.tables))
        keys[""] = keys[""] + tops + (("boundary",) if spec.boundary_keys else ()) + tuple(spec.named_tables)
        subtables: dict = {}
        for name in spec.tables:
            if "." in name:
                top, sub = name.split(".", 1)
                subtables.setdefault(top, list(keys.get(top, ()))).append(sub)
        keys.update({top: tuple(subs) for top, subs in subtables.items()})
        keys.update({name: tuple(k.name for k in table) for name, table in spec.tables.items()})
    return keys
