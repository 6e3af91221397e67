"""Plots of the application switch's real-packet experiments: Figs. 13-14 (one query's packets
over time), Fig. 17 (connections and clients), Fig. 19 (with vs without lexical analysis) and
Fig. 22 (two servers, the coordinator-cache estimate), from summary.json."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from innet.plots.style import register, save


@register("appswitch.connections")
def plot_connections(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 17: mean turnaround, normal vs with cache, per connections and clients; hit ratio."""
    pts = summary["points"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11.0, 3.8))
    for clients in sorted({p["clients"] for p in pts}):
        g = sorted((p for p in pts if p["clients"] == clients), key=lambda p: p["conns"])
        x = [p["conns"] for p in g]
        ax.plot(x, [p["turnaround_mean_us"]["normal"] for p in g], marker="o", markersize=3, linestyle="--",
                label=f"normal, {clients} client(s)")
        ax.plot(x, [p["turnaround_mean_us"]["all"] for p in g], marker="o", markersize=3,
                label=f"with cache, {clients} client(s)")
        ax2.plot(x, [p["hit_ratio"] for p in g], marker="o", markersize=3, label=f"{clients} client(s)")
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_xlabel("connections per client")
        a.legend(fontsize=8)
    ax.set_ylabel("mean turnaround (µs)")
    ax2.set_ylabel("hit ratio")
    ax2.set_ylim(0, 1)
    return [save(fig, out / "connections.png")]


@register("appswitch.lexical")
def plot_lexical(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 19: mean turnaround normal / with lexical analysis / fixed-offset parser, per key length."""
    pts = summary["points"]
    lens = sorted({p["key_len"] for p in pts})
    modes = ["normal", "fixed", "lexical"]
    labels = {"normal": "normal", "fixed": "without lexical analysis", "lexical": "with lexical analysis"}
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    w = 0.8 / len(modes)
    for j, mode in enumerate(modes):
        ys = [next((p["turnaround_mean_us"]["all"] for p in pts if p["key_len"] == n and p["mode"] == mode), np.nan)
              for n in lens]
        ax.bar(np.arange(len(lens)) + (j - 1) * w, ys, width=w, label=labels[mode])
    ax.set_xticks(np.arange(len(lens)), [f"N = {n}" for n in lens])
    ax.set_xlabel("key (and table-name) length")
    ax.set_ylabel("mean turnaround (µs)")
    ax.legend(fontsize=8)
    return [save(fig, out / "lexical.png")]


@register("appswitch.timeline")
def plot_timeline(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Figs. 13 (miss) and 14 (hit): the example query's marks on the client, switch and server
    lines, time after A on x, each hop an arrow, as the paper draws them."""
    rows = {"c0": 2, "p0": 1, "p1": 1, "s0": 0}
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 3.6))
    for ax, kind, title in zip(axes, ("miss", "hit"), ("Fig. 13: cache miss", "Fig. 14: cache hit")):
        ex = summary.get("example", {}).get(kind)
        ax.set_title(title, fontsize=10)
        ax.set_yticks([0, 1, 2], ["server", "switch", "client"])
        ax.set_ylim(-0.4, 2.5)
        ax.set_xlabel("time after A (µs)")
        if not ex:
            continue
        marks = sorted(ex["marks"].items(), key=lambda kv: kv[1]["t_us"])
        for (_, a), (_, b) in zip(marks, marks[1:]):
            ax.annotate("", xy=(b["t_us"], rows[b["iface"]]), xytext=(a["t_us"], rows[a["iface"]]),
                        arrowprops={"arrowstyle": "->", "lw": 1.2})
        for letter, m in marks:
            ax.plot([m["t_us"]], [rows[m["iface"]]], "o", ms=4, color="C0")
            ax.annotate(letter, (m["t_us"], rows[m["iface"]]), textcoords="offset points", xytext=(3, 6), fontsize=9)
        c = summary["cases"][kind]
        ax.text(0.99, 0.02, f"median of {c['complete']}: switch B→C {c['switch_BC_us']:.0f} µs"
                + (f", server D→E {c['server_DE_us']:.0f} µs" if kind == "miss" else "")
                + f", total {c['total_us']:.0f} µs", transform=ax.transAxes, ha="right", fontsize=7)
    return [save(fig, out / "timeline.png")]


@register("appswitch.cluster")
def plot_cluster(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 22: mean turnaround of the proposed method (measured) and of the existing coordinator
    cache (estimated, §5.7), all / hit / miss / miss on Server1 / miss on Server2."""
    bars = summary.get("fig22_us") or {}
    names = ["", "_hit", "_miss", "_miss_server1", "_miss_server2"]
    labels = ["all", "cache hit", "cache miss", "miss, Server1", "miss, Server2"]
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    x = np.arange(len(names))
    for j, (method, label) in enumerate((("proposed", "proposed"), ("existing", "estimated existing"))):
        ax.bar(x + (j - 0.5) * 0.4, [bars.get(method + n, np.nan) for n in names], width=0.4, label=label)
    ax.set_xticks(x, labels)
    ax.set_ylabel("mean turnaround (µs)")
    ax.set_title(f"hit ratio {summary.get('hit_ratio', float('nan')):.2f}", fontsize=9)
    ax.legend(fontsize=8)
    return [save(fig, out / "cluster.png")]
