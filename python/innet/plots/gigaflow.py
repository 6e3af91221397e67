"""Plots of the Gigaflow experiments: Figs. 8-12 (e2e), 14-15 (tables), 16 (partitioning),
17 (search), 18 (dynamic), 13 (cpu), 19 (threads), 4 (tuples) and Table 2 (coverage)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from innet.plots.style import register, save


def _bars(df: pd.DataFrame, metric: str, ylabel: str, out: Path, name: str, schemes: list[str]) -> Path:
    locs = list(dict.fromkeys(df["locality"]))
    fig, axes = plt.subplots(1, len(locs), figsize=(5.5 * len(locs), 3.6), squeeze=False)
    for ax, loc in zip(axes[0], locs):
        g = df[df["locality"] == loc]
        pipes = list(dict.fromkeys(g["pipeline"]))
        x = np.arange(len(pipes))
        w = 0.8 / max(1, len(schemes))
        for i, s in enumerate(schemes):
            vals = [g[(g["pipeline"] == p) & (g["scheme"] == s)][metric].sum() for p in pipes]
            ax.bar(x + i * w, vals, w, label=s)
        ax.set_xticks(x + w * (len(schemes) - 1) / 2, pipes)
        ax.set_title(f"{loc} locality")
        ax.set_ylabel(ylabel)
    axes[0][0].legend(fontsize=8)
    return save(fig, out / name)


@register("gigaflow.e2e")
def plot_e2e(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Figs. 8 (hit rate), 9 (misses), 10 (entries), 11 (sub-traversal reoccurrence),
    12 (latency): MF 32K vs GF 4x8K."""
    df = tables["points"]
    if df.empty:
        return []
    s = ["mf", "gf"]
    return [
        _bars(df, "hit_rate", "NIC hit rate", out, "hit_rate.png", s),
        _bars(df, "misses", "misses (upcalls)", out, "misses.png", s),
        _bars(df, "entries", "cache entries", out, "entries.png", s),
        _bars(df, "sub_traversal_reoccurrence", "upcalls per installed entry", out, "reoccurrence.png", ["gf"]),
        _bars(df, "mean_latency_us", "mean latency (us)", out, "latency.png", s),
    ]


@register("gigaflow.tables")
def plot_tables(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Figs. 14-15: misses and entries vs number of LTM tables."""
    df = tables["points"]
    if df.empty:
        return []
    df = df.assign(k=df["scheme"].str.slice(1).astype(int))
    paths = []
    for metric, label in (("misses", "misses"), ("entries", "cache entries")):
        fig, ax = plt.subplots()
        for (pipe, loc), g in df.groupby(["pipeline", "locality"], sort=False):
            g = g.sort_values("k")
            ax.plot(g["k"], g[metric], marker="o", label=f"{pipe} {loc}")
        ax.set_xlabel("LTM tables (K)")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
        paths.append(save(fig, out / f"{metric}_vs_k.png"))
    return paths


@register("gigaflow.partitioning")
def plot_partitioning(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 16: misses and entries of RND, DP and 1-1 against Megaflow."""
    df = tables["points"]
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
    axes[0].bar(df["scheme"], df["misses"])
    axes[0].set_ylabel("misses")
    axes[1].bar(df["scheme"], df["entries"])
    axes[1].set_ylabel("cache entries")
    return [save(fig, out / "partitioning.png")]


def paper_table2(paper_numbers: list[dict]) -> dict[str, dict[str, float]]:
    """Table 2 from the paper's numbers (the manifest's entry table2 states them):
    {pipeline: {"mf_coverage" | "gf_coverage": value}}."""
    out: dict[str, dict[str, float]] = {}
    for n in paper_numbers:
        parts = str(n.get("metric", "")).split(".")  # pipelines.<P>.<locality>.<mf|gf>.rule_space_coverage
        if len(parts) == 5 and parts[0] == "pipelines" and parts[4] == "rule_space_coverage":
            out.setdefault(parts[1], {})[f"{parts[3]}_coverage"] = float(n["value"])
    return out


@register("gigaflow.coverage", paper=True)
def plot_coverage(summary: dict, tables: dict[str, pd.DataFrame], out: Path, paper_numbers: list[dict]) -> list[Path]:
    """Table 2: rule-space coverage of MF 32K and GF 4x8K, ours beside the paper's (log scale)."""
    df = tables["coverage"]
    if df.empty:
        return []
    paper = paper_table2(paper_numbers)
    df = df.assign(**{f"paper_{m}": [paper.get(p, {}).get(m, 0.0) for p in df["pipeline"]]
                      for m in ("mf_coverage", "gf_coverage")})
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    x = np.arange(len(df))
    cols = [("mf_coverage", "MF (ours)"), ("gf_coverage", "GF (ours)"), ("paper_mf_coverage", "MF (paper)"), ("paper_gf_coverage", "GF (paper)")]
    w = 0.8 / len(cols)
    for i, (c, label) in enumerate(cols):
        ax.bar(x + i * w, df[c].fillna(0), w, label=label)
    ax.set_xticks(x + w * (len(cols) - 1) / 2, df["pipeline"])
    ax.set_yscale("log")
    ax.set_ylabel("rule space (Megaflow-equivalents)")
    ax.legend(fontsize=8)
    return [save(fig, out / "coverage.png")]


@register("gigaflow.dynamic")
def plot_dynamic(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 18: hit rate over the run; the second workload arrives at the dashed line."""
    df = tables["series"]
    if df.empty:
        return []
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for scheme, g in df.groupby("scheme", sort=False):
        ax.plot(g["packet"], g["hit_rate"], marker=".", label=scheme.upper())
    at = summary.get("second_workload_at_packet")
    if at is not None:
        ax.axvline(at, color="grey", linestyle="--", label="second workload")
    ax.set_xlabel("packets replayed")
    ax.set_ylabel("NIC hit rate")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    return [save(fig, out / "dynamic_hit_rate.png")]


@register("gigaflow.search")
def plot_search(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 17: lookups per second of tuple-space search and NuevoMatch on the MF and GF caches."""
    df = tables["search"]
    if df.empty:
        return []
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    caches = list(dict.fromkeys(df["cache"]))
    x = np.arange(len(caches))
    for i, c in enumerate(["tss", "nm"]):
        vals = [df[(df["cache"] == k) & (df["classifier"] == c)]["lookups_per_s"].sum() for k in caches]
        ax.bar(x + i * 0.4, vals, 0.4, label=c.upper())
    ax.set_xticks(x + 0.2, [c.upper() for c in caches])
    ax.set_ylabel("cache lookups / s (one core)")
    ax.legend(fontsize=8)
    return [save(fig, out / "search_lookups.png")]


@register("gigaflow.cpu")
def plot_cpu(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 13: slow-path time per miss, stacked: pipeline traversal, partitioning, rule generation."""
    df = tables["cpu"]
    if df.empty:
        return []
    med = df.groupby("pipeline", sort=False)[["traversal_us_per_miss", "partition_us_per_miss", "rulegen_us_per_miss"]].median()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    bottom = np.zeros(len(med))
    for col, label in [("traversal_us_per_miss", "userspace pipeline"), ("partition_us_per_miss", "sub-traversal partitioning"), ("rulegen_us_per_miss", "LTM rule generation")]:
        ax.bar(med.index, med[col], bottom=bottom, label=label)
        bottom += med[col].to_numpy()
    ax.set_ylabel("µs per miss (this machine)")
    ax.legend(fontsize=8)
    return [save(fig, out / "cpu_breakdown.png")]


@register("gigaflow.threads")
def plot_threads(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 19: slow-path throughput (misses/s) and misses per core vs worker threads, MF and GF."""
    df = tables["threads"]
    if df.empty:
        return []
    med = df.groupby(["pipeline", "scheme", "threads"], sort=False)[["throughput_misses_per_s", "max_worker_misses"]].median().reset_index()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for (pipe, scheme), g in med.groupby(["pipeline", "scheme"], sort=False):
        style = "-" if scheme == "gf" else "--"
        axes[0].plot(g["threads"], g["throughput_misses_per_s"], style, marker="o", label=f"{pipe} {scheme.upper()}")
        axes[1].plot(g["threads"], g["max_worker_misses"], style, marker="o", label=f"{pipe} {scheme.upper()}")
    axes[0].set_ylabel(f"slow-path misses / s ({summary.get('cores_on_this_machine', '?')} cores here)")
    axes[1].set_ylabel("misses on the busiest core")
    for ax in axes:
        ax.set_xlabel("vSwitch worker threads")
        ax.set_xticks(sorted(med["threads"].unique()))
    axes[1].legend(fontsize=7)
    return [save(fig, out / "threads.png")]


@register("gigaflow.tuples")
def plot_tuples(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Fig. 4: mean reoccurrence of a header-field tuple vs the number of fields (5 -> 1)."""
    df = tables["tuples"]
    if df.empty:
        return []
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ks = [5, 4, 3, 2, 1]
    sources = list(dict.fromkeys(df["source"]))
    w = 0.8 / len(sources)
    for i, src in enumerate(sources):
        g = df[df["source"] == src].groupby("k")["items_per_tuple"].mean()
        ax.bar(np.arange(len(ks)) + i * w, [g.get(k, 0.0) for k in ks], w, label=src.replace("_", " "))
    ax.set_xticks(np.arange(len(ks)) + w * (len(sources) - 1) / 2, [str(k) for k in ks])
    ax.set_xlabel("header fields in the tuple")
    ax.set_ylabel("items per distinct tuple (mean over subsets)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    return [save(fig, out / "tuples.png")]
