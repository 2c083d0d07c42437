"""The Python API: everything a case file says, said from Python (docs/python.md).

    import lobatto

    case = lobatto.case_from_dict({
        "physics": {"equations": "acoustics"},
        "mesh": {"elements": [2, 2, 2]},
        "time": {"t_end": 0.1},
    })
    result = lobatto.run(case, output_dir="out", backend="cpu")
    result.summary["errors"], result.fields["p"], result.coordinates

``load_case``, ``parse_case`` and ``case_from_dict`` check a case against the registered
systems exactly as ``lobatto run`` does (the same errors, as :class:`lobatto.errors.InputError`);
``with_changes(case, {...})`` gives a changed, re-checked copy for parameter studies; :class:`Simulation` gives
step-by-step control; ``run`` does what ``lobatto run`` does and returns the results as arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from lobatto.config import schema
from lobatto.runner import normalization, ports
from lobatto.runner.simulation import Simulation, run_case
from lobatto.monitors.registry import monitor_tables
from lobatto.systems.registry import SYSTEMS, physics_specs

__all__ = ["Result", "Simulation", "available_systems", "case_from_dict", "load_case", "parse_case", "run",
           "run_case", "with_changes"]


def available_systems() -> dict:
    """{equations name: one-line description} of every registered system."""
    return {name: cls.spec.description for name, cls in SYSTEMS.items()}


def load_case(path) -> schema.Case:
    """Read and check a TOML case file."""
    return schema.load_case(path, systems=physics_specs(), monitors=monitor_tables())


def parse_case(data: Mapping[str, Any], source: str = "<python>", name: str | None = None) -> schema.Case:
    """Check a case given as a dict shaped like the TOML file (errors name ``source``)."""
    return schema.parse_case(data, source=source, name=name, systems=physics_specs(), monitors=monitor_tables())


def case_from_dict(data: Mapping[str, Any], name: str = "case") -> schema.Case:
    """``parse_case`` for a case written in Python; ``name`` names its outputs."""
    return parse_case(data, source=f"<{name}>", name=name)


def with_changes(case: schema.Case, changes: Mapping[str, Any]) -> schema.Case:
    """A new case: ``case``'s effective configuration with dotted keys replaced, checked again.

        finer = with_changes(case, {"discretization.order": 9, "mesh.elements": [4, 4, 4]})
    """
    data = case.to_dict()
    for dotted, value in changes.items():
        *sections, key = dotted.split(".")
        table = data
        for section in sections:
            table = table.setdefault(section, {})
        table[key] = value
    return parse_case(data, source=case.source, name=case.name)


@dataclass
class Result:
    """What a run gives back: the summary, this rank's fields and GLL coordinates (host
    arrays, (E, n, n, n) per field and (3, E, n, n, n)), and the output directory."""

    summary: dict
    fields: dict
    coordinates: np.ndarray
    output_dir: Path
    simulation: Simulation

    @property
    def errors(self) -> dict | None:
        return self.summary.get("errors")


def run(case, backend: str | None = None, output_dir=None, comm=None, progress=None) -> Result:
    """Run a case (a Case, a dict or a path to a TOML file) to its t_end, writing its outputs.

    ``comm``: None runs serially (the default here, unlike ``lobatto run``), "world" on every
    rank of MPI_COMM_WORLD, or an mpi4py communicator.
    """
    if isinstance(case, (str, Path)):
        case = load_case(case)
    elif isinstance(case, Mapping):
        case = case_from_dict(case)
    if SYSTEMS[case.physics.equations].spec.steady:  # one solve (lobatto/runner/steady.py)
        from lobatto.runner.steady import SteadyRun

        simulation = SteadyRun(case, backend=backend, output_dir=output_dir, comm=comm, progress=progress)
    elif ports.wanted(case):  # one run per driven port, then the S-parameters; the Result: the last run's
        kept: list = []
        summary = ports.run(case, backend, output_dir, comm, progress, Simulation, keep=kept)
        simulation = kept[0]
        return Result(summary=summary, fields=simulation.fields(), coordinates=simulation.coordinates(),
                      output_dir=Path(output_dir if output_dir is not None else f"{case.name}_out"),
                      simulation=simulation)
    else:
        # with [output.dft] normalize, the run without [material] tables comes first
        simulation = normalization.simulation(case, backend, output_dir, comm, progress, Simulation)
    summary = simulation.run()
    return Result(summary=summary, fields=simulation.fields(), coordinates=simulation.coordinates(),
                  output_dir=simulation.output_dir, simulation=simulation)
