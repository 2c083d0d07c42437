"""Lossless compression of checkpoints and snapshots on a real field: ratio and write time.

    python benchmarks/compression.py [--elements 6] [--order 7] [--steps 300] [--repeats 5]

Runs the Maxwell cavity (PEC unit cube, a slightly curved mesh, all six components excited by
Gaussian pulses) for ``--steps`` steps on the CPU backend, then writes its float64 state with
each compression: as a checkpoint part (what ``[checkpoint] compression`` does: chunks of
whole elements, fletcher32 checksums) and as an HDF5 snapshot with coordinates (``[output]
compression``). The filters without the byte shuffle are measured too, to show what it does.
Each write is timed to the end of its fsync; the median of ``--repeats`` writes is reported,
and every file is read back and compared with the state. Prints a table; writes the rows as
JSON into benchmarks/results/ (``--json`` to choose the file).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import h5py

from lobatto.api import Simulation, case_from_dict
from lobatto.bench.report import median_seconds, processor, write_json
from lobatto.io.compression import dataset_options, register_filters
from lobatto.io.hdf5 import write_snapshot

HERE = Path(__file__).resolve().parent
PULSE = "exp(-30*((x-{x})**2+(y-{y})**2+(z-{z})**2))"
VARIANTS = [  # (label, compression, shuffle)
    ("none", "none", False),
    ("gzip", "gzip", True), ("gzip, no shuffle", "gzip", False),
    ("lz4", "lz4", True), ("lz4, no shuffle", "lz4", False),
    ("zstd", "zstd", True), ("zstd, no shuffle", "zstd", False),
]


def cavity_state(elements: int, order: int, steps: int):
    case = case_from_dict({
        "mesh": {"elements": [elements] * 3, "deform": {"x": "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"}},
        "discretization": {"order": order},
        "initial": {"Ex": PULSE.format(x=0.4, y=0.5, z=0.6), "Ey": PULSE.format(x=0.6, y=0.4, z=0.5),
                    "Ez": "sin(pi*x)*sin(pi*y)", "Hz": PULSE.format(x=0.5, y=0.6, z=0.4)},
        "time": {"t_end": 10.0},
        "output": {"formats": []},
    }, name="cavity")
    with tempfile.TemporaryDirectory() as scratch:
        sim = Simulation(case, backend="cpu", output_dir=scratch, comm=None)
        sim.advance(steps)
    state = sim.backend.to_host(sim.u).astype(np.float64)
    return sim, state


def fsynced(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_part(path: Path, state_elements_first: np.ndarray, compression: str, shuffle: bool) -> None:
    options = dataset_options(compression, state_elements_first.shape, 8, checksum=True)
    if not shuffle:
        options.pop("shuffle", None)
    with h5py.File(path, "w") as f:
        f.create_dataset("state", data=state_elements_first, **options)
    fsynced(path)


def write_snap(path: Path, sim, state: np.ndarray, compression: str) -> None:
    write_snapshot(path, sim.system.geometry.coords, state, sim.system.field_names, time=sim.t, step=sim.step_count,
                   order=sim.system.order, config_toml="", compression=compression)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=6, help="elements per side of the cube")
    ap.add_argument("--order", type=int, default=7)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--directory", default=None, help="where to write the files (default: a temporary directory)")
    ap.add_argument("--json", metavar="PATH", default=None)
    args = ap.parse_args()
    if not register_filters():
        print("hdf5plugin is not installed: lz4 and zstd cannot be measured (pip install hdf5plugin)")
        return 1

    load = os.getloadavg()  # the machine may be shared: timings are only as quiet as it is
    sim, state = cavity_state(args.elements, args.order, args.steps)
    elements_first = np.ascontiguousarray(np.moveaxis(state, 1, 0))
    raw = state.nbytes
    rows = []
    with tempfile.TemporaryDirectory(dir=args.directory) as scratch:
        scratch = Path(scratch)
        for label, compression, shuffle in VARIANTS:
            part = scratch / "part.h5"
            seconds = median_seconds(lambda: write_part(part, elements_first, compression, shuffle), args.repeats)
            size = part.stat().st_size
            start = time.perf_counter()
            with h5py.File(part, "r") as f:
                back = f["state"][...]
            read_seconds = time.perf_counter() - start
            assert np.array_equal(back, elements_first), label
            row = {"compression": label, "checkpoint_bytes": size, "checkpoint_ratio": raw / size,
                   "checkpoint_write_seconds": seconds, "checkpoint_read_seconds": read_seconds}
            if shuffle or compression == "none":  # what [output] compression offers
                snap = scratch / "snap.h5"
                row["snapshot_write_seconds"] = median_seconds(lambda: write_snap(snap, sim, state, compression), args.repeats)
                row["snapshot_bytes"] = snap.stat().st_size
                with h5py.File(snap, "r") as f:
                    assert np.array_equal(f["fields/Ez"][...], state[2]), label
            rows.append(row)
    base = rows[0]
    for row in rows:
        row["checkpoint_write_overhead"] = row["checkpoint_write_seconds"] / base["checkpoint_write_seconds"]
        if "snapshot_bytes" in row:
            row["snapshot_ratio"] = base["snapshot_bytes"] / row["snapshot_bytes"]
            row["snapshot_write_overhead"] = row["snapshot_write_seconds"] / base["snapshot_write_seconds"]

    points = state.shape[1] * (args.order + 1) ** 3
    print(f"Maxwell cavity, {args.elements}^3 elements, order {args.order}, {points:,} points, after {args.steps} "
          f"steps (t = {sim.t:.4f}); state {raw / 2**20:.1f} MiB float64; median of {args.repeats} writes")
    print(f"{'compression':<18}{'ckpt MiB':>9}{'ratio':>7}{'write s':>9}{'x none':>8}{'read s':>8}"
          f"{'snap MiB':>10}{'ratio':>7}{'write s':>9}{'x none':>8}")
    for r in rows:
        line = (f"{r['compression']:<18}{r['checkpoint_bytes'] / 2**20:>9.2f}{r['checkpoint_ratio']:>7.2f}"
                f"{r['checkpoint_write_seconds']:>9.4f}{r['checkpoint_write_overhead']:>8.2f}"
                f"{r['checkpoint_read_seconds']:>8.4f}")
        if "snapshot_bytes" in r:
            line += (f"{r['snapshot_bytes'] / 2**20:>10.2f}{r['snapshot_ratio']:>7.2f}"
                     f"{r['snapshot_write_seconds']:>9.4f}{r['snapshot_write_overhead']:>8.2f}")
        print(line)

    import hdf5plugin

    result = {
        "benchmark": "compression", "date": datetime.date.today().isoformat(),
        "command": "python benchmarks/compression.py " + " ".join(sys.argv[1:]),
        "machine": {"platform": platform.platform(), "processor": processor(),
                    "cores": os.cpu_count(), "load_average_1_5_15_min": list(load)},
        "versions": {"lobatto": lobatto.__version__, "h5py": h5py.version.version,
                     "hdf5": h5py.version.hdf5_version, "hdf5plugin": hdf5plugin.version, "numpy": np.__version__},
        "case": {"elements": [args.elements] * 3, "order": args.order, "steps": args.steps, "t": sim.t,
                 "points": points, "state_bytes": raw},
        "repeats": args.repeats, "rows": rows,
    }
    path = Path(args.json) if args.json else HERE / "results" / f"compression_cpu_{result['date']}.json"
    print()
    write_json(path, result, default=None, end="\n", say="written to")
    return 0


if __name__ == "__main__":
    sys.exit(main())
