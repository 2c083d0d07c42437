"""Figure of a scaling study (bench/scaling.py), after NekCEM's Figures 5-8: time per step and
parallel efficiency against ranks, one curve per series (size; with several --overlap settings
one colour per size and one line style per setting), and throughput per rank against points
per rank, one curve per rank count (and setting) with its n_1/2 fit. matplotlib is optional: without it the
figure is skipped with a line saying so (the GPU machine has none; redraw there from the JSON
with ``lobatto bench scaling --plot-from STUDY.json``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.bench.scaling_analysis import STRONG_LIMIT, overlap_of

#: line style of each --overlap setting
STYLES = {"auto": "-", "on": "--", "off": ":"}


def plot_study(study: dict, png: Path) -> str:
    """Write the figure; returns the line to print (where it went, or why it was skipped)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"figure skipped: matplotlib is not installed ({exc})"

    mode = study["mode"]
    fig, (ax_t, ax_e, ax_n) = plt.subplots(1, 3, figsize=(15, 4.4))
    markers = "osd^v<>"
    what = "elements/rank" if mode == "weak" else "elements"
    sizes = list(dict.fromkeys(c.get("size", name) for name, c in study["scaling"].items()))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for name, curve in study["scaling"].items():
        i = sizes.index(curve.get("size", name))
        style = dict(marker=markers[i % 7], color=colours[i % len(colours)],
                     linestyle=STYLES.get(curve.get("overlap", "auto"), "-"))
        p = [r["ranks"] for r in curve["rows"]]
        label = f"{name.replace(' overlap ', ' ' + what + ', overlap ')}" if " overlap " in name else f"{name} {what}"
        ax_t.plot(p, [r["seconds_per_step"] * 1e3 for r in curve["rows"]], label=label, **style)
        ax_e.plot(p, [r["efficiency"] for r in curve["rows"]], label=label, **style)
    ranks = sorted({r["ranks"] for r in study["runs"]})
    if mode == "strong":  # ideal: t0 P0 / P for the first size
        first = next(iter(study["scaling"].values()))
        t0, p0 = first["rows"][0]["seconds_per_step"] * 1e3, first["reference_ranks"]
        ax_t.plot(ranks, [t0 * p0 / p for p in ranks], "k:", linewidth=1, label="ideal")
    ax_e.axhline(1.0, color="k", linestyle=":", linewidth=1)
    # where a strong-scaling curve crosses it is the strong-scale limit (the table gives its n/P)
    ax_e.axhline(STRONG_LIMIT, color="0.5", linestyle="--", linewidth=1, label=f"{STRONG_LIMIT:g}")
    for ax in (ax_t, ax_e):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks, [str(p) for p in ranks])
        ax.set_xlabel("ranks")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time per step [ms]")
    ax_e.set_ylabel(f"{mode} scaling efficiency")
    ax_e.set_ylim(0, max(1.1, max((r["efficiency"] or 0) for c in study["scaling"].values() for r in c["rows"])))

    for key, fit in study["fits"].items():
        p, overlap = fit.get("ranks", int(key.split()[0])), fit.get("overlap", "auto")
        rows = sorted((r for r in study["runs"] if r["ranks"] == p and overlap_of(r) == overlap),
                      key=lambda r: r["points_per_rank"])
        if not rows:
            continue
        n = [r["points_per_rank"] for r in rows]
        i = ranks.index(p)
        line = ax_n.plot(n, [r["point_steps_per_second_per_rank"] for r in rows], marker=markers[i % 7],
                         linestyle="none", color=colours[i % len(colours)],
                         label=f"P = {p}" + (key[len(str(p)):] if key != str(p) else ""))[0]
        if "t0" in fit:
            grid = np.geomspace(min(n), max(n), 50)
            ax_n.plot(grid, grid / (fit["t0"] + grid / fit["peak_fit"]), color=line.get_color(), linewidth=1,
                      linestyle=STYLES.get(overlap, "-"))
            if fit["n_half_fit"] > 0:
                ax_n.axvline(fit["n_half_fit"], color=line.get_color(), linestyle=":", linewidth=1)
    ax_n.set_xscale("log")
    ax_n.set_xlabel("points per rank n/P")
    ax_n.set_ylabel("point-steps / s per rank")
    ax_n.grid(True, which="both", alpha=0.3)
    ax_n.legend(fontsize=8, title="fit t = t0 + n/R; dotted: n1/2", title_fontsize=7)
    fig.suptitle(f"lobatto Maxwell N={study['order']}, {study['backend']} ({study.get('device', '')}), "
                 f"{study['precision']}, {study['steps']} steps, {study.get('date', '')}", fontsize=9)
    fig.tight_layout()
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return f"figure written to {png}"
