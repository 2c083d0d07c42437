"""PNG figures of a ``lobatto sysbench`` result: host<->device bandwidth, MPI ping-pong,
GPU<->GPU transports with the pipelined chunk study, CPU STREAM by threads. Optional:
without matplotlib ``plot_all`` returns the reason instead of figures."""

from __future__ import annotations

from pathlib import Path


def plot_all(doc: dict, directory: Path, stem: str) -> list[Path] | str:
    """The PNGs written (one per section that has rows), or why none could be."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"matplotlib is not installed ({exc}; pip install matplotlib)"
    from lobatto.io.atomic import atomic_path

    results = doc.get("results", {})
    # host names repeat across machines ("vm"): the device or CPU says which machine this was
    cpu = doc.get("cpu") or {}
    machine = (doc.get("device") or {}).get("name") or (f"{cpu['model']}, {cpu.get('cores')} cores"
                                                       if cpu.get("model") else "")
    title = f"{doc.get('hostname', '')}{f' ({machine})' if machine else ''}, {doc.get('date', '')[:10]}"
    written = []
    for name, draw in (("host_device", _host_device), ("mpi_pingpong", _pingpong), ("gpu_gpu", _gpu_gpu),
                       ("cpu_stream", _cpu_stream)):
        section = results.get(name) or {}
        if not section.get("rows"):
            continue
        fig = draw(plt, section, doc)
        fig.suptitle(f"lobatto sysbench {name}: {title}", fontsize=9)
        fig.tight_layout()
        png = Path(directory) / f"{stem}_{name}.png"
        png.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(png) as tmp:
            fig.savefig(tmp, dpi=130, format="png")
        plt.close(fig)
        written.append(png)
    return written


def _host_device(plt, section, doc):
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for direction in ("h2d", "d2h"):
        for memory, style in (("pageable", "--"), ("pinned", "-")):
            rows = [r for r in section["rows"] if r["direction"] == direction and r["memory"] == memory]
            if rows:
                ax.plot([r["bytes"] for r in rows], [r["bytes_per_second"] / 1e9 for r in rows], style, marker="o",
                        markersize=3, label=f"{direction} {memory}")
    ax.set(xscale="log", xlabel="bytes per copy", ylabel="GB/s (bytes / time of one copy)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return fig


def _pingpong(plt, section, doc):
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(10, 4.2))
    rows = section["rows"]
    lat.plot([max(r["bytes"], 1) for r in rows], [r["seconds_one_way"] * 1e6 for r in rows], marker="o",
             markersize=3)
    lat.set(xscale="log", yscale="log", xlabel="message bytes (0 drawn at 1)", ylabel="one-way time [us]")
    sized = [r for r in rows if r["bytes"] > 0]
    bw.plot([r["bytes"] for r in sized], [r["bytes_per_second"] / 1e9 for r in sized], marker="o", markersize=3)
    bw.set(xscale="log", xlabel="message bytes", ylabel="GB/s (bytes / one-way time)")
    for ax in (lat, bw):
        ax.grid(True, which="both", alpha=0.3)
    return fig


def _gpu_gpu(plt, section, doc):
    fig, (sizes, chunks) = plt.subplots(1, 2, figsize=(10, 4.2))
    whole = [r for r in section["rows"] if r["chunk_bytes"] is None]
    for transport in dict.fromkeys(r["transport"] for r in whole):
        rows = [r for r in whole if r["transport"] == transport]
        sizes.plot([r["bytes"] for r in rows], [r["bytes_per_second"] / 1e9 for r in rows], marker="o",
                   markersize=3, label=transport)
    sizes.set(xscale="log", xlabel="message bytes", ylabel="GB/s (one way)")
    sizes.legend()
    piped = [r for r in section["rows"] if r["chunk_bytes"]]
    if piped:
        chunks.plot([r["chunk_bytes"] for r in piped], [r["bytes_per_second"] / 1e9 for r in piped], marker="o",
                    label="host staged, pipelined")
        top = [r for r in whole if r["transport"] == "host_staged" and r["bytes"] == piped[0]["bytes"]]
        if top:
            chunks.axhline(top[0]["bytes_per_second"] / 1e9, linestyle=":", color="k", label="host staged, whole")
        chunks.set(xscale="log", xlabel=f"chunk bytes ({piped[0]['bytes']} byte message)", ylabel="GB/s")
        chunks.legend()
    for ax in (sizes, chunks):
        ax.grid(True, which="both", alpha=0.3)
    return fig


def _cpu_stream(plt, section, doc):
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    rows = section["rows"]
    for kernel in ("copy", "scale", "add", "triad"):
        ax.plot([r["threads"] for r in rows], [r[kernel] / 1e9 for r in rows], marker="o", label=kernel)
    ax.set(xscale="log", xlabel="OpenMP threads", ylabel="GB/s")
    ax.set_xticks([r["threads"] for r in rows], [str(r["threads"]) for r in rows])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return fig
