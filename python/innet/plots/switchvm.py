"""Plots of the SwitchVM microbenchmarks (the paper's Figs. 8 and 10)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from innet.plots.style import register, save


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
    return [save(fig, out / "overhead.png")]


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
    return [save(fig, out / "latency.png")]


@register("switchvm.lb")
def plot_lb(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 6: median and p99 latency vs load per scheme; the in-place replacement timeline."""
    paths = []
    df = tables["points"]
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 3.8), sharex=True)
    for scheme, g in df.groupby("scheme", sort=False):
        g = g.sort_values("rate_rps")
        axes[0].plot(g["rate_rps"] / 1e3, g["p50_us"], marker="o", markersize=3, label=scheme)
        axes[1].plot(g["rate_rps"] / 1e3, g["p99_us"], marker="o", markersize=3, label=scheme)
    axes[0].set_ylabel("median latency (µs)")
    axes[1].set_ylabel("p99 latency (µs)")
    for ax in axes:
        ax.set_xlabel("load (K requests/s)")
        ax.set_yscale("log")
    axes[1].legend(fontsize=8)
    paths.append(save(fig, out / "lb_latency.png"))
    if "timeline" in tables:
        tl = tables["timeline"]
        fig, ax = plt.subplots(figsize=(7.0, 3.6))
        ax.plot(tl["t_s"], tl["p50_us"], label="median")
        ax.plot(tl["t_s"], tl["p99_us"], linestyle="--", label="p99")
        for ph in summary.get("replacement", {}).get("phases", [])[1:]:
            ax.axvline(ph["from_s"], color="grey", linewidth=0.8)
            ax.text(ph["from_s"], ax.get_ylim()[1], " " + ph["policy"], va="top", fontsize=8)
        ax.set_yscale("log")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("latency (µs)")
        ax.legend(fontsize=8)
        paths.append(save(fig, out / "lb_replacement.png"))
    return paths


@register("switchvm.kvs")
def plot_kvs(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 7: GET latency timeline under hot-in, with the hit ratio per bin."""
    tl = tables["timeline"]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.plot(tl["t_s"], tl["p50_us"], label="median")
    ax.plot(tl["t_s"], tl["p99_us"], linestyle="--", label="p99")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (µs)")
    ax2 = ax.twinx()
    ratio = tl["hits"] / tl["requests"].where(tl["requests"] > 0)
    ax2.plot(tl["t_s"], ratio, color="grey", linewidth=0.8, label="hit ratio")
    ax2.set_ylabel("hit ratio")
    ax2.set_ylim(0, 1.05)
    ax.legend(fontsize=8, loc="upper left")
    return [save(fig, out / "kvs_timeline.png")]


@register("switchvm.isolation")
def plot_isolation(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 9a: per-flow goodput as the flows start one after another."""
    tl = tables["timeline"]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for c in tl.columns:
        if c.endswith("_gbps"):
            ax.plot(tl["t_s"] * 1e6, tl[c], label=c.removesuffix("_gbps"))
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("goodput (Gb/s)")
    ax.legend(fontsize=8)
    return [save(fig, out / "isolation.png")]


@register("switchvm.tenants")
def plot_tenants(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 9b: aggregate goodput (tenants and base) and the number of authorized tenants."""
    tl = tables["timeline"]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.stackplot(tl["t_s"], tl["base_gbps"], tl["tenant_gbps"], labels=["base", "tenants"], alpha=0.7)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("goodput (Gb/s)")
    ax2 = ax.twinx()
    ax2.plot(tl["t_s"], tl["tenants"], color="black", linewidth=0.8, label="authorized tenants")
    ax2.set_ylabel("tenants")
    ax.legend(fontsize=8, loc="upper left")
    return [save(fig, out / "tenants.png")]
