"""The run's snapshots: each output of the state in the case's formats (HDF5, VTK, Nek5000),
written collectively and each file under a temporary name then renamed, so a crash never
leaves a half-written file.

A case's ``[output] derived`` (and a format's own ``[output.<format>] derived``) adds fields
the system computes from the state (``System.derived_fields``, the names its spec declares)
after the state's fields: HDF5 datasets and VTK point arrays by their component names, and in
Nek5000 files passive-scalar slots after the system's own scalars (the file stores no names:
each snapshot's record in summary.json lists them, ``derived``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto import __version__
from lobatto.errors import InputError
from lobatto.machine.parallel import collective_errors, rank_and_size


class SnapshotWriter:
    """Writes the requested formats for one state and remembers what it wrote.

    With several ranks each writes its own elements: HDF5 parts joined by a virtual
    dataset (io/hdf5_parts.py), and one Nek5000 file written by all ranks (io/nek5000_mpi.py).
    VTK: a .vtu piece per rank joined by rank 0's .pvtu, and a .pvd time series (io/vtk.py).
    """

    def __init__(self, case, system, output_dir: Path, comm=None):
        self.case, self.system, self.output_dir, self.comm = case, system, output_dir, comm
        self.rank, self.size = rank_and_size(comm)
        self.formats = tuple(case.output.formats)
        self.name = case.output.name
        self.config_toml = case.to_toml()
        self.records: list[dict] = []
        self.nek_count = 0
        self.part_counts = [system.num_elements] if comm is None else comm.allgather(system.num_elements)
        # the derived fields of each format, computed once per snapshot for all of them
        self.derived = {fmt: case.output.derived_for(fmt) for fmt in self.formats}
        self.derived_names = tuple(dict.fromkeys(name for names in self.derived.values() for name in names))
        try:
            system.check_derived(self.derived_names)  # collective: every rank raises alike
        except InputError as error:
            raise InputError(f"{case.source}: {error}") from None
        self.vtk = None  # VTK pieces, .pvtu and the .pvd time series (io/vtk.py)
        if "vtk" in self.formats:
            from lobatto.io.vtk import VtkSeries

            self.vtk = VtkSeries(output_dir, self.name, self.rank, self.size)

    def write(self, u, step: int, t: float) -> None:
        """Collective: every rank writes its part, then rank 0 the files that join them; an
        error on any rank (a full disk, a read-only file) is raised on every rank."""
        from lobatto.io import hdf5, hdf5_parts, nek5000

        state = self.system.backend.to_host(u).astype(np.float64, copy=False)
        extra = self.system.derived_fields(u, self.derived_names)  # collective; {} without derived
        fields, names = self.with_derived(state, extra, "hdf5")
        coords = self.system.geometry.coords
        order = self.system.order
        mesh = self.system.mesh
        attrs = dict(time=t, step=step, order=order, config_toml=self.config_toml,
                     compression=self.case.output.compression,
                     extra_attrs={"backend": self.system.backend.name, "ranks": self.size,
                                  "equations": self.system.name})
        files = []
        h5_path = self.output_dir / f"{self.name}_{step:06d}.h5"
        if "nek" in self.formats:
            self.nek_count += 1
        with collective_errors(self.comm):
            if "hdf5" in self.formats:
                if self.size == 1:
                    hdf5.write_snapshot(h5_path, coords, fields, names, **attrs)
                else:
                    hdf5_parts.write_snapshot_part(h5_path, self.rank, coords, fields, names, mesh.element_ids,
                                                   **attrs)
            if self.vtk is not None:
                vtk_fields, vtk_names = self.with_derived(state, extra, "vtk")
                self.vtk.write_piece(step, t, coords, vtk_fields, vtk_names, order, mesh, self.config_toml)
        if "nek" in self.formats:  # one file for all ranks, written together (MPI-IO: io/nek5000_mpi.py)
            # temperature: optional; in 2-D a 3-name velocity gives its z name to the scalars
            velocity, pressure, scalars, *temperature = nek5000.layout_for_dimension(
                self.system.output_layout, self.system.mesh.dim)
            nek_derived = self.components("nek")  # in scalar slots after the system's own
            with collective_errors(self.comm):  # entered only once the per-rank writes above are agreed
                nek5000.write_field_file(
                    self.output_dir / nek5000.field_file_name(self.name, self.nek_count), coords,
                    {**dict(zip(self.system.field_names, state)), **extra}, t, step, order, velocity=velocity,
                    pressure=pressure, scalars=tuple(scalars) + nek_derived,
                    element_ids=mesh.element_ids + 1, comm=self.comm,
                    temperature=temperature[0] if temperature else None)
        with collective_errors(self.comm):  # the parts are complete on every rank now
            if self.rank == 0 and "hdf5" in self.formats and self.size > 1:
                hdf5_parts.write_virtual_snapshot(
                    h5_path, self.part_counts, order, names, np.float64,
                    {"time": t, "step": step, "order": order, "config": self.config_toml,
                     "layout": hdf5.LAYOUT, "field_names": list(names), "ranks": self.size,
                     "equations": self.system.name, "lobatto_version": __version__})
            if self.rank == 0 and "nek" in self.formats:
                nek5000.write_index(self.output_dir / f"{self.name}.nek5000", self.name, 1, self.nek_count)
            if self.rank == 0 and self.vtk is not None:
                self.vtk.write_index(step, t, vtk_names, mesh)
        if "hdf5" in self.formats:
            files.append(h5_path.name)
        if "nek" in self.formats:
            files.append(nek5000.field_file_name(self.name, self.nek_count, 0))
        if self.vtk is not None:
            files.append(self.vtk.dataset_name(step))
        record = {"step": step, "time": t, "files": files}
        if self.derived_names:  # the derived fields' names in each format (Nek5000 files store none)
            record["derived"] = {fmt: list(self.components(fmt)) for fmt in self.formats}
        self.records.append(record)

    def components(self, fmt: str) -> tuple:
        """The field names the derived fields of format ``fmt`` write, in order."""
        spec = self.system.spec
        return tuple(c for name in self.derived.get(fmt, ()) for c in spec.derived[name].components)

    def with_derived(self, state, extra: dict, fmt: str) -> tuple:
        """(fields (F', E, n, n, n), names) of format ``fmt``: the state's, then its derived ones."""
        names = tuple(self.system.field_names)
        derived = self.components(fmt)
        if not derived:
            return state, names
        return np.concatenate([state, np.stack([extra[c] for c in derived])]), names + derived
