"""Figure of a throughput sweep (like the seed paper's Figure 7): matplotlib, made offline."""

from __future__ import annotations

from pathlib import Path


def plot_sweep(sweep: dict, png: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise SystemExit(f"the plot needs matplotlib (pip install matplotlib): {exc}") from None

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    markers = "osd^v<>"
    for i, (order, data) in enumerate(sorted(sweep["orders"].items(), key=lambda kv: int(kv[0]))):
        rows = data["rows"]
        n = [r["points"] for r in rows]
        thr = [r["point_stage_updates_per_s"] for r in rows]
        line = ax.plot(n, thr, marker=markers[i % len(markers)], label=f"N = {order}")[0]
        fit = data["fit"]
        nh = fit.get("n_half_measured") or fit.get("n_half_fit")
        if nh:
            ax.axvline(nh, color=line.get_color(), linestyle=":", linewidth=1)
            ax.annotate(f"$n_{{1/2}}$ = {nh:.2g}", (nh, fit["peak_measured"] / 2), color=line.get_color(),
                        textcoords="offset points", xytext=(4, -12 - 12 * i), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("problem size n (grid points)")
    ax.set_ylabel("throughput (point-stage updates / s)")
    be = sweep.get("backend", {})
    ax.set_title(f"lobatto SEDG Maxwell, {be.get('device', be.get('name', ''))}, {sweep.get('precision', '')}"
                 f"{', curved' if sweep.get('curved') else ''}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150)
    plt.close(fig)
