"""Time per part of an elliptic solve: operator, assembly, reductions, smoother, transfers,
coarse solve, the rest of the preconditioner, and the Krylov method's own vector updates.

``Profile.wrap(part, fn)`` returns fn timed as ``part``. Parts nest (a smoother applies the
operator, which calls the gather-scatter): each part is charged its own time only, the time
of the parts called inside it being taken out, so the parts add up to the whole solve.
``instrument(profile, levels, multigrid)`` wraps the members the solvers call through
instance attributes (``operator.apply_local``, ``assembly.dssum``, the smoothers, the grid
transfers, the coarse solve), so the solvers themselves are unchanged.

On the GPU every timed call ends with a device synchronisation (the time of a part is that
of its kernels), which costs the overlap of launches with work: the bench times solves with
the profile off and on, and reports both.
"""

from __future__ import annotations

import time
from collections import defaultdict

#: the parts, in the order reports list them ("other": what no wrapped call covers, the
#: Krylov method's vector updates and the Python between calls)
PARTS = ("operator", "assembly", "reductions", "smoother", "transfers", "coarse_solve", "preconditioner", "other")


class Profile:
    """Exclusive seconds and calls per part while ``enabled``; ``backend.synchronize`` bounds
    every timed call."""

    def __init__(self, backend, enabled: bool = True):
        self.synchronize = backend.synchronize
        self.enabled = enabled
        self.seconds: dict = defaultdict(float)
        self.calls: dict = defaultdict(int)
        self._nested: list[float] = []

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def wrap(self, part: str, fn):
        if part not in PARTS:
            raise ValueError(f"Profile: unknown part {part!r}; the parts are {', '.join(PARTS)}")

        def timed(*args, **kwargs):
            if not self.enabled:
                return fn(*args, **kwargs)
            self.synchronize()
            start = time.perf_counter()
            self._nested.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                self.synchronize()
                elapsed = time.perf_counter() - start
                inner = self._nested.pop()
                self.seconds[part] += elapsed - inner
                self.calls[part] += 1
                if self._nested:
                    self._nested[-1] += elapsed

        timed.__wrapped__ = fn
        return timed

    def report(self, total_seconds: float) -> dict:
        """{part: {"seconds", "share", "calls"}} with "other" = total - the timed parts."""
        parts = {}
        timed = 0.0
        for part in PARTS[:-1]:
            if part in self.seconds:
                timed += self.seconds[part]
                parts[part] = {"seconds": self.seconds[part], "calls": self.calls[part]}
        parts["other"] = {"seconds": max(total_seconds - timed, 0.0), "calls": None}
        for entry in parts.values():
            entry["share"] = entry["seconds"] / total_seconds if total_seconds > 0 else None
        return parts


def instrument(profile: Profile, levels, multigrid=None) -> None:
    """Wrap the operator, gather-scatter and reductions of every ``solvers.multigrid.Level``
    in ``levels``, and the smoothers, transfers and coarse solve of ``multigrid``."""
    seen = set()
    for level in levels:
        if id(level) in seen:
            continue
        seen.add(id(level))
        level.operator.apply_local = profile.wrap("operator", level.operator.apply_local)
        if hasattr(level.operator, "apply_elements"):  # the overlapped apply's first part
            level.operator.apply_elements = profile.wrap("operator", level.operator.apply_elements)
        for name in ("dssum", "dssum_start", "dssum_finish"):
            setattr(level.assembly, name, profile.wrap("assembly", getattr(level.assembly, name)))
        level.dot = profile.wrap("reductions", level.dot)
        level.dots = profile.wrap("reductions", level.dots)
    if multigrid is None:
        return
    multigrid.smoothers = [profile.wrap("smoother", s) for s in multigrid.smoothers]
    for transfer in multigrid.transfers:
        transfer.prolong = profile.wrap("transfers", transfer.prolong)
        transfer.restrict = profile.wrap("transfers", transfer.restrict)
    multigrid.coarse = profile.wrap("coarse_solve", multigrid.coarse)
