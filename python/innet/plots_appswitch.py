"""Plots of the application switch's real-packet experiments: Fig. 17 (connections and clients)
and Fig. 19 (with vs without lexical analysis), from summary.json's `points`."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from innet.plot_style import register, save


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
