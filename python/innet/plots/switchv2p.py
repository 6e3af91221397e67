"""Plots of the SwitchV2P experiments, shaped like the paper's figures and tables."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from innet.plots.style import register, save


def _by_scheme(df: pd.DataFrame, key: str):
    for scheme, g in df.groupby("scheme", sort=False):
        yield scheme, g.sort_values(key)


@register("switchv2p.alibaba")
@register("switchv2p.cachesize")
def plot_cachesize(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 5: hit rate, FCT and first-packet-latency improvement vs total cache size."""
    df = tables["points"]
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 3.8))
    panels = [("hit_rate", "hit rate"), ("fct_improvement", "FCT improvement (×)"), ("fpl_improvement", "first-packet latency improvement (×)")]
    for ax, (col, label) in zip(axes, panels):
        for scheme, g in _by_scheme(df, "cache_fraction"):
            if scheme == "nocache" and col != "hit_rate":
                continue
            x = g["cache_fraction"].to_numpy() * 100
            y = g[col].to_numpy()
            if len(x) == 1:
                ax.axhline(y[0], linestyle="--", linewidth=1, label=scheme)
            else:
                ax.plot(x, y, marker="o", markersize=3, label=scheme)
        ax.set_xscale("log")
        ax.set_xlabel("cache size (% of address space)")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{summary.get('experiment', '')}: {summary.get('trace', '')} on {summary.get('topology', '')}")
    return [save(fig, out / "cachesize.png")]


@register("switchv2p.migration")
def plot_migration(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Table 4 as bars, normalised by NoCache where the paper normalises."""
    df = tables["table4"]
    cols = [
        ("gateway_packets_fraction", "gateway packets (fraction)"),
        ("avg_packet_latency_vs_nocache", "avg packet latency (× NoCache)"),
        ("last_misdelivered_us", "last misdelivered arrival (µs)"),
        ("misdelivered_vs_nocache", "misdelivered packets (× NoCache)"),
        ("invalidation_packets", "invalidation packets"),
    ]
    fig, axes = plt.subplots(1, len(cols), figsize=(16.0, 3.6))
    for ax, (col, label) in zip(axes, cols):
        ax.barh(df["scheme"], df[col])
        ax.set_title(label, fontsize=9)
        ax.invert_yaxis()
    for ax in axes[1:]:
        ax.set_yticklabels([])
    fig.suptitle("switchv2p.migration (Table 4)")
    return [save(fig, out / "migration.png")]


@register("switchv2p.hits_by_layer")
def plot_hits_by_layer(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Table 5: share of cache hits per layer, all packets vs first packets."""
    share = summary["hit_share"]
    kinds = ["total", "first_packet"]
    layers = ["core", "spine", "tor"]
    fig, ax = plt.subplots()
    left = np.zeros(len(kinds))
    for layer in layers:
        v = np.array([share[k][layer] for k in kinds])
        ax.barh(kinds, v, left=left, label=layer)
        left += v
    ax.set_xlabel("share of cache hits")
    ax.set_title(f"switchv2p.hits_by_layer: {summary.get('trace', '')}")
    ax.legend()
    return [save(fig, out / "hits_by_layer.png")]


@register("switchv2p.pod_bytes")
def plot_pod_bytes(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 7: bytes processed per pod (heatmap); Fig. 8: per switch of the last pod."""
    df = tables["switches"]
    df = df[df["layer"] != "core"]
    per_pod = df.groupby(["scheme", "pod"], sort=False)["bytes"].sum().unstack("pod")
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    im = ax.imshow(per_pod.to_numpy() / 1e9, aspect="auto", cmap="viridis")
    ax.set_yticks(range(len(per_pod.index)), per_pod.index)
    ax.set_xticks(range(len(per_pod.columns)), [str(p + 1) for p in per_pod.columns])
    ax.set_xlabel("pod")
    ax.set_title("bytes processed per pod (GB)")
    fig.colorbar(im, ax=ax)
    paths = [save(fig, out / "pod_bytes.png")]
    last = df["pod"].max()
    pod = df[df["pod"] == last]
    table = pod.pivot_table(index="scheme", columns="switch", values="bytes", sort=False)
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    im = ax.imshow(table.to_numpy() / 1e9, aspect="auto", cmap="magma")
    ax.set_yticks(range(len(table.index)), table.index)
    ax.set_xticks(range(len(table.columns)), table.columns, rotation=45, fontsize=7)
    ax.set_title(f"bytes processed per switch of pod {last + 1} (GB)")
    fig.colorbar(im, ax=ax)
    paths.append(save(fig, out / "gateway_pod_switches.png"))
    return paths


def _sweep(summary: dict, tables: dict[str, pd.DataFrame], out: Path, key: str, name: str, xlabel: str) -> list[Path]:
    df = tables["points"]
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8))
    for ax, (col, label) in zip(axes, [("fct_mean_us", "mean FCT (µs)"), ("first_packet_latency_mean_us", "mean first-packet latency (µs)")]):
        for scheme, g in _by_scheme(df, key):
            ax.plot(g[key], g[col], marker="o", label=scheme)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(name)
    return [save(fig, out / f"{key}.png")]


@register("switchv2p.gateways")
def plot_gateways(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 9: FCT and first-packet latency vs the number of gateways."""
    return _sweep(summary, tables, out, "gateways", "switchv2p.gateways (Fig. 9)", "gateways")


@register("switchv2p.topology")
def plot_topology(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 10: FCT vs the number of pods at 128 servers."""
    return _sweep(summary, tables, out, "pods", "switchv2p.topology (Fig. 10)", "pods")
