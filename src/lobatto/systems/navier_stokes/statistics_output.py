"""The files of ``[output.statistics]`` (statistics.py; docs/navier-stokes.md, "Statistics").

``NAME_statistics.h5`` (rank 0, atomically; root attributes: the effective configuration,
the equations, the output name): attributes ``samples``, ``weight`` (the time averaged over,
the sum of the samples' weights), ``t_first``, ``t_last``, ``start``, ``every``, ``average``,
``quantities``; datasets ``mean/<quantity>`` (the averages) and ``covariance/<a>_<b>`` = <ab>
- <a><b> for each product. With ``average`` the grid's coordinates are ``coordinates/<axis>``
(one array per remaining direction, of the grid's shape) and the same table goes to
``NAME_statistics.csv`` (a row per grid point: the coordinates, the means, the covariances).
A 3-D average stores ``element_ids`` (global, ascending), ``coordinates`` (3, E, n, n, n)
and the per-point fields (E, n, n, n), and Nek5000 field files as avg_all writes them:

    avgNAME0.f00001  velocity <u>, <v>, <w>;        pressure <p>;    T <T1>,   S01.. <T2>..
    rmsNAME0.f00001  velocity <uu>, <vv>, <ww>;     pressure <pp>;   T <T1T1>, S01.. <T2T2>..
    rm2NAME0.f00001  velocity <uv>, <vw>, <uw>
    flxNAME0.f00001  velocity <uT1>, <vT1>, <wT1>   (with a scalar)

each with its ``.nek5000`` index (ParaView), read by pymech; and ``NAME_statistics.vtu`` (one
rank; ``.pvtu`` with a piece per rank) with every average at the GLL nodes (io/vtk.py). A
Nek5000 file whose slots' fields were not averaged ([output.statistics] fields) is not written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.machine.parallel import collective_errors, rank_and_size
from lobatto.systems.navier_stokes.statistics_table import DIRECTIONS, PRESSURE, VELOCITY

SUFFIX = "_statistics"


def _nek_files(monitor) -> list[tuple[str, dict]]:
    """(prefix, write_field_file's slots) of each Nek5000 file a 3-D average writes (2-D: the
    velocity slot holds ux, uy; no rm2 file, whose slot would need three products)."""
    names = set(monitor.names)
    scalars = [name for name, fields in monitor.quantities if len(fields) == 1 and name not in VELOCITY
               and name != PRESSURE]
    dim = monitor.system.mesh.dim
    velocity = VELOCITY[:dim]
    has_velocity = all(v in names for v in velocity)
    out = []
    slots = {"velocity": list(velocity) if has_velocity else None, "pressure": PRESSURE if PRESSURE in names else None,
             "temperature": scalars[0] if scalars else None, "scalars": scalars[1:]}
    out.append(("avg", slots))
    squares = {"velocity": [f"{v}_{v}" for v in velocity] if has_velocity else None,
               "pressure": "p_p" if PRESSURE in names else None,
               "temperature": f"{scalars[0]}_{scalars[0]}" if scalars else None,
               "scalars": [f"{s}_{s}" for s in scalars[1:]]}
    out.append(("rms", squares))
    if has_velocity and dim == 3:
        out.append(("rm2", {"velocity": ["ux_uy", "uy_uz", "ux_uz"], "pressure": None, "temperature": None,
                            "scalars": []}))
    if has_velocity:
        if scalars:
            out.append(("flx", {"velocity": [f"{v}_{scalars[0]}" for v in velocity], "pressure": None,
                                "temperature": None, "scalars": []}))
    return [(prefix, slots) for prefix, slots in out
            if slots["velocity"] or slots["pressure"] or slots["temperature"] or slots["scalars"]]


def file_names(monitor) -> list[str]:
    name = monitor.output_name
    files = [f"{name}{SUFFIX}.h5"]
    if monitor.average:
        files.append(f"{name}{SUFFIX}.csv")
    else:
        from lobatto.io.nek5000 import field_file_name

        files += [field_file_name(prefix + name, 1) for prefix, _ in _nek_files(monitor)]
        files.append(vtk_name(name, rank_and_size(monitor.comm)[1]))
    return files


def covariances(monitor, means: dict) -> dict:
    """{a_b: <ab> - <a><b>} of each product averaged."""
    field_of = {fields: name for name, fields in monitor.quantities if len(fields) == 1}
    return {name: means[name] - means[field_of[(fields[0],)]] * means[field_of[(fields[1],)]]
            for name, fields in monitor.quantities if len(fields) == 2}


def _root_attributes(f, monitor) -> None:
    settings = monitor.settings
    f.attrs.update(samples=monitor.samples, weight=monitor.weight, start=float(settings.start),
                   every=int(settings.every), average=list(monitor.average) or "", quantities=list(monitor.names),
                   t_first=float(monitor.t_first if monitor.t_first is not None else np.nan),
                   t_last=float(monitor.t_last if monitor.t_last is not None else np.nan),
                   weighting="each sample by the time since the previous sample (start for the first)")


def write_statistics(monitor, output_dir, attrs: dict) -> None:
    """Collective: the monitor's files (the module's docstring)."""
    if monitor.average:
        with collective_errors(monitor.comm):
            if rank_and_size(monitor.comm)[0] == 0:
                _write_profiles(monitor, Path(output_dir), attrs)
        return
    _write_fields(monitor, Path(output_dir), attrs)


def _write_profiles(monitor, output_dir: Path, attrs: dict) -> None:
    from lobatto.io.atomic import atomic_open, h5_output

    means = monitor.averages()
    covariance = covariances(monitor, means)
    axes = [DIRECTIONS[a] for a in monitor.remaining]
    name = attrs["name"]
    with h5_output(output_dir / f"{name}{SUFFIX}.h5", attrs) as f:
        _root_attributes(f, monitor)
        for axis in axes:
            f[f"coordinates/{axis}"] = monitor.coordinates[axis].reshape(monitor.grid_shape)
        for key, value in means.items():
            f[f"mean/{key}"] = value
        for key, value in covariance.items():
            f[f"covariance/{key}"] = value
    columns = [(axis, monitor.coordinates[axis]) for axis in axes] + list(means.items()) + [
        (f"cov_{key}", value) for key, value in covariance.items()]
    table = np.stack([np.asarray(value, dtype=np.float64).reshape(-1) for _, value in columns], axis=1)
    with atomic_open(output_dir / f"{name}{SUFFIX}.csv") as fh:
        fh.write(",".join(key for key, _ in columns) + "\n")
        for row in table:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")


def _write_fields(monitor, output_dir: Path, attrs: dict) -> None:
    """Collective: rank 0 gathers every rank's elements into the HDF5 file; every rank writes
    its elements into the Nek5000 files (MPI-IO)."""
    from lobatto.io import nek5000
    from lobatto.io.atomic import h5_output

    system, comm, name = monitor.system, monitor.comm, attrs["name"]
    host = {key: np.asarray(system.backend.to_host(value), dtype=np.float64) for key, value in monitor.averages().items()}
    coords, ids = system.geometry.coords, np.asarray(system.mesh.element_ids, dtype=np.int64)
    rank, size = rank_and_size(comm)
    mine = (ids, coords, host)
    parts = [mine] if comm is None else comm.gather(mine, root=0)
    with collective_errors(comm):
        if rank == 0:
            all_ids = np.concatenate([p[0] for p in parts])
            order = np.argsort(all_ids, kind="stable")
            join = lambda arrays, axis=0: np.concatenate(arrays, axis=axis).take(order, axis=axis)  # noqa: E731
            means = {key: join([p[2][key] for p in parts]) for key in host}
            with h5_output(output_dir / f"{name}{SUFFIX}.h5", attrs) as f:
                _root_attributes(f, monitor)
                f["element_ids"] = all_ids[order]
                f["coordinates"] = join([p[1] for p in parts], axis=1)
                for key, value in means.items():
                    f[f"mean/{key}"] = value
                for key, value in covariances(monitor, means).items():
                    f[f"covariance/{key}"] = value
    _write_vtk(monitor, output_dir, attrs, host, coords, ids)
    for prefix, slots in _nek_files(monitor):
        with collective_errors(comm):
            nek5000.write_field_file(output_dir / nek5000.field_file_name(prefix + name, 1), coords, host,
                                     monitor.t_last or 0.0, max(monitor.last_step, 0), system.order,
                                     velocity=slots["velocity"], pressure=slots["pressure"],
                                     scalars=slots["scalars"], temperature=slots["temperature"],
                                     element_ids=ids + 1, comm=comm)
        with collective_errors(comm):
            if rank == 0:
                nek5000.write_index(output_dir / f"{prefix}{name}.nek5000", prefix + name, 1, 1)


def vtk_name(name: str, size: int) -> str:
    """The file ParaView opens: ``NAME_statistics.vtu`` on one rank, else ``.pvtu``."""
    return f"{name}{SUFFIX}.{'vtu' if size == 1 else 'pvtu'}"


def _write_vtk(monitor, output_dir: Path, attrs: dict, host: dict, coords, ids) -> None:
    """Collective: every rank its piece (the averages at the GLL nodes), rank 0 the ``.pvtu``."""
    from lobatto.io import vtk

    rank, size = rank_and_size(monitor.comm)
    # the VTK writer joins any run "Ax, Ay, Az" into a vector A: ux, uy, uz become u, but
    # ux_ux, ux_uy, ux_uz (a row of <u_i u_j>) must stay three scalars, so the products go
    # diagonal first (ux_ux, uy_uy, uz_uz, ux_uy, ...), which no three names in a row match
    name = attrs["name"]
    names = sorted(host, key=lambda key: (_diagonal_first(key), list(host).index(key)))
    piece = lambda r: vtk_name(name, 1) if size == 1 else f"{name}{SUFFIX}_p{r}.vtu"  # noqa: E731
    with collective_errors(monitor.comm):
        vtk.write_piece(output_dir / piece(rank), coords, [host[key] for key in names], names, monitor.system.order,
                        time=float(monitor.t_last or 0.0), step=max(monitor.last_step, 0), config_toml=attrs["config"],
                        element_ids=ids, rank=rank)
    with collective_errors(monitor.comm):
        if rank == 0 and size > 1:
            vtk.write_parallel_index(output_dir / vtk_name(name, size), [piece(r) for r in range(size)], names)


def _diagonal_first(key: str) -> int:
    """0 for a field or a square (ux_ux), 1 for any other product (ux_uy, ux_T)."""
    parts = key.split("_")
    return 0 if len(parts) != 2 or parts[0] == parts[1] else 1
