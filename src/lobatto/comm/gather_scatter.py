"""The gather-scatter object: setup once, then apply many times."""

from __future__ import annotations

import numpy as np

from lobatto.comm import local, ordered
from lobatto.comm.auto import METHODS, choose
from lobatto.comm.discovery import discover, serial_topology
from lobatto.comm.ops import check_op
from lobatto.comm.transport import (
    DEVICE_METHODS,
    DEVICE_TRANSPORTS,
    EXCHANGE_NAMES,
    HostTransport,
    Route,
)
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


def _cupy():
    import cupy

    return cupy


class Handle:
    """A gather-scatter in flight, from :meth:`GatherScatter.start` to :meth:`GatherScatter.finish`."""

    __slots__ = ("deferred", "done", "idx", "k", "op", "u", "u2", "xh")

    def __init__(self, u, u2, k, idx, xh, op="sum", deferred=False):
        self.u, self.u2, self.k, self.idx, self.xh = u, u2, k, idx, xh
        self.op, self.deferred = op, deferred  # deferred: the ids of this rank alone wait for finish
        self.done = False


class GatherScatter:
    """Combine the values of points that share an id, over this rank and the others.

    ``ids``: 1-D integer array, one id per local point; 0 = not participating.
    ``comm``: an mpi4py communicator, or None for serial (local only).
    ``method``: "auto", "pairwise", "crystal_router", "allreduce" (or "local",
    which is what any method becomes with no communicator or one rank).
    ``xp``: array module to use for the data (default: that of each ``u``).  Pass
    ``xp=cupy`` for device data so that the transport (and ``auto``'s method) is chosen
    at setup; with ``xp=None`` it is chosen at the first ``start`` on a CuPy array.
    ``vn_hint``: number of fields usually applied at once; "auto" times it too.
    ``exchange``: transport, "auto", "nccl", "cuda-aware-mpi" or "host" (see
    :mod:`lobatto.comm.transport`); NumPy data always uses "host".
    ``keys``: optional 1-D int64 array, one global key per point, unique over all ranks
    (e.g. global element id * n^3 + local point): a "sum" then adds each id's copies one by
    one in increasing key order, the same bits on every partition (:mod:`lobatto.comm.ordered`).
    """

    def __init__(self, ids, comm=None, method: str = "auto", xp=None, vn_hint: int | None = None,
                 exchange: str = "auto", keys=None):
        a, err = _check_ids(ids)
        if err is None and keys is not None:
            keys = np.asarray(keys)
            if keys.shape != a.shape or keys.dtype.kind not in "iu":
                err = (f"gather-scatter keys: expected an integer array of the ids' shape {a.shape}, "
                       f"got {keys.dtype} {keys.shape}")
            keys = keys.astype(np.int64, copy=False)
        if err is None and method not in METHOD_NAMES:
            err = f"gather-scatter: unknown method {method!r}; expected one of {', '.join(METHOD_NAMES)}"
        if err is None and exchange not in EXCHANGE_NAMES:
            err = f"gather-scatter: unknown exchange {exchange!r}; expected one of {', '.join(EXCHANGE_NAMES)}"
        xp_name = None if xp is None else getattr(xp, "__name__", repr(xp))
        if err is None and exchange in DEVICE_TRANSPORTS and xp_name not in (None, "cupy"):
            err = (f"gather-scatter: exchange {exchange!r} moves device (CuPy) arrays but xp={xp_name};"
                   " NumPy data uses exchange 'host' (or 'auto')")
        # device data known at setup: xp=cupy, or a device transport named explicitly
        self._device_at_setup = xp_name == "cupy" or (xp is None and exchange in DEVICE_TRANSPORTS)
        if err is None and self._device_at_setup:
            from lobatto.comm.transport import cupy_status

            why = cupy_status()
            if why is not None:
                err = (f"gather-scatter: exchange {exchange!r} needs CuPy arrays on a GPU, but {why}"
                       if exchange in DEVICE_TRANSPORTS else f"gather-scatter: xp=cupy, but {why}")
        size = 1 if comm is None else comm.Get_size()
        if err is None and method == "local" and size > 1:
            err = f"gather-scatter: method 'local' needs comm=None or one rank, the communicator has {size}"
        if comm is not None and size > 1:
            # every rank raises together (no rank is left waiting in a collective)
            mine = (method, vn_hint, exchange, xp_name, keys is not None)
            everyone = comm.allgather((err, mine))
            bad = [(r, e) for r, (e, _) in enumerate(everyone) if e is not None]
            if bad:
                r, e = bad[0]
                raise InputError(e if r == comm.Get_rank() else f"{e} (reported by rank {r})")
            if len({m for _, m in everyone}) != 1:
                raise InputError(
                    "gather-scatter: all ranks must pass the same method, vn_hint, exchange and xp, got "
                    + ", ".join(f"rank {r}: {m!r}" for r, (_, m) in enumerate(everyone))
                )
        elif err is not None:
            raise InputError(err)

        self.n = len(a)
        self.xp = xp
        self.requested_method = method
        self.requested_exchange = exchange
        self.vn_hint = vn_hint
        self.timings: dict[str, float] = {}
        self.exchange_reason = ""
        spts, uids, starts = local.unique_ids(a) if keys is None else ordered.ordered_ids(a, keys)
        self.keyed = keys is not None
        if size > 1:
            self.comm = comm.Dup()
            topo = discover(self.comm, uids)
        else:
            self.comm = None
            topo = serial_topology(len(uids))
        self.topo = topo
        self.plan = local.build_plan(self.n, spts, uids, starts, topo.shared_mask)
        self.nshared = self.plan.nshared_points
        self._routes: dict[str, Route | None] = {}
        self._route = None
        if self.comm is None:
            self.method, self.exchange = "local", "local"
        else:
            k = local.kernels_for(_cupy() if self._device_at_setup else (xp if xp is not None else np))
            self._use(self._resolve(k))
        self.ordered = None
        if self.keyed and self.comm is not None:
            self.ordered = ordered.OrderedShared(
                self.comm, self.plan, keys, topo,
                # the method this gather-scatter chose (not "auto": timing the slots' pattern
                # again costs set-up time and may pick a global allreduce of every slot)
                lambda slot_ids: GatherScatter(slot_ids, self.comm, method=self.method, xp=xp, vn_hint=vn_hint,
                                               exchange=exchange))
        self._idx: dict[str, dict] = {}

    # -- routes (method + transport per array module) ----------------------------
    def _resolve(self, k) -> Route:
        """Collective: choose transport and method for data of kernel module ``k``."""
        route = self._routes.get(k.__name__)
        if route is not None:
            return route
        ex_req = self.requested_exchange
        if k.xp is np:
            if ex_req in DEVICE_TRANSPORTS:
                raise InputError(
                    f"gather-scatter: exchange {ex_req!r} moves device (CuPy) arrays, got NumPy data;"
                    " NumPy data uses exchange 'host' (or 'auto')"
                )
            host = HostTransport(self.comm)
            device = host
            reason = "NumPy data: host"
        else:
            from lobatto.comm.transport import select

            host = HostTransport(self.comm)
            if ex_req == "host":
                device, reason = host, "requested"
            else:
                device, reason = select(ex_req, self.comm)

        def transport_for(name):
            return device if name in DEVICE_METHODS else host

        if self.requested_method == "auto" and ex_req in DEVICE_TRANSPORTS and k.xp is not np:
            # a device transport asked for by name carries the pairwise method only (the others
            # would be host-staged): "auto" is then pairwise, not the timing's pick
            name, timings = "pairwise", {}
            route = Route(name, METHODS[name](self.comm, self.topo), transport_for(name), k)
            reason += "; auto method: pairwise, the one the transport carries"
        elif self.requested_method == "auto":
            kw = {} if k.xp is np else {"sync": lambda: _cupy().cuda.get_current_stream().synchronize()}
            name, route, timings = choose(self.comm, self.topo, self.vn_hint, k=k, transport_for=transport_for, **kw)
        else:
            name, timings = self.requested_method, {}
            route = Route(name, METHODS[name](self.comm, self.topo), transport_for(name), k)
        if device is not host and route.transport is host:
            reason += f"; method {name} is host-staged"
        route.timings, route.reason = timings, reason
        self._routes[k.__name__] = route
        return route

    def _use(self, route: Route) -> None:
        if route is not self._route:
            self._route = route
            self.method, self.exchange = route.method, route.transport.name
            self.timings, self.exchange_reason = dict(route.timings), route.reason

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
    def start(self, u, op: str = "sum", defer_local: bool = False) -> Handle:
        """Begin ``apply``: local gather, post the exchange, scatter local-only ids.

        With NCCL the transfer runs on its own stream: GPU work launched on the current
        stream before :meth:`finish` overlaps it (do not touch ``u``'s shared points).

        ``defer_local``: read only the points of shared ids (``shared_points``) here and
        combine the ids this rank holds alone in :meth:`finish`: the other points of ``u``
        may still be written (with their final values) until then, e.g. an operator applied
        to the interior elements while the exchange is in flight. The result is the same,
        bit for bit, as without it (each id is combined from the same values in the same
        order)."""
        check_op(op)
        u2 = self._as2d(u)
        k = local.kernels_for(self.xp if self.xp is not None else local.array_module(u))
        route = None
        if k.xp is np and self.requested_exchange in DEVICE_TRANSPORTS:
            raise InputError(
                f"gather-scatter: exchange {self.requested_exchange!r} moves device (CuPy) arrays, got NumPy data;"
                " NumPy data uses exchange 'host' (or 'auto')"
            )
        if self.comm is not None:
            route = self._resolve(k)  # collective the first time a new array module is seen
            self._use(route)
        idx = self._index(k)
        if defer_local and route is None:  # nothing travels: all of it at finish
            return Handle(u, u2, k, idx, None, op, deferred=True)
        if self.keyed and op == "sum":
            if route is None:
                ordered.combine_in_order(k, u2, idx["perm"], idx["starts"])
                return Handle(u, u2, k, idx, None)
            return Handle(u, u2, k, idx, (None, self.ordered.start(k, u2, defer_local)), op, defer_local)
        if defer_local:
            shared = self._shared_runs(k)
            compact = k.gather(k.take(u2, shared[0]), shared[1], op)
            return Handle(u, u2, k, idx, (route, route.start(compact, op)), op, deferred=True)
        if route is None and u2.flags.c_contiguous:
            # Serial: every kept id is local, so one compiled pass (C or CUDA) does it all.
            combine = getattr(k, "compiled_combine", lambda dtype: None)(u2.dtype)
            if combine is not None:
                combine(u2, idx["perm"], idx["starts"], op)
                return Handle(u, u2, k, idx, None)
        compact = k.gather(k.take(u2, idx["perm"]), idx["starts"], op)
        xh = None
        if route is not None:
            xh = (route, route.start(k.take(compact, idx["shared_cols"]), op))
        k.scatter(compact, u2, idx["dest_local"], idx["src_local"])
        return Handle(u, u2, k, idx, xh)

    def finish(self, h: Handle):
        """Complete the exchange and scatter the shared ids; returns ``u``."""
        if h.done:
            raise InputError("gather-scatter: finish() called twice on the same handle")
        h.done = True
        if h.deferred:
            self._combine_local(h)
        if h.xh is not None and h.xh[0] is None:
            self.ordered.finish(h.k, h.u2, h.xh[1])
        elif h.xh is not None:
            route, xh = h.xh
            combined = route.finish(xh)
            h.k.scatter(combined, h.u2, h.idx["dest_shared"], h.idx["src_shared"])
        return h.u

    def _shared_runs(self, k):
        """(points of the shared ids grouped by id, the start of each group): the gather of
        the shared ids alone (``start`` with ``defer_local``, unordered sums)."""
        key = (k.__name__, "shared_runs")
        runs = self._idx.get(key)
        if runs is None:
            p = self.plan
            counts = np.diff(np.append(np.asarray(p.starts, dtype=np.int64), len(p.perm)))
            points, starts = ordered.group_runs(np.asarray(p.perm), np.asarray(p.starts, dtype=np.int64), counts,
                                                np.asarray(p.shared_cols, dtype=np.int64))
            runs = self._idx[key] = (k.asindex(points), k.asindex(starts))
        return runs

    def _combine_local(self, h: Handle) -> None:
        """What ``start(defer_local=True)`` left: the ids this rank holds alone (no
        communicator: every id)."""
        k, u2, idx = h.k, h.u2, h.idx
        if h.xh is None:  # no exchange: the whole local combine, as start does it
            if self.keyed and h.op == "sum":
                ordered.combine_in_order(k, u2, idx["perm"], idx["starts"])
                return
            combine = getattr(k, "compiled_combine", lambda dtype: None)(u2.dtype)
            if combine is not None and u2.flags.c_contiguous:
                combine(u2, idx["perm"], idx["starts"], h.op)
                return
            compact = k.gather(k.take(u2, idx["perm"]), idx["starts"], h.op)
            k.scatter(compact, u2, idx["dest_local"], idx["src_local"])
            return
        if h.xh[0] is None:
            self.ordered.combine_local(k, u2)
            return
        compact = k.gather(k.take(u2, idx["perm"]), idx["starts"], h.op)
        k.scatter(compact, u2, idx["dest_local"], idx["src_local"])

    def apply(self, u, op: str = "sum"):
        """Combine in place: every participating point gets the op over all points of its id."""
        return self.finish(self.start(u, op))

    def shared_points(self) -> np.ndarray:
        """Positions (host int64, ascending) of the points whose id another rank also holds;
        ``start`` leaves exactly these for ``finish`` to write."""
        return np.sort(self.plan.dest_shared)

    def setup_info(self) -> dict:
        """Numbers for reports (this rank's view; method and timings agree on all ranks)."""
        ex = None if self._route is None else self._route.ex
        return {
            "method": self.method,
            "exchange": self.exchange,
            "exchange_requested": self.requested_exchange,
            "exchange_reason": self.exchange_reason,
            "device_direct": bool(self._route is not None and self._route.transport.device_direct),
            "timings": dict(self.timings),
            "ranks": 1 if self.comm is None else self.comm.Get_size(),
            "n": self.n,
            "unique_ids": int(self.plan.ncompact),
            "nshared": int(self.nshared),
            "nshared_ids": int(self.plan.nshared_ids),
            "neighbours": int(self.topo.nnbr),
            "bytes_per_exchange": 0 if ex is None else int(ex.bytes_per_exchange(1, 8)),
        }

    def describe(self) -> str:
        """One line for run summaries: method, transport, ranks, neighbours, shared points."""
        if self.comm is None:
            return f"gather-scatter: local (1 rank), {self.n} points"
        direct = "device-direct" if self._route.transport.device_direct else "host"
        line = (f"gather-scatter: method {self.method}, exchange {self.exchange} ({direct}),"
                f" {self.comm.Get_size()} ranks, {int(self.topo.nnbr)} neighbours, {self.nshared} shared points")
        if self.exchange_reason and self.exchange_reason != "requested":
            line += f" [{self.exchange_reason}]"
        return line

    def free(self) -> None:
        """Release the duplicated communicator (collective); the object is unusable after."""
        if self.comm is not None:
            if self.ordered is not None:
                self.ordered.free()
                self.ordered = None
            for route in self._routes.values():
                route.transport.free()
            self._routes.clear()
            self._route = None
            self.comm.Free()
            self.comm = None

    def __repr__(self) -> str:
        return (f"GatherScatter(n={self.n}, method={self.method!r}, exchange={self.exchange!r},"
                f" nshared={self.nshared})")
