"""Plots of the OrbitCache experiments, shaped like the paper's figures (8–19)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from innet.plots.style import register, save

_SWEEPS = {
    "orbitcache.skew": ("zipf_alpha", "key distribution (Zipf α)"),
    "orbitcache.writes": ("write_ratio", "write ratio"),
    "orbitcache.scalability": ("emulated_servers", "emulated storage servers"),
    "orbitcache.workloads": ("workload", "workload"),
    "orbitcache.cachesize": ("cache_size", "cached items"),
    "orbitcache.keysize": ("key_bytes", "key size (B)"),
    "orbitcache.valuesize": ("value_bytes", "value size (B)"),
    "orbitcache.pegasus": ("zipf_alpha", "Zipf α"),
}


def _bars(ax, df: pd.DataFrame, axis: str, col: str, label: str) -> None:
    values = list(dict.fromkeys(df[axis].astype(str)))
    schemes = list(dict.fromkeys(df["scheme"]))
    width = 0.8 / max(len(schemes), 1)
    for i, s in enumerate(schemes):
        g = df[df["scheme"] == s].set_index(df[df["scheme"] == s][axis].astype(str))
        ys = [g[col].get(v, float("nan")) for v in values]
        ax.bar([j + i * width for j in range(len(values))], ys, width, label=s)
    ax.set_xticks([j + width * (len(schemes) - 1) / 2 for j in range(len(values))], values)
    ax.set_ylabel(label)


def _sweep(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    axis, xlabel = _SWEEPS[summary["experiment"]]
    df = tables["points"].copy()
    df[["throughput_mrps", "server_mrps", "switch_mrps"]] = (
        df[["throughput_rps", "server_throughput_rps", "switch_throughput_rps"]] / 1e6
    )
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 3.8))
    _bars(axes[0], df, axis, "throughput_mrps", "throughput (MRPS, loss ≤ 2%)")
    _bars(axes[1], df, axis, "balancing_efficiency", "balancing efficiency (min/mean server)")
    if summary["experiment"] == "orbitcache.cachesize":
        _bars(axes[2], df, axis, "overflow_ratio", "overflow ratio")
    elif summary["experiment"] == "orbitcache.valuesize" and "effective_cache_size" in df:
        _bars(axes[2], df, axis, "effective_cache_size", "effective cache size (items)")
    else:
        _bars(axes[2], df, axis, "switch_mrps", "switch-served (MRPS)")
    for ax in axes:
        ax.set_xlabel(xlabel)
    axes[0].legend(fontsize=8)
    fig.suptitle(summary["experiment"])
    return [save(fig, out / "throughput.png")]


for _name in _SWEEPS:
    register(_name)(_sweep)


@register("orbitcache.server_load")
def plot_server_load(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 9: load on each emulated server, sorted, at each scheme's throughput."""
    df = tables["per_server"]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for s, g in df.groupby("scheme", sort=False):
        ax.plot(g["server_rank"], g["rps"] / 1e3, marker="o", markersize=3, label=s)
    ax.set_xlabel("emulated server (sorted by load)")
    ax.set_ylabel("load (KRPS)")
    ax.legend(fontsize=8)
    return [save(fig, out / "server_load.png")]


@register("orbitcache.latency")
def plot_latency(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Figs. 10 and 14: latency vs throughput, and the switch/server breakdown."""
    df = tables["points"].copy()
    df["mrps"] = df["throughput_rps"] / 1e6
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 3.8))
    for s, g in df.groupby("scheme", sort=False):
        g = g.sort_values("mrps")
        axes[0].plot(g["mrps"], g["latency_p50_us"], marker="o", markersize=3, label=s)
        axes[1].plot(g["mrps"], g["latency_p99_us"], marker="o", markersize=3, label=s)
        if (g["switch_throughput_rps"] > 0).any():
            axes[2].plot(g["mrps"], g["switch_latency_p99_us"], marker="o", markersize=3, label=f"{s} (switch)")
        axes[2].plot(g["mrps"], g["server_latency_p99_us"], marker="x", markersize=3, linestyle="--", label=f"{s} (server)")
    for ax, t in zip(axes, ["median latency (µs)", "99th-percentile latency (µs)", "p99 breakdown (µs)"]):
        ax.set_xlabel("throughput (MRPS)")
        ax.set_ylabel(t)
        ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=7)
    return [save(fig, out / "latency.png")]


@register("orbitcache.dynamic")
def plot_dynamic(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 19: throughput and overflow ratio over time under hot-in."""
    tl = tables["timeline"]
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 3.8))
    axes[0].plot(tl["time_us"] / 1e3, tl["answers_per_s"] / 1e6)
    axes[0].set_xlabel("time (ms)")
    axes[0].set_ylabel("throughput (MRPS)")
    if "controller_ticks" in tables:
        t = tables["controller_ticks"]
        axes[1].plot(t["time_us"] / 1e3, t["overflow_ratio"], marker="o", markersize=2)
    axes[1].set_xlabel("time (ms)")
    axes[1].set_ylabel("overflow ratio (per controller period)")
    return [save(fig, out / "dynamic.png")]
