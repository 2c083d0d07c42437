"""The text table ``lobatto sysbench`` prints last: a few numbers per section."""

from __future__ import annotations


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _gbs(x: float) -> str:
    return f"{x / 1e9:.2f} GB/s"


def _us(x: float) -> str:
    return f"{x * 1e6:.2f} us"


def _lines(name: str, s: dict) -> list[tuple[str, str]]:
    """(quantity, value) pairs of one section."""
    if "skipped" in s:
        return [("skipped", s["skipped"])]
    if name == "gpu_stream":
        return [(f"{k} ({_size(s['array_bytes'])} arrays)", _gbs(s[k]["bytes_per_second"]))
                for k in ("copy", "scale", "add", "triad")]
    if name == "gemm":
        return [(f"{d} n = {s[d]['n']}", f"{s[d]['flops_per_second'] / 1e12:.2f} TFLOP/s")
                for d in ("float64", "float32") if d in s]
    out = []
    rows = s.get("rows", [])
    if name == "host_device":
        for direction in ("h2d", "d2h"):
            for memory in ("pageable", "pinned"):
                sel = [r for r in rows if r["direction"] == direction and r["memory"] == memory]
                if sel:
                    out.append((f"{direction} {memory} {_size(sel[-1]['bytes'])}", _gbs(sel[-1]["bytes_per_second"])))
                    out.append((f"{direction} {memory} {_size(sel[0]['bytes'])}", _us(sel[0]["seconds"])))
    elif name == "gpu_gpu":
        for transport in dict.fromkeys(r["transport"] for r in rows):
            sel = [r for r in rows if r["transport"] == transport and r["chunk_bytes"] is None]
            out.append((f"{transport} {_size(sel[0]['bytes'])}", _us(sel[0]["seconds"])))
            out.append((f"{transport} {_size(sel[-1]['bytes'])}", _gbs(sel[-1]["bytes_per_second"])))
        piped = [r for r in rows if r["chunk_bytes"]]
        if piped:
            best = max(piped, key=lambda r: r["bytes_per_second"])
            out.append((f"host_staged {_size(best['bytes'])}, best chunk {_size(best['chunk_bytes'])}",
                        _gbs(best["bytes_per_second"])))
        for transport, why in s.get("skipped_transports", {}).items():
            out.append((f"{transport} skipped", why))
    elif name == "mpi_pingpong":
        for r in rows:
            if r["bytes"] in (0, 8):
                out.append((f"one-way {_size(r['bytes'])}", _us(r["seconds_one_way"])))
        out.append((f"one-way {_size(rows[-1]['bytes'])}", _gbs(rows[-1]["bytes_per_second"])))
    elif name == "mpi_allreduce":
        out += [(f"{_size(r['bytes'])} over {s['ranks']} ranks", _us(r["seconds"])) for r in (rows[0], rows[-1])]
    elif name == "cpu_stream":
        for r in rows:
            rates = " / ".join(f"{r[k] / 1e9:.1f}" for k in ("copy", "scale", "add", "triad"))
            out.append((f"{r['threads']:>3d} threads copy/scale/add/triad", f"{rates} GB/s"))
        if s.get("note"):
            out.append(("note", s["note"]))
    return out


def format_table(doc: dict) -> str:
    dev = doc.get("device") or {}
    head = (f"lobatto sysbench  {doc.get('hostname')}  {doc.get('date')}  commit {doc.get('commit') or '-'}  "
            f"ranks {doc.get('ranks')}  device {dev.get('name', '-')}")
    lines = [head, "", f"{'section':14s} {'quantity':42s} value", f"{'-' * 14} {'-' * 42} {'-' * 24}"]
    for name, section in doc["results"].items():
        for i, (quantity, value) in enumerate(_lines(name, section)):
            lines.append(f"{name if i == 0 else '':14s} {quantity:42s} {value}")
    return "\n".join(lines)
