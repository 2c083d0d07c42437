"""Running time averages of the flow: ``[output.statistics]`` (docs/navier-stokes.md,
"Statistics"), Nek5000's ``avg_all`` and Neko's ``fluid_stats``.

At every step that is a multiple of ``every`` with t >= ``start`` the monitor samples u, v,
w, p, the products u_i u_j, p^2 and, for each passive scalar T, T, u_i T and T^2
(statistics_table.quantities). A sample at time t_n weighs w_n = t_n - t_(n-1), the time
since the previous sample (``start`` for the first): the average sum_n w_n q(t_n) / sum_n w_n
is the rectangle rule for (1 / (t_last - start)) integral q dt, as Nek5000's avg_all weighs
its samples by the time since the last one.

With ``average`` = [] the sums are kept per GLL point (on the backend); with homogeneous
directions each sample is first averaged over them with the quadrature (mass) weights (within
each element on the backend, then on the host into the grid), over the box's elements, into a
profile (or a plane) at the GLL points of the remaining
directions, points shared by neighbouring elements merged (the element with box index i_a
and node m along a remaining axis a is the grid point i_a N + m). That needs the box's
structure: element e = ix + nx (iy + ny iz) (mesh/box.py), read from each element's global
id, so a partitioned run puts its elements in the same grid. Every rank adds its elements'
part and one allreduce per sample sums them; the accumulated profile is then the same on
every rank.

The sums live across restarts: ``state()`` (the checkpoint's JSON: counts, times, the
profile sums) and ``state_arrays()`` (the per-point sums of a 3-D average, stored by element
in the checkpoint), so a continued run's averages equal an uninterrupted run's. Writing:
statistics_output.py.
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.monitors import register_monitor
from lobatto.monitors.base import Monitor
from lobatto.systems.navier_stokes.statistics_output import file_names, write_statistics
from lobatto.systems.navier_stokes.statistics_table import DIRECTIONS, STATISTICS, WHERE, quantities

#: a remaining coordinate may differ along the averaged directions by this much of the box
ALIGNED = 1e-9


class StatisticsMonitor(Monitor):
    """The running averages on this rank's part of the mesh."""

    section = "statistics"
    dimensions = (2, 3)  # 2-D: averages along x or y (z is refused by check_planar)
    table = STATISTICS
    not_in_checkpoint = "the averages are not saved in it"
    kept_across_interpolation = False  # its sums are at the checkpoint's points (or profile grid)

    @classmethod
    def memory_estimate(cls, section, layout) -> list:
        """A 3-D average keeps a float64 sum per quantity and point on the backend, and rank 0
        gathers every rank's at the end; profiles are small."""
        if section.average:
            return []
        fields = len(section.fields) if section.fields is not None else layout.fields
        count = fields + fields * (fields + 1) // 2
        nbytes = 8.0 * count * layout.points
        return [layout.backend_item(f"[{WHERE}] sums of {count} quantities on {layout.points:,} points", nbytes,
                                    host=nbytes * (1 + 2 * layout.ranks),
                                    advice=f"average over homogeneous directions ([{WHERE}] average) or choose fewer "
                                           f"[{WHERE}] fields")]

    @classmethod
    def from_case(cls, case, section, system, comm=None) -> StatisticsMonitor:
        monitor = cls(section, system, comm, case.mesh)
        monitor.output_name = case.output.name
        return monitor

    def __init__(self, section, system, comm=None, mesh_section=None):
        self.settings, self.system = section, system
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        names = list(system.field_names)
        chosen = list(section.fields) if section.fields is not None else names
        unknown = [name for name in chosen if name not in names]
        if unknown:
            raise InputError(f"[{WHERE}] fields: '{unknown[0]}' is not a field of the state (fields: {', '.join(names)})")
        self.quantities = quantities(names, chosen)
        self.names = [name for name, _ in self.quantities]
        self.average = list(section.average)
        xp = system.backend.xp
        self.samples, self.weight, self.t_first, self.t_last = 0, 0.0, None, None
        self.last_step, self.previous_time, self.run_start, self.restored = -1, None, 0.0, False
        if self.average:
            self._profile_setup(mesh_section)
            self.sums = np.zeros((len(self.names), self.bins_total))
        else:
            self.sums = xp.zeros((len(self.names),) + tuple(system.geometry.coords.shape[1:]), dtype=np.float64)

    # Homogeneous averaging on a box --------------------------------------------------------
    def _profile_setup(self, mesh_section) -> None:
        """The grid of the remaining directions, each local point's place in it, and the
        quadrature weight of each grid point (collective)."""
        system, order = self.system, self.system.order
        if mesh_section is None or mesh_section.elements is None:
            raise InputError(f"[{WHERE}] average = {self.average}: averaging over directions needs a box mesh "
                             "([mesh] elements, lower, upper); use average = [] on a mesh from a file")
        for name in self.average:
            if not mesh_section.periodic[DIRECTIONS.index(name)]:
                raise InputError(f"[{WHERE}] average: the mesh is not periodic along {name} ([mesh] periodic); the "
                                 "flow is homogeneous only along periodic directions")
        counts = [int(c) for c in mesh_section.elements]
        averaged = [DIRECTIONS.index(name) for name in self.average]
        dim = system.mesh.dim  # 2-D: x and y only (z is refused by check_planar)
        self.remaining = [a for a in range(dim) if a not in averaged]
        # (E, k, j, i) arrays: x is axis 3, y axis 2, z axis 1
        self.sum_axes = tuple(sorted(3 - a for a in averaged))
        ids = np.asarray(system.mesh.element_ids, dtype=np.int64)
        index = [ids % counts[0], (ids // counts[0]) % counts[1], ids // (counts[0] * counts[1])][:dim]
        self.grid_shape = tuple(counts[a] * order + 1 for a in self.remaining)
        self.bins_total = int(np.prod(self.grid_shape, dtype=np.int64))
        kept = sorted(self.remaining, reverse=True)  # the partial sums' axis order: z, y, x
        nodes = np.indices((order + 1,) * len(kept), dtype=np.int64)
        place = {a: index[a].reshape((-1,) + (1,) * len(kept)) * order + nodes[m][None] for m, a in enumerate(kept)}
        if self.remaining:
            bins = np.ravel_multi_index(tuple(place[a] for a in self.remaining), self.grid_shape)
        else:
            bins = np.zeros(ids.size, dtype=np.int64)
        self.bins_host = bins.reshape(-1)
        mass = np.asarray(system.backend.to_host(system.quadrature_mass()), dtype=np.float64)
        self.area = allreduce(self.comm, self._host_partial(mass))
        coords = system.geometry.coords
        self.coordinates = {DIRECTIONS[a]: (allreduce(self.comm, self._host_partial(mass * coords[a])) / self.area).reshape(self.grid_shape)
                            for a in self.remaining}
        self._check_aligned(coords, mesh_section)
        self.mass = system.backend.xp.asarray(mass)

    def _host_partial(self, values) -> np.ndarray:
        """This rank's sum of ``values`` (E, n, n, n) into the grid's points (host, NumPy)."""
        partial = values.sum(axis=self.sum_axes) if self.sum_axes else values
        return np.bincount(self.bins_host, weights=np.asarray(partial).reshape(-1), minlength=self.bins_total)

    def _check_aligned(self, coords, mesh_section) -> None:
        """Every point merged into one grid point has the same remaining coordinates: a
        [mesh] deform that moves points along the remaining directions differently across
        the averaged ones makes the flow there no longer homogeneous (collective)."""
        for a in self.remaining:
            low, high = np.full(self.bins_total, np.inf), np.full(self.bins_total, -np.inf)
            values = np.asarray(coords[a])
            lowest = values.min(axis=self.sum_axes) if self.sum_axes else values
            highest = values.max(axis=self.sum_axes) if self.sum_axes else values
            np.minimum.at(low, self.bins_host, lowest.reshape(-1))
            np.maximum.at(high, self.bins_host, highest.reshape(-1))
            low, high = allreduce(self.comm, low, "min"), allreduce(self.comm, high, "max")
            extent = float(mesh_section.upper[a] - mesh_section.lower[a])
            if np.max(high - low) > ALIGNED * extent:
                raise InputError(f"[{WHERE}] average = {self.average}: the mesh's points are not aligned along "
                                 f"{', '.join(self.average)} ({DIRECTIONS[a]} varies by {np.max(high - low):.3g} along "
                                 "them: a [mesh] deform?); average over directions the mesh is uniform along")

    # Sampling ----------------------------------------------------------------------------
    def start(self, u, step: int, t: float, output_dir, attrs: dict) -> None:
        """The run starts at ``t``: before it nothing was sampled (a run continued from a
        checkpoint that holds no averages weighs its first sample from here, not from start)."""
        if not self.restored:
            self.run_start = float(t)

    def _value(self, u, fields):
        value = u[fields[0]].astype(np.float64)
        return value * u[fields[1]] if len(fields) > 1 else value

    def after_step(self, u, step: int, t: float, last: int) -> None:
        """Collective: sample at the multiples of ``every`` from ``start`` on (a continued run
        does not sample again the step its checkpoint had taken)."""
        start = float(self.settings.start)
        if step % self.settings.every or step <= self.last_step or t < start - 1e-12 * max(1.0, abs(start)):
            return
        first = max(start, self.run_start)  # a run continued from a checkpoint without averages
        weight = max(0.0, t - (self.previous_time if self.previous_time is not None else first))
        xp = self.system.backend.xp
        if self.average:
            # the sums over the averaged axes on the backend, the grid's bins on the host
            # (a device bincount adds with atomics, in no fixed order: not reproducible)
            partial = xp.stack([(self.mass * self._value(u, fields)).sum(axis=self.sum_axes).reshape(-1)
                                if self.sum_axes else (self.mass * self._value(u, fields)).reshape(-1)
                                for _, fields in self.quantities])
            partial = np.asarray(self.system.backend.to_host(partial), dtype=np.float64)
            local = np.stack([np.bincount(self.bins_host, weights=row, minlength=self.bins_total) for row in partial])
            total = allreduce(self.comm, local)
            self.sums += weight * (total / self.area)
        else:
            for q, (_, fields) in enumerate(self.quantities):
                self.sums[q] += weight * self._value(u, fields)
        self.samples += 1
        self.weight += weight
        self.t_first = t if self.t_first is None else self.t_first
        self.t_last, self.previous_time, self.last_step = t, t, step

    def averages(self):
        """{quantity: its average} (profile grids on the host; 3-D: backend arrays, per point)."""
        scale = 1.0 / self.weight if self.weight > 0 else 0.0
        if self.average:
            return {name: (self.sums[q] * scale).reshape(self.grid_shape) for q, name in enumerate(self.names)}
        return {name: self.sums[q] * scale for q, name in enumerate(self.names)}

    # Checkpoints -------------------------------------------------------------------------
    def state(self) -> dict:
        out = {"samples": self.samples, "weight": self.weight, "t_first": self.t_first, "t_last": self.t_last,
               "last_step": self.last_step, "previous_time": self.previous_time, "quantities": self.names,
               "average": self.average, "run_start": self.run_start}
        if self.average:
            out["sums"] = self.sums.tolist()
        return out

    def state_arrays(self) -> dict:
        """The 3-D sums (quantities, E, n, n, n): stored by element in the checkpoint."""
        return {} if self.average else {"sums": self.sums}

    def restore(self, state: dict) -> None:
        if list(state.get("quantities", [])) != self.names or list(state.get("average", [])) != self.average:
            raise InputError(f"[{WHERE}] cannot continue the checkpoint's averages: it averaged "
                             f"{state.get('quantities')} over {state.get('average')}, this case asks for {self.names} "
                             f"over {self.average} (keep [{WHERE}] fields and average across restarts)")
        self.samples, self.weight = int(state["samples"]), float(state["weight"])
        self.t_first, self.t_last = state.get("t_first"), state.get("t_last")
        self.last_step = int(state["last_step"])
        self.previous_time = state.get("previous_time")
        self.run_start, self.restored = float(state.get("run_start", 0.0)), True
        if self.average:
            self.sums = np.asarray(state["sums"], dtype=np.float64).reshape(self.sums.shape)

    def restore_arrays(self, arrays: dict) -> None:
        if not self.average and "sums" in arrays:
            xp = self.system.backend.xp
            self.sums = xp.asarray(np.asarray(arrays["sums"], dtype=np.float64))

    # Output ------------------------------------------------------------------------------
    def close(self, output_dir, attrs: dict) -> None:
        write_statistics(self, output_dir, attrs)

    def describe(self) -> dict:
        return {"statistics": {"files": file_names(self), "samples": self.samples, "average": self.average,
                               "time": [self.t_first, self.t_last], "weight": self.weight,
                               "start": float(self.settings.start), "every": int(self.settings.every)}}


register_monitor("statistics", StatisticsMonitor)  # [output.statistics], built by the run's MonitorSet
