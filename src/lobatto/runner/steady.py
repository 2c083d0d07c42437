"""One run of a steady system: mesh -> system -> one solve -> outputs -> summary.

``run_case`` (simulation.py) sends a case here when its system's spec is ``steady`` (no [time],
no steps). The system is built as for any run (``build.build_system``: memory check, mesh,
geometry, ``from_case``) and provides ``solve(x0, monitor)``, returning the state, and
``summary()``, its entries of summary.json. Then:

* the solve runs with the BLAS library held at one thread on the CPU backend
  (``backends.blas``: its threads and the compiled kernels' OpenMP threads would fight);
* rank 0 prints a line for iterations 0-10, every 10th to 100, then every 100th (stdout);
* a solve that does not converge writes summary.json (``converged: false``, the residual
  history) and stops with a SolverError (exit 1) saying what was reached and what to change;
* otherwise the state is written as one snapshot (step 0, time 0) in the case's formats,
  ``[output.probes]`` and ``[output.integrals]`` are sampled once (step 0, monitors/series.py),
  and summary.json with the iterations, residuals, time per part and, with [exact], errors.
"""

from __future__ import annotations

import math
import time
import weakref
from contextlib import nullcontext
from pathlib import Path

from lobatto import __version__
from lobatto.backends import get_backend
from lobatto.backends.blas import single_threaded_blas
from lobatto.errors import InputError, SolverError
from lobatto.io.run_lock import claim_output_dir, release_claim
from lobatto.io.summary import write_summary
from lobatto.machine.parallel import allreduce, collective_errors, node_local_rank, rank_and_size, world_comm
from lobatto.monitors import MonitorSet
from lobatto.io.progress import ProgressBar
from lobatto.runner.build import build_system, case_named, describe_mesh
from lobatto.runner.snapshots import SnapshotWriter


def refuse_time_dependent_options(case, restart) -> None:
    """InputError for what only a time-dependent run has: restarts, checkpoints, series."""
    steady = f"{case.physics.equations} is steady (one solve, no time steps)"
    if restart is not None:
        raise InputError(f"{case.source}: --restart does not apply: {steady}")
    if case.checkpoint.enabled:
        raise InputError(f"{case.source}: [checkpoint] does not apply: {steady}; remove it")
    for table in ("dft", "far_field"):  # running transforms in time ([output.probes] and integrals: one sample)
        if getattr(case.output, table, None) is not None:
            raise InputError(f"{case.source}: [output.{table}] (a running transform in time) does not apply: "
                             f"{steady}; remove it")
    if case.output.every:
        raise InputError(f"{case.source}: [output] every does not apply: {steady} (one snapshot is written); "
                         "remove it")


class SteadyRun:
    """One set-up steady run (the Python API's object for a steady case).

        run = SteadyRun(case, backend="cpu", output_dir="out", comm=None)
        summary = run.run()          # solve, write the snapshot and summary.json
        run.fields()["u"]            # this rank's solution, a host array (E, n, n, n)
    """

    def __init__(self, case, backend: str | None = None, output_dir=None, comm="world", progress=None,
                 restart=None):
        self.release_output_dir = lambda: None
        try:
            self.set_up(case, backend, output_dir, comm, progress, restart)
        except BaseException:
            self.release_output_dir()  # a case refused at set-up leaves its directory free at once
            raise

    def set_up(self, case, backend, output_dir, comm, progress, restart) -> None:
        refuse_time_dependent_options(case, restart)
        self.case = case
        self.comm = comm = world_comm() if comm == "world" else comm
        self.rank, self.size = rank_and_size(comm)
        self.output_dir = Path(output_dir if output_dir is not None else f"{case.name}_out")
        with collective_errors(comm):
            if self.rank == 0:  # one run per directory (io.run_lock): `lobatto run`'s lock, or a new one
                claim_output_dir(self.output_dir)
                self.release_output_dir = weakref.finalize(self, release_claim, self.output_dir)
            self.backend = get_backend(backend or case.backend.name, precision=case.backend.precision,
                                       device_id=node_local_rank(comm), rank=self.rank)
        self.progress = progress if self.rank == 0 else None
        # the monitor's norms are collective: on if any rank reports
        self.monitored = bool(allreduce(comm, int(progress is not None), "max"))
        start = time.perf_counter()
        with self.blas_limit():
            self.system = build_system(case, self.backend, comm=comm)
        self.setup_seconds = allreduce(comm, time.perf_counter() - start, "max")
        self.writer = SnapshotWriter(case, self.system, self.output_dir, comm)
        # [output.probes] and [output.integrals]: one sample of the solution (step 0, time 0)
        with collective_errors(comm), case_named(case):
            self.series = MonitorSet.from_case(case, self.system, self.output_dir, comm)
        self.u = None
        self.summary = None
        self.reference = 0.0  # ||b||, for the printed relative residuals (set by run)

    def blas_limit(self):
        return single_threaded_blas() if self.backend.name == "cpu" else nullcontext()

    def report(self, iteration: int, residual: float) -> None:
        """A line for one iteration on rank 0: stdout under ``lobatto run``, else the caller's
        progress(iteration, max_iterations, relative residual)."""
        if self.progress is None:
            return
        settings = self.system.settings
        relative = residual / self.reference if self.reference > 0 else residual
        if isinstance(self.progress, ProgressBar):
            print(f"  {settings['method']:>5s} iteration {iteration:5d}   residual {residual:.3e}   "
                  f"relative {relative:.3e}", flush=True)
        else:
            self.progress(iteration, settings["max_iterations"], relative)

    def initial_guess(self):
        """The [initial] u as a start for the iteration, or None when not given."""
        if "u" not in self.case.initial.given:
            return None
        return self.system.evaluate_fields(self.case.initial.fields, 0.0)[0]

    def run(self) -> dict:
        try:
            return self.solve_and_write()
        finally:
            self.release_output_dir()

    def solve_and_write(self) -> dict:
        case, system = self.case, self.system
        self.reference = system.level.assembly.norm(system.rhs) if self.monitored else 0.0  # collective
        with self.blas_limit():
            self.u = system.solve(self.initial_guess(), self.report if self.monitored else None)
        result = system.result
        if self.rank == 0 and isinstance(self.progress, ProgressBar):
            per = system.solve_seconds / max(result.iterations, 1)
            print(f"{case.physics.equations}: {system.solver.describe()}: "
                  f"{'converged' if result.converged else 'NOT converged'} in {result.iterations} iterations, "
                  f"relative residual {result.relative_residual:.3e}, {system.solve_seconds:.3g} s "
                  f"({per * 1e3:.3g} ms per iteration)", flush=True)
        if not result.converged:
            self.summary = self.make_summary(errors=False)
            if self.rank == 0:
                write_summary(self.output_dir / "summary.json", self.summary)
            error = SolverError(f"{case.source}: the solve did not converge: {result.reason}; "
                                f"{self.advice()} (residual history in {self.output_dir / 'summary.json'})")
            error.collective = True
            raise error
        self.writer.write(self.u, 0, 0.0)
        if self.series is not None:
            self.series.start(self.u, 0, 0.0, 0)
            self.series.close()
        self.summary = self.make_summary(errors=True)
        if self.rank == 0:
            write_summary(self.output_dir / "summary.json", self.summary)
        return self.summary

    def advice(self) -> str:
        """What to change after a solve that did not converge."""
        s, result = self.system.settings, self.system.result
        if not all(math.isfinite(r) for r in result.residuals):
            return "check [physics] f, k and h and the boundary data for values that overflow"
        hints = [f"raise [solver] max_iterations (now {s['max_iterations']})"]
        if s["preconditioner"] != "multigrid":
            hints.append("use [solver] preconditioner = \"multigrid\"")
        if s["precision"] == "float32" and result.relative_residual < 1e-5:
            hints.append("use [solver] precision = \"float64\" (float32 preconditioning may stall)")
        if s["method"] == "cg" and "breakdown" in result.reason:
            hints.append("use [solver] method = \"fcg\"")
        hints.append(f"or loosen [solver] tolerance (now {s['tolerance']:g})")
        return ", ".join(hints)

    # Results --------------------------------------------------------------------------------
    def fields(self) -> dict:
        """{"u": this rank's solution as a float64 host array (E, n, n, n)}."""
        values = self.backend.to_host(self.u).astype("float64", copy=False)
        return dict(zip(self.system.field_names, values))

    def coordinates(self):
        return self.system.geometry.coords

    def errors(self) -> dict | None:
        """L2 and max errors against [exact] u, or None without it."""
        if self.case.exact.fields is None:
            return None
        system, comm = self.system, self.comm
        squares, maxima = system.error_sums(self.u, system.evaluate_fields(self.case.exact.fields, 0.0))
        squares, maxima = allreduce(comm, squares), allreduce(comm, maxima, "max")
        errors = {name: {"l2": math.sqrt(squares[c]), "max": float(maxima[c])}
                  for c, name in enumerate(system.field_names)}
        errors["all"] = errors[system.field_names[0]]
        return errors

    def make_summary(self, errors: bool) -> dict:
        system, comm = self.system, self.comm
        summary = {
            "case": self.case.name,
            "lobatto_version": __version__,
            "equations": system.name,
            "steady": True,
            "order": system.order,
            "elements": allreduce(comm, system.num_elements),
            "mesh": describe_mesh(self.case, system.mesh),
            "points": allreduce(comm, system.points),
            "wall_seconds": system.solve_seconds,
            "set_up_seconds": self.setup_seconds,
            "backend": self.backend.name,
            "precision": self.backend.precision,
            "ranks": self.size,
            "threads": {"per_rank": self.backend.describe().get("threads"),
                        "blas": "1 during set-up and solve (backends/blas.py)" if self.backend.name == "cpu" else None},
        }
        summary.update(system.summary())
        summary["outputs"] = self.writer.records
        if self.series is not None:
            summary["time_series"] = self.series.describe()
        summary["config"] = self.case.to_dict()
        found = self.errors() if errors else None
        if found is not None:
            summary["errors"] = found
        return summary


def run_steady(case, backend=None, output_dir=None, progress=None, comm="world", restart=None,
               before_writing=None) -> dict:
    """Set up, solve, write the snapshot and summary.json; the summary (simulation.run_case)."""
    run = SteadyRun(case, backend, output_dir, comm, progress, restart)
    if before_writing is not None:
        before_writing()
    return run.run()
