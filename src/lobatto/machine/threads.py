"""How the CPU's worker threads wait, and how many a rank takes (docs/parallel.md, "Threads").

Two thread pools share a rank's cores: OpenMP's, in the compiled C kernels (lobatto.jit.c
builds them with ``-fopenmp``, so GNU libgomp is loaded with the first kernel library), and
the BLAS library's (NumPy's OpenBLAS, a pthreads pool started when NumPy is imported). By
default both let idle workers spin: libgomp for about 300,000 iterations after each parallel
region, OpenBLAS for 2^28 cycles (about 0.1 s) after each call. On a machine whose cores are
also busy with other work a spinning worker takes the time slice that the thread still
computing needs, and every region's barrier waits a scheduler tick: a Kovasznay step took
3.12 s with 2 threads and 0.047 s with 1 thread on a busy 2-core machine.

:func:`apply_thread_policy` therefore, before NumPy and the kernels load (the command line,
``cli.main``, calls it first; ``import lobatto`` leaves a Python program's environment alone),
and never over a variable the user set:

* makes idle workers sleep at once: ``OMP_WAIT_POLICY=passive`` (unless ``OMP_WAIT_POLICY`` or
  ``GOMP_SPINCOUNT`` is set) and ``OPENBLAS_THREAD_TIMEOUT=4`` (the shortest, 2^4 cycles);
* unless ``OMP_NUM_THREADS`` is set, chooses the rank's threads (:func:`choose_threads`):
  the cores this process may use (its CPU affinity, capped by a cgroup CPU quota) divided by
  the ranks on this node, less the cores that other processes keep busy right now (the
  kernel's count of runnable tasks, sampled a few times over 20 ms, least of the samples),
  at least 1; and sets ``OMP_NUM_THREADS`` and, unless set, ``OPENBLAS_NUM_THREADS``,
  ``MKL_NUM_THREADS`` and ``BLIS_NUM_THREADS`` to it, with the reason in
  ``LOBATTO_THREADS_SET_BY`` (the run summary's ``threads.set_by``).

``OMP_NUM_THREADS=N`` chooses the count instead; ``LOBATTO_THREAD_POLICY=off`` leaves the
environment untouched (the libraries' own defaults: spinning workers, all cores).
A count chosen here is recorded in ``LOBATTO_THREADS_CHOSEN``, so that a child process that
inherits it (a test starting ``lobatto run``) chooses again rather than taking it for the
user's.
"""

from __future__ import annotations

import math
import os
import time

__all__ = ["apply_thread_policy", "choose_threads", "usable_cores", "busy_elsewhere", "set_threads", "POLICY_VARIABLE"]

POLICY_VARIABLE = "LOBATTO_THREAD_POLICY"
_CHOSEN = "LOBATTO_THREADS_CHOSEN"
_SET_BY = "LOBATTO_THREADS_SET_BY"
_BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_RANK_SIZE_VARIABLES = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE")
#: samples of the runnable-task count, and the pause between them
_SAMPLES, _SAMPLE_PAUSE = 3, 0.01


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity, capped by a cgroup v2 CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max" and float(period) > 0:
            cores = min(cores, max(1, math.ceil(float(quota) / float(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def _runnable_now() -> int | None:
    """The kernel's count of runnable tasks (4th field of /proc/loadavg, 'running/total'),
    this process's reading thread included; None where the system does not say."""
    try:
        with open("/proc/loadavg") as fh:
            return int(fh.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def busy_elsewhere(ranks: int) -> float:
    """Cores kept busy now by processes other than this run's ``ranks`` ranks on this node:
    the least runnable-task count of a few samples (short bursts do not count), less the
    ranks, scaled to this process's share of the machine's CPUs (the count is machine-wide)."""
    samples = []
    for i in range(_SAMPLES):
        if i:
            time.sleep(_SAMPLE_PAUSE)
        value = _runnable_now()
        if value is None:
            return 0.0
        samples.append(value)
    others = max(0, min(samples) - ranks)
    return others * usable_cores() / max(os.cpu_count() or 1, 1)


def choose_threads(cores: int, ranks: int, busy: float) -> int:
    """Threads per rank: cores / ranks, less the busy cores' share, at least 1.

    >>> choose_threads(2, 1, 0.0), choose_threads(2, 1, 1.0), choose_threads(2, 1, 2.0), choose_threads(64, 4, 8.0)
    (2, 1, 1, 14)
    """
    per_rank = max(1, cores // max(ranks, 1))
    free = math.floor((cores - busy) / max(ranks, 1) + 1e-9)
    return max(1, min(per_rank, free))


def _local_ranks(environ) -> int:
    for name in _RANK_SIZE_VARIABLES:
        value = environ.get(name, "").split("(")[0]
        if value.isdigit():
            return max(int(value), 1)
    return 1


def set_threads(environ: dict, threads: int) -> None:
    """Give a child process's environment ``threads`` threads per rank as the user's choice
    (the marker of a count chosen here is dropped, so the child keeps it)."""
    environ["OMP_NUM_THREADS"] = str(threads)
    environ.pop(_CHOSEN, None)


def apply_thread_policy(environ=None, local_ranks: int | None = None) -> dict:
    """Set the wait policy and the thread count in ``environ`` (default: os.environ) as the
    module says; returns what was set ({variable: value}), {} when the policy is off."""
    environ = os.environ if environ is None else environ
    if environ.get(POLICY_VARIABLE, "").strip().lower() in ("off", "0", "no", "false"):
        return {}
    chosen_before = environ.pop(_CHOSEN, None)
    if chosen_before is not None and environ.get("OMP_NUM_THREADS") in (None, chosen_before):
        for name in ("OMP_NUM_THREADS", *_BLAS_VARIABLES):  # inherited from a parent's choice
            if environ.get(name) == chosen_before:
                del environ[name]
    changed = {}
    if "OMP_WAIT_POLICY" not in environ and "GOMP_SPINCOUNT" not in environ:
        changed["OMP_WAIT_POLICY"] = "passive"
    if "OPENBLAS_THREAD_TIMEOUT" not in environ and "GOTO_THREAD_TIMEOUT" not in environ:
        changed["OPENBLAS_THREAD_TIMEOUT"] = "4"
    if not environ.get("OMP_NUM_THREADS"):
        ranks = local_ranks or _local_ranks(environ)
        cores = usable_cores()
        busy = busy_elsewhere(ranks) if cores > ranks else 0.0
        threads = str(choose_threads(cores, ranks, busy))
        changed["OMP_NUM_THREADS"] = threads
        for name in _BLAS_VARIABLES:
            if name not in environ:
                changed[name] = threads
        changed[_CHOSEN] = threads
        reason = f"lobatto: {cores} core{'s' if cores != 1 else ''}"
        if ranks > 1:
            reason += f", {ranks} ranks on the node"
        if busy >= 0.5:
            reason += f", {busy:.3g} busy with other work"
        changed[_SET_BY] = reason
    environ.update(changed)
    return changed
