"""Plots of the SwitchVM microbenchmarks (the paper's Figs. 8 and 10)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from innet.plots import _save, register


@register("switchvm.overhead")
def plot_overhead(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 10: encapsulation bytes and goodput vs packet size, per invocation mode."""
    df = tables["points"]
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 3.8))
    for mode, g in df.groupby("mode", sort=False):
        g = g.sort_values("frame_bytes")
        axes[0].plot(g["frame_bytes"], g["overhead_bytes"], marker="o", markersize=3, label=mode)
        axes[1].plot(g["frame_bytes"], g["goodput_gbps"], marker="o", markersize=3, label=mode)
    axes[0].set_ylabel("bytes added per packet")
    axes[1].set_ylabel("goodput (Gb/s, original frames)")
    for ax in axes:
        ax.set_xlabel("packet size (B)")
    axes[1].legend(fontsize=8)
    return [_save(fig, out / "overhead.png")]


@register("switchvm.latency")
def plot_latency(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 8: latency vs throughput against plain L3 forwarding."""
    df = tables["points"]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for mode, g in df.groupby("mode", sort=False):
        g = g.sort_values("load")
        ax.plot(g["goodput_gbps"], g["latency_p50_us"], marker="o", markersize=3, label=f"{mode} p50")
        ax.plot(g["goodput_gbps"], g["latency_p99_us"], marker="x", markersize=3, linestyle="--", label=f"{mode} p99")
    ax.set_xlabel("throughput (Gb/s)")
    ax.set_ylabel("latency (µs)")
    ax.legend(fontsize=8)
    return [_save(fig, out / "latency.png")]
