"""The gather-scatter object: setup once, then apply many times."""

from __future__ import annotations

import numpy as np

from lobatto.comm import local
from lobatto.comm.auto import METHODS, choose
from lobatto.comm.discovery import discover, serial_topology
from lobatto.comm.ops import check_op
from lobatto.errors import InputError

#: values accepted for ``method``
METHOD_NAMES = ("auto", "local", *METHODS)


def _check_ids(ids) -> tuple[np.ndarray | None, str | None]:
    """(ids as int64, None) or (None, error message)."""
    try:
        a = np.asarray(ids)
    except Exception as exc:  # noqa: BLE001
        return None, f"gather-scatter ids: cannot be read as an array ({exc})"
    if a.ndim != 1:
        return None, f"gather-scatter ids: expected a 1-D integer array, got {a.ndim}-D shape {a.shape}"
    if a.dtype.kind not in "iu":
        return None, (
            f"gather-scatter ids: expected a 1-D integer array (int64), got dtype {a.dtype};"
            " convert float ids with np.rint(...).astype(np.int64) if they are whole numbers"
        )
    if a.size and a.dtype.kind == "i" and a.min() < 0:
        bad = np.flatnonzero(a < 0)
        return None, (
            f"gather-scatter ids: ids must be >= 0 (0 = not participating); {len(bad)} negative,"
            f" first at index {bad[0]} (value {a[bad[0]]})"
        )
    if a.size and a.dtype.kind == "u" and a.max() > np.iinfo(np.int64).max:
        return None, "gather-scatter ids: ids above 2**63-1 do not fit int64"
    return a.astype(np.int64, copy=False), None


class Handle:
    """A gather-scatter in flight, from :meth:`GatherScatter.start` to :meth:`GatherScatter.finish`."""

    __slots__ = ("done", "idx", "k", "u", "u2", "xh")

    def __init__(self, u, u2, k, idx, xh):
        self.u, self.u2, self.k, self.idx, self.xh = u, u2, k, idx, xh
        self.done = False


class GatherScatter:
    """Combine the values of points that share an id, over this rank and the others.

    ``ids``: 1-D integer array, one id per local point; 0 = not participating.
    ``comm``: an mpi4py communicator, or None for serial (local only).
    ``method``: "auto", "pairwise", "crystal_router", "allreduce" (or "local",
    which is what any method becomes with no communicator or one rank).
    ``xp``: array module to use for the data (default: that of each ``u``).
    ``vn_hint``: number of fields usually applied at once; "auto" times it too.
    """

    def __init__(self, ids, comm=None, method: str = "auto", xp=None, vn_hint: int | None = None):
        a, err = _check_ids(ids)
        if err is None and method not in METHOD_NAMES:
            err = f"gather-scatter: unknown method {method!r}; expected one of {', '.join(METHOD_NAMES)}"
        size = 1 if comm is None else comm.Get_size()
        if err is None and method == "local" and size > 1:
            err = f"gather-scatter: method 'local' needs comm=None or one rank, the communicator has {size}"
        if comm is not None and size > 1:
            # every rank raises together (no rank is left waiting in a collective)
            everyone = comm.allgather((err, method, vn_hint))
            bad = [(r, e) for r, (e, _, _) in enumerate(everyone) if e is not None]
            if bad:
                r, e = bad[0]
                raise InputError(e if r == comm.Get_rank() else f"{e} (reported by rank {r})")
            if len({(m, h) for _, m, h in everyone}) != 1:
                raise InputError(
                    "gather-scatter: all ranks must pass the same method and vn_hint, got "
                    + ", ".join(f"rank {r}: {m!r}/{h!r}" for r, (_, m, h) in enumerate(everyone))
                )
        elif err is not None:
            raise InputError(err)

        self.n = len(a)
        self.xp = xp
        self.timings: dict[str, float] = {}
        spts, uids, starts = local.unique_ids(a)
        if size > 1:
            self.comm = comm.Dup()
            topo = discover(self.comm, uids)
        else:
            self.comm = None
            topo = serial_topology(len(uids))
        self.topo = topo
        self.plan = local.build_plan(self.n, spts, uids, starts, topo.shared_mask)
        self.nshared = self.plan.nshared_points
        if self.comm is None:
            self.method, self.exchange = "local", None
        elif method == "auto":
            self.method, self.exchange, self.timings = choose(self.comm, topo, vn_hint)
        else:
            self.method, self.exchange = method, METHODS[method](self.comm, topo)
        self._idx: dict[str, dict] = {}

    # -- helpers ------------------------------------------------------------
    def _index(self, k) -> dict:
        idx = self._idx.get(k.__name__)
        if idx is None:
            p = self.plan
            idx = {
                name: k.asindex(getattr(p, name))
                for name in ("perm", "starts", "shared_cols", "dest_local", "src_local", "dest_shared", "src_shared")
            }
            self._idx[k.__name__] = idx
        return idx

    def _as2d(self, u):
        shape = getattr(u, "shape", None)
        if shape is None:
            raise InputError(f"gather-scatter: u must be an array, got {type(u).__name__}")
        if len(shape) == 1 and shape[0] == self.n:
            return u[None, :]
        if len(shape) == 2 and shape[1] == self.n:
            return u
        raise InputError(f"gather-scatter: u must have shape ({self.n},) or (vn, {self.n}), got {tuple(shape)}")

    # -- public -------------------------------------------------------------
    def start(self, u, op: str = "sum") -> Handle:
        """Begin ``apply``: local gather, post the exchange, scatter local-only ids."""
        check_op(op)
        u2 = self._as2d(u)
        k = local.kernels_for(self.xp if self.xp is not None else local.array_module(u))
        idx = self._index(k)
        compact = k.gather(k.take(u2, idx["perm"]), idx["starts"], op)
        xh = None
        if self.exchange is not None:
            xh = self.exchange.start(k.take(compact, idx["shared_cols"]), op, k)
        k.scatter(compact, u2, idx["dest_local"], idx["src_local"])
        return Handle(u, u2, k, idx, xh)

    def finish(self, h: Handle):
        """Complete the exchange and scatter the shared ids; returns ``u``."""
        if h.done:
            raise InputError("gather-scatter: finish() called twice on the same handle")
        h.done = True
        if h.xh is not None:
            combined = self.exchange.finish(h.xh)
            h.k.scatter(combined, h.u2, h.idx["dest_shared"], h.idx["src_shared"])
        return h.u

    def apply(self, u, op: str = "sum"):
        """Combine in place: every participating point gets the op over all points of its id."""
        return self.finish(self.start(u, op))

    def setup_info(self) -> dict:
        """Numbers for reports (this rank's view; method and timings agree on all ranks)."""
        ex = self.exchange
        return {
            "method": self.method,
            "timings": dict(self.timings),
            "ranks": 1 if self.comm is None else self.comm.Get_size(),
            "n": self.n,
            "unique_ids": int(self.plan.ncompact),
            "nshared": int(self.nshared),
            "nshared_ids": int(self.plan.nshared_ids),
            "neighbours": int(self.topo.nnbr),
            "bytes_per_exchange": 0 if ex is None else int(ex.bytes_per_exchange(1, 8)),
        }

    def free(self) -> None:
        """Release the duplicated communicator (collective); the object is unusable after."""
        if self.comm is not None:
            self.comm.Free()
            self.comm = None
            self.exchange = None

    def __repr__(self) -> str:
        return f"GatherScatter(n={self.n}, method={self.method!r}, nshared={self.nshared})"
