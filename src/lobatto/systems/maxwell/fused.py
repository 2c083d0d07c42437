"""Whole lsrk45 steps with the face exchange folded into the stage kernel.

The solver's stage (MaxwellSystem.stage) runs three passes over the face data: the traces
kernel, the gather-scatter (take, gather, scatter) and the fused stage kernel that reads the
sums. On a conforming mesh every face point has at most one partner, so the exchange is a
pairwise sum, and the stage kernel can do it itself:

    sums(fp) = own trace (recomputed from u in shared memory) + trace_in[partner(fp)]

and write the traces of the updated u for the next stage (`trace_out`, ping-pong buffers).
A step is then one traces kernel (for the traces of u at the start of the step, so that the
step depends on u alone and can be recorded as a CUDA graph) and one kernel per stage.

    step = FusedExchangeStepper(system, stepper)
    step(u, t, dt)           # the same update as stepper.step(u, t, dt), to round-off

Across ranks a partner on another rank is a "ghost": before each stage the traces of this
rank's shared face points go to the rank that shares them (pairwise, through the
gather-scatter's transport: NCCL, CUDA-aware MPI or host-staged) and theirs come back into
a ghost buffer the kernel reads. A packing kernel per stage fills the send buffer: it costs
less than writing the shared points' traces from the stage kernel costs that kernel
(benchmarks/notes-cuda.md, "Ghost traces: a packing kernel"). Shared points
belong to halo elements only, so with overlap the kernel first runs the interior elements [0, split) while the ghosts travel, then
the rest; without, one launch after the exchange (NCCL then runs on the compute stream).
With NCCL the packing kernel and the transfer run on NCCL's high-priority stream, alongside
the interior launch. Which is faster depends on the transport and the sizes: overlap pays
for a second launch, which can cost more than a short exchange saves (benchmarks/notes-cuda.md,
"Overlap of the ghost exchange"). So under ``overlap = "auto"``
(MaxwellSystem.overlap, the default) the first step times a few steps each way (slowest
rank) and keeps the faster; the state is restored after the trial.

Terms that depend on t (TF/SF, sources; terms.py) read the stage time t + c_i dt from a
device array (``clock``, handed to them as ``system.stage_clock`` during each stage) that
``set_clock`` writes with one launch; ``step`` sets it, ``step_on_clock`` does not, and is what
the driver records as a CUDA graph for such a system, setting the clock before each replay.

Same results as the solver's path up to the order of floating-point operations (the test
compares them). MaxwellSystem.whole_step returns it wherever it applies. Byte counts:
docs/cuda.md.
"""

from __future__ import annotations

import contextlib

import numpy as np

from lobatto.systems.maxwell.cuda import MaxwellKernels, medium_arguments

#: packs the traces of the points in `index` as (len(index), 6) rows, ids increasing per neighbour
_PACK_SOURCE = "const long long m = i / 6, c = i - 6 * m; out = traces[c * field_stride + index[m]];"


def partner_map(ids: np.ndarray) -> np.ndarray:
    """For each face point, the flat index of the other point with its id, or -1 if none.

    Raises ValueError if an id occurs more than twice (not a conforming one-rank mesh).
    """
    ids = np.asarray(ids).reshape(-1)
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    same = s[1:] == s[:-1]
    if np.any(same[1:] & same[:-1]):
        raise ValueError("fused exchange: a face-point id occurs more than twice")
    if np.any(s == 0):
        raise ValueError("fused exchange: face-point id 0 (not participating) is not supported")
    first = np.flatnonzero(same)
    partner = np.full(ids.size, -1, dtype=np.int64)
    partner[order[first]] = order[first + 1]
    partner[order[first + 1]] = order[first]
    return partner


class GhostExchange:
    """The traces of this rank's shared face points to the other ranks, and theirs back.

    ``start(traces, concurrent)`` packs the shared points' rows (row m: point ``points[m]``,
    six components, in the order of ``codes``) and posts them; ``finish(request)`` returns the
    ghost buffer (the neighbours' rows, same order). Built from
    the gather-scatter's set-up (``gs.topo``, ``gs.plan``); raises ValueError where a shared id
    has more than one point on this rank or more than one other rank (not a conforming mesh).
    """

    def __init__(self, gs, backend):
        from lobatto.comm.pairwise import PairwiseExchange

        plan, topo = gs.plan, gs.topo
        ns = topo.nshared_ids
        point = np.full(ns, -1, dtype=np.int64)
        point[plan.src_shared] = plan.dest_shared
        if len(plan.dest_shared) != ns or np.any(point < 0):
            raise ValueError("fused exchange: a shared face-point id has several points on one rank")
        if int(topo.nbr_offsets[-1]) != ns:
            raise ValueError("fused exchange: a face-point id is shared by more than two ranks")
        #: face points whose traces are sent, neighbour by neighbour (the pairwise layout)
        self.points = point[topo.nbr_idx]
        #: partner codes of those points: ghost row m is code -2 - m
        self.codes = -2 - np.arange(ns, dtype=np.int64)
        self.pairwise = PairwiseExchange(gs.comm, topo)
        self.comm = gs.comm
        self.requested = gs.requested_exchange
        self.transport = None
        self._xp = backend.xp
        self._index = backend.asarray(self.points, dtype=np.int64)
        self._sendbuf = backend.empty(6 * ns)
        self._pack = backend.xp.ElementwiseKernel(
            "raw T traces, raw int64 index, int64 field_stride", "T out", _PACK_SOURCE, "lobatto_pack_ghosts"
        )

    def connect(self):
        """Collective: the transport (as the gather-scatter would pick it for device data)."""
        from lobatto.comm.transport import select

        self.transport, self.reason = select(self.requested, self.comm)
        return self

    def start(self, traces, concurrent=True):
        """``concurrent=False``: nothing runs before ``finish`` (see Transport.post). With a
        transport that has its own stream (NCCL) a concurrent start packs on that stream too,
        after the work queued so far on the compute stream, so the packing kernel also runs
        alongside the interior update."""
        stream = getattr(self.transport, "stream", None) if concurrent else None
        if stream is not None:
            ready = self._xp.cuda.Event(disable_timing=True)
            ready.record()
            stream.wait_event(ready)
        # on the transport's stream post() finds its own stream current: its hand-over is a no-op
        with stream if stream is not None else contextlib.nullcontext():
            self._pack(traces, self._index, np.int64(traces[0].size), self._sendbuf)
            return self.transport.post(self.pairwise, self._sendbuf, 6, "sum", concurrent=concurrent)

    def finish(self, request):
        return self.transport.wait(request)


class FusedExchangeStepper:
    """lsrk45-type (2N-storage) steps of a MaxwellSystem on the CUDA backend, exchange fused."""

    def __init__(self, system, stepper):
        from lobatto.mesh import face_point_ids
        from lobatto.mesh.topology import face_shape

        backend = system.backend
        if backend.name != "cuda":
            raise ValueError("the fused exchange needs the CUDA backend")
        scheme = stepper.scheme
        if not hasattr(scheme, "A"):
            raise ValueError(f"the fused exchange needs a 2N-storage scheme, not {scheme.name!r}")
        self.system, self.stepper, self.scheme = system, stepper, scheme
        self.backend = backend
        self.order = system.order
        #: the mesh's dimension: a 2-D mesh's face points are (E, 4, 1, n); partner ids and
        #: ghost packing are flat indices over them, so only the shapes below depend on it
        self.dim = dim = int(getattr(system.mesh, "dim", 3))
        e = system.num_elements
        comm = system.exchange.comm
        problem, self.ghosts = None, None
        try:
            partner = partner_map(face_point_ids(system.mesh, self.order))
            if comm is not None:
                self.ghosts = GhostExchange(system.exchange, backend)
                partner[self.ghosts.points] = self.ghosts.codes
            if max(partner.max(initial=0), len(partner) - partner.min(initial=0)) >= 2**31:
                raise ValueError("fused exchange: more than 2**31 face points")
        except ValueError as exc:
            problem = str(exc)
        if comm is not None:  # every rank takes the same path
            problems = [p for p in comm.allgather(problem) if p]
            problem = problems[0] if problems else None
        if problem:
            raise ValueError(problem)
        if self.ghosts is not None:
            self.ghosts.connect()
        self.partner = backend.asarray(partner, dtype=np.int32)
        faces = (6, e, 2 * dim, *face_shape(dim, self.order))
        self.buffers = [backend.zeros(faces), backend.zeros(faces)]
        self.residual = stepper.residual
        self.traces_kernel = backend.kernel("maxwell_traces", order=self.order, dim=dim)
        self.kernels = MaxwellKernels(backend, self.order, dim)
        # eps, mu, sigma per point (materials.py): the stage kernel's medium variant and its arrays
        self.medium_extra = None if system.medium is None else medium_arguments(
            self.kernels, self.residual.dtype, system.medium.arrays)
        #: the choice under overlap = "auto" once made, with the trial's timings
        self.auto_overlap: dict | None = None
        # the stage times t + c_i dt of the step on the device, which the time-dependent terms
        # read (system.stage_clock): a recorded step replays at the time set_clock wrote
        self.clock = self._clock_set = None
        timed = [term for term in system.terms if getattr(term, "time_dependent", False)]
        #: a step of this time-dependent system may be recorded (Stepper.replays_with_clock)
        self.reads_clock = bool(timed) and all(term.reads_clock for term in timed)
        if timed:
            xp = backend.xp
            self.clock = backend.zeros(len(scheme.C), dtype=np.float64)
            self._nodes = backend.asarray(np.asarray(scheme.C, dtype=np.float64), dtype=np.float64)
            self._stage_clocks = [self.clock[i:i + 1] for i in range(len(scheme.C))]
            # t + c dt rounded as the host rounds it (no fused multiply-add)
            self._clock_set = xp.ElementwiseKernel("float64 c, float64 t, float64 dt", "float64 out",
                                                   "out = __dadd_rn(t, __dmul_rn(c, dt));", "lobatto_stage_clock")

    @property
    def exchange(self) -> str:
        """The transport of the ghost traces ("local" on one rank)."""
        return "local" if self.ghosts is None else self.ghosts.transport.name

    @property
    def method(self) -> str:
        return "local" if self.ghosts is None else "pairwise"

    def describe(self) -> dict:
        """How the steps ran, for the run summary (Stepper.describe)."""
        out = {"kernel": "fused face exchange", "exchange_method": self.method, "exchange": self.exchange,
               "exchange_detail": self.detail()}
        if self.ghosts is not None:
            out["overlap_enabled"] = self.overlap
            if self.auto_overlap is not None:
                out["auto_trial"] = {"seconds_per_step_with": self.auto_overlap["seconds_with"],
                                     "seconds_per_step_without": self.auto_overlap["seconds_without"]}
        return out

    def detail(self) -> str:
        """One line for run summaries."""
        if self.ghosts is None:
            return "fused face exchange, 1 rank"
        tr = self.ghosts.transport
        how = "overlapped" if self.overlap else "not overlapped"
        if self.system.overlap == "auto" and self.auto_overlap is not None:
            a = self.auto_overlap
            how += f" (auto: {1e3 * a['seconds_with']:.3g} ms/step with, {1e3 * a['seconds_without']:.3g} without)"
        return (f"fused face exchange, {how}: ghost traces pairwise over {tr.name}"
                f" ({'device-direct' if tr.device_direct else 'host-staged'}), {self.ghosts.comm.Get_size()} ranks,"
                f" {int(self.ghosts.pairwise.topo.nnbr)} neighbours, {len(self.ghosts.points)} shared points"
                + (f" [{self.ghosts.reason}]" if self.ghosts.reason != "requested" else ""))

    def stage(self, u, stage_index, a, b, dt, write_traces=True, elements=None, ghost=None):
        """One stage on ``elements`` (all by default): reads buffers[stage % 2] (and ``ghost``,
        the traces from other ranks), writes buffers[(stage + 1) % 2]."""
        system = self.system
        kind = "stage_pairs" if self.ghosts is None else "stage_ghosts"
        leading = (u, self.residual, self.buffers[stage_index % 2],
                   self.kernels.dummy_array(u.dtype) if ghost is None else ghost,
                   self.buffers[(stage_index + 1) % 2], self.partner, np.int32(1 if write_traces else 0))
        if self.medium_extra is None:
            self.kernels.launch(kind, u, leading, system.device_geometry, (system.epsilon, system.mu, system.alpha),
                                elements, (a, b, dt))
        else:
            self.kernels.launch(kind + "_medium", u, leading, system.device_geometry, (1.0, 1.0, system.alpha),
                                elements, (a, b, dt), extra=self.medium_extra)

    @property
    def overlap(self) -> bool:
        """Whether stages overlap the ghost exchange (after the trial under "auto")."""
        setting = self.system.overlap
        if setting == "auto":
            return True if self.auto_overlap is None else self.auto_overlap["overlap"]
        return bool(setting)

    def graph_veto(self) -> str | None:
        """Why a step must not be recorded as a CUDA graph now, or None. An overlapped
        multi-rank step relies on NCCL's stream priority, which a recorded graph does not
        keep, so a replay runs slower than plain calls (benchmarks/notes-cuda.md, "Graph replay
        with overlap")."""
        if self.ghosts is not None and self.overlap and getattr(self.ghosts.transport, "stream", None) is not None:
            return "not recorded: the overlapped exchange needs its high-priority stream"
        return None

    def set_clock(self, t, dt) -> None:
        """The stage times of a step from t of size dt into the device clock (one launch, not
        part of a recorded step)."""
        if self.clock is not None:
            self._clock_set(self._nodes, np.float64(t), np.float64(dt), self.clock)

    def step(self, u, t, dt):
        self.set_clock(t, dt)
        self.step_on_clock(u, dt, t)

    def step_on_clock(self, u, dt, t=0.0):
        """A step whose start time the device clock holds already (set_clock): what a
        recorded step replays; ``t`` reaches only the terms that do not depend on it."""
        if self.ghosts is not None and self.system.overlap == "auto" and self.auto_overlap is None:
            self.auto_overlap = self._time_overlap(u, t, dt)
        self._step(u, t, dt, self.overlap)

    def _step(self, u, t, dt, overlap):
        s = self.scheme
        system = self.system
        self.traces_kernel(u, system.device_geometry["normals"], self.buffers[0])
        last = len(s.A) - 1
        split = system.split if overlap else 0
        terms = system.terms
        for i, (a, b, c) in enumerate(zip(s.A, s.B, s.C)):
            write = i < last
            folded = a != 0  # terms that can fold S into the residual do so before the kernel
            if self.clock is not None:
                system.stage_clock = self._stage_clocks[i]
            for term in terms:  # S and R from the stage's input state (terms.py)
                if folded and term.folds:
                    term.fold(u, self.residual, t + c * dt, a, b, dt)
                else:
                    term.prepare(u, t + c * dt)
            if self.ghosts is None:
                self.stage(u, i, a, b, dt, write)
            else:
                request = self.ghosts.start(self.buffers[i % 2], concurrent=overlap)
                if split:
                    self.stage(u, i, a, b, dt, write, elements=(0, split))  # no ghost reads here
                ghost = self.ghosts.finish(request)
                self.stage(u, i, a, b, dt, write, elements=(split, system.num_elements), ghost=ghost)
            after = self.buffers[(i + 1) % 2] if write else None
            for term in terms:
                if folded and term.folds:
                    continue
                if term.writes_traces:
                    term.finish(u, self.residual, a, b, dt, traces=after)
                else:
                    term.finish(u, self.residual, a, b, dt)
            if terms and write:
                system.refresh_traces(u, after)
        system.stage_clock = None

    def _time_overlap(self, u, t, dt, trials=3, steps=2) -> dict:
        """Collective: seconds per step with and without overlap (slowest rank; best of
        ``trials`` runs of ``steps`` steps each way, after a warm-up step each). ``u`` is
        restored afterwards, and so are the terms' auxiliary fields; the residuals need not be
        (2N-storage schemes start with A = 0)."""
        from mpi4py import MPI

        xp = self.backend.xp
        saved = u.copy()
        saved_aux = [term.aux.copy() for term in self.system.terms if term.aux is not None]
        seconds = {False: [], True: []}
        for overlap in (False, True):
            self._step(u, t, dt, overlap)  # compiles, allocates
        for _ in range(trials):
            for overlap in (False, True):
                start, stop = xp.cuda.Event(), xp.cuda.Event()
                start.record()
                for _ in range(steps):
                    self._step(u, t, dt, overlap)
                stop.record()
                stop.synchronize()
                seconds[overlap].append(xp.cuda.get_elapsed_time(start, stop) / 1e3 / steps)
        u[...] = saved
        for term, aux in zip([term for term in self.system.terms if term.aux is not None], saved_aux):
            term.aux[...] = aux
        comm = self.ghosts.comm
        best = {k: comm.allreduce(min(v), op=MPI.MAX) for k, v in seconds.items()}
        return {"overlap": best[True] < best[False], "seconds_with": best[True], "seconds_without": best[False]}

    __call__ = step
