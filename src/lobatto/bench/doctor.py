"""``lobatto doctor``: does this machine (or this allocation) run lobatto as it should?

    lobatto doctor [--backend auto|cpu|cuda] [--json PATH] [--bytes N] [--repeats K] [--timeout S]
    mpiexec -n P lobatto doctor ...

Per rank: host, visible GPUs and the one lobatto would take, the MPI library and whether it
is CUDA-aware, NCCL, the kernel caches, package versions (doctor_probe). Per transport
(host, cuda-aware-mpi, nccl): available or why not; where available a gather-scatter
across the ranks checked against NumPy and timed (doctor_exchange). Rank 0 prints one row
per rank, the sections, and a verdict line last; every rank exits with the same code: 0
when no check failed (a transport that is not available is said, not failed), 1 when one
did, 2 for an unreadable option. docs/doctor.md explains each line. The options are parsed in
bench/cli.py (doctor_parser).
"""

from __future__ import annotations

import argparse
import datetime
import secrets
import socket

from lobatto.bench import doctor_exchange, doctor_probe
from lobatto.bench.report import rows_table, write_json
from lobatto.bench.surroundings import git_commit

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_bytes(text: str) -> int:
    """'4096', '1e6', '64K', '1M', '1G' (binary units) -> bytes; at least 8 (one float64)."""
    raw = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = raw[-1:] if raw[-1:] in _UNITS and raw[-1:] else ""
    try:
        value = float(raw[:-1] if unit else raw) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size in bytes such as 1048576, 1e6, 64K or 1M, got {text!r}")
    if not 8 <= value <= 1 << 34:
        raise argparse.ArgumentTypeError(f"expected between 8 bytes and 16G, got {text!r}")
    return int(value)


# -- collecting ------------------------------------------------------------------------------
def _choose_backend(requested: str, reasons: list) -> tuple[str, str | None, list[str]]:
    """(backend, why the ranks use no GPU or None, failures) from every rank's CuPy status."""
    missing = [(r, why) for r, why in enumerate(reasons) if why is not None]
    if requested == "cpu":
        return "cpu", "--backend cpu", []
    if not missing:
        return "cuda", None, []
    if requested == "cuda":
        return "cpu", missing[0][1], [f"rank {r}: backend cuda: {why}" for r, why in missing]
    failures = []
    if len(missing) < len(reasons):  # auto: a GPU on some ranks only is a broken allocation
        failures.append(f"GPUs on some ranks only: {', '.join(f'rank {r}: {why}' for r, why in missing)}")
    return "cpu", missing[0][1], failures


def collect(args, comm) -> dict:
    """Collective: every rank's row (gathered to rank 0) and every transport's results."""
    from lobatto.machine.parallel import node_local_rank, rank_and_size

    rank, size = rank_and_size(comm)
    reasons = doctor_exchange.allgather(comm, doctor_probe.cupy_reason())
    backend, device_reason, failures = _choose_backend(args.backend, reasons)
    row = doctor_probe.rank_row(rank, size, node_local_rank(comm), backend)
    rows = [row] if comm is None else comm.gather(row, root=0)
    seed = secrets.randbits(62) if rank == 0 else None
    seed = seed if comm is None else comm.bcast(seed, root=0)
    device_key = (row["hostname"], row["device"].get("pci_bus_id"))
    if backend == "cuda":  # a rank without a GPU of its own (a failure already) cannot check a device transport
        homeless = [r for r, key in enumerate(doctor_exchange.allgather(comm, device_key)) if key[1] is None]
        if homeless:
            device_reason = f"{_ranks_text(homeless)} without a GPU of its own"
    transports = {}
    for name in doctor_exchange.TRANSPORTS:
        why = doctor_exchange.availability(name, comm, backend, device_reason, device_key)
        if why is None and name != "host" and device_reason is not None:
            why = device_reason
        entry = {"available": why is None, "reason": why}
        if why is None:
            xp = _array_module(backend)
            result = doctor_exchange.run_check(name, comm, xp, seed, args.bytes, args.repeats, args.timeout)
            entry["ranks"] = [result] if comm is None else comm.gather(result, root=0)
        transports[name] = entry
    if backend == "cuda" and comm is not None and transports["nccl"]["available"]:
        from lobatto.comm.transport.nccl import destroy_all

        destroy_all()
    return {"backend": backend, "backend_requested": args.backend, "seed": seed, "rows": rows,
            "transports": transports, "failures": failures}


def _array_module(backend: str):
    if backend == "cuda":
        import cupy

        return cupy
    import numpy

    return numpy


# -- judging ---------------------------------------------------------------------------------
def _ranks_text(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


def judge(found: dict) -> tuple[list[str], list[str]]:
    """(failures, notes) of a collected report; a failure met on several ranks is said once,
    naming them."""
    per_rank: dict[str, list[int]] = {}

    def add(rank: int, message: str) -> None:
        per_rank.setdefault(message, []).append(rank)

    for row in found["rows"]:
        for message in doctor_probe.rank_failures(row):
            add(row["rank"], message)
    for name, entry in found["transports"].items():
        for rank, result in enumerate(entry.get("ranks", [])):
            if not result.get("ok"):
                add(rank, f"{name} {result.get('problem') or 'check failed'}")
    failures = list(found["failures"])
    failures += [f"{_ranks_text(ranks)}: {message}" for message, ranks in per_rank.items()]
    mapping_failures, notes = doctor_probe.mapping_problems(found["rows"])
    failures += mapping_failures + doctor_probe.version_mismatches(found["rows"])
    return failures, notes


def verdict(found: dict, failures: list[str]) -> tuple[str, int]:
    if failures:
        return "doctor: FAIL: " + "; ".join(failures), 1
    size = len(found["rows"])
    parts = []
    for name, entry in found["transports"].items():
        if not entry["available"]:
            parts.append(f"{name} not available: {entry['reason']}")
        elif size == 1:
            parts.append(f"{name} ok (1 rank: local sums only, no messages)")
        else:
            parts.append(f"{name} ok")
    return (f"doctor: OK ({size} rank{'s' if size != 1 else ''}, {found['backend']}; "
            f"transports: {'; '.join(parts)})"), 0


# -- printing --------------------------------------------------------------------------------
def _gpu_text(row: dict) -> str:
    vis = row["visible"]
    if not vis["devices"]:
        return f"0 ({vis.get('reason', 'none')})"
    names = sorted({d["name"] for d in vis["devices"]})
    return f"{vis['count']} ({', '.join(names)})"


def _device_text(row: dict) -> str:
    dev = row["device"]
    if dev["backend"] != "cuda":
        return "- (cpu)"
    if "error" in dev:
        return "none: " + dev["error"]
    return f"{dev['device_id']}: {dev['name']} ({dev['pci_bus_id']})"


def _size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} B"


def _check_text(entry: dict) -> tuple[str, str, str]:
    if not entry["available"]:
        return "not available", entry["reason"], "-"
    results = entry["ranks"]
    bad = [r for r, res in enumerate(results) if not res.get("ok")]
    worst = max(results, key=lambda res: res.get("max_relative_error", float("inf")))
    checked = sum(res.get("values_checked", 0) for res in results)
    crossed = sum(res.get("shared_values", 0) for res in results)
    status = "ok" if not bad else f"FAIL on {_ranks_text(bad)}"
    detail = (f"{checked} values, {crossed} from other ranks, max rel. error "
              f"{worst.get('max_relative_error', float('nan')):.1e} ({results[0].get('data', '?')})")
    band = results[0].get("bandwidth")
    if band:
        speed = band["gbytes_per_s_per_pair"]
        rate = f"{_size_text(band['bytes_per_pair'])}/pair: {band['seconds'] * 1e6:.0f} us"
        band_text = rate + (f", {speed:.3g} GB/s per pair" if speed else "")
    else:
        band_text = results[0].get("bandwidth_skipped") or ("- (1 rank)" if len(results) == 1 else "-")
    return status, detail, band_text


def format_report(report: dict) -> str:
    found = report
    rows = found["rows"]
    lines = [f"lobatto doctor: {len(rows)} rank{'s' if len(rows) != 1 else ''}, backend {found['backend']} "
             f"(requested {found['backend_requested']}), {report['meta']['date']}, "
             f"commit {report['meta']['commit'] or '?'}", ""]
    hosts: dict[str, int] = {}
    for row in rows:
        hosts[row["hostname"]] = hosts.get(row["hostname"], 0) + 1
    lines += rows_table(["rank", "host", "node rank", "CUDA_VISIBLE_DEVICES", "GPUs seen", "GPU used"],
                    [[f"{row['rank']}/{row['size']}", row["hostname"],
                      f"{row['local_rank']}/{hosts[row['hostname']]}",
                      row["visible"]["cuda_visible_devices"] if row["visible"]["cuda_visible_devices"] is not None
                      else "(unset)", _gpu_text(row), _device_text(row)] for row in rows])
    first = rows[0]
    mpi = first["mpi"]
    lines += ["", f"MPI: {mpi['library']}"]
    if "vendor" in mpi:
        aware = "yes" if mpi["cuda_aware"] else "no"
        lines.append(f"     vendor {mpi['vendor']}, MPI {mpi['standard']}, CUDA-aware: {aware} "
                     f"({mpi['cuda_aware_how']})")
    lines.append(f"NCCL: {first['nccl']}")
    lines += [""] + rows_table(["transport", "status", "correctness", "bandwidth"],
                           [[name, *_check_text(entry)] for name, entry in found["transports"].items()])
    cache_rows, seen = [], {}
    for row in rows:
        for cache in row["caches"]:
            key = (row["hostname"], cache["name"], cache["path"])
            seen.setdefault(key, (cache, []))[1].append(row["rank"])
    for (host, name, path), (cache, ranks) in seen.items():
        state = "writable" if cache["writable"] else f"NOT writable ({cache['unwritable']})"
        if not cache["used"]:
            state += ", not used" if "note" not in cache else f", not used: {cache['note']}"
        cache_rows.append([name, path, _ranks_text(ranks), state, str(cache["entries"]), _size_text(cache["bytes"])])
    lines += [""] + rows_table(["kernel cache", "path", "ranks", "state", "entries", "size"], cache_rows)
    pk = first["packages"]
    lines += ["", "packages (rank 0): " + ", ".join(f"{k} {v}" for k, v in pk.items() if k != "mpi_library")]
    for note in report["notes"]:
        lines.append(f"note: {note}")
    lines += ["", report["verdict"]]
    return "\n".join(lines)


# -- entry point -----------------------------------------------------------------------------
def command(args, argv: list[str], print_help) -> int:
    """``lobatto doctor`` (options of bench/cli.py, ``argv`` as given; ``print_help`` prints the
    parser's help, on rank 0 for -h): collect on every rank, judge and report on rank 0; every
    rank returns the same code."""
    from lobatto.machine.parallel import collective_errors, rank_and_size, world_comm

    comm = world_comm()
    rank, size = rank_and_size(comm)
    if args.help:
        if rank == 0:
            print_help()
        return 0
    with collective_errors(comm):
        if rank == 0 and args.json is not None:
            from lobatto.io.output_dir import check_output_path

            check_output_path(args.json.expanduser(), "doctor: --json ", create_parents=False)
    found = collect(args, comm)
    report = None
    code = 0
    if rank == 0:
        failures, notes = judge(found)
        line, code = verdict(found, failures)
        meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "commit": git_commit(),
                "hostname": socket.gethostname(), "command": " ".join(["lobatto", "doctor", *argv]),
                "ranks": size, "options": {"backend": args.backend, "bytes": args.bytes,
                                           "repeats": args.repeats, "timeout": args.timeout}}
        report = {"meta": meta, **found, "notes": notes, "failures": failures, "verdict": line, "exit_code": code}
    with collective_errors(comm):
        if rank == 0 and args.json is not None:
            write_json(args.json, report, indent=1, default=str, end="\n", say=None)
    if rank == 0:
        print(format_report(report), flush=True)
    return code if comm is None else comm.bcast(code, root=0)


if __name__ == "__main__":  # the command line is bench/cli.py's (this module cannot import it: a cycle)
    raise SystemExit("run it as `lobatto doctor` or `python -m lobatto doctor` (its options: lobatto doctor --help)")
