"""Plots for run results: the plot registered for the experiment (innet.plots.style's registry,
filled by the system modules innet.plots.<system> and the basic plots here), or a generic
fallback so every run gets at least one figure. Plots draw what they are given: none reads the
reproduction manifest (python/tests/test_architecture.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

# System plot modules register themselves on import.
from innet.plots import appswitch, gigaflow, orbitcache, switchv2p, switchvm  # noqa: F401
from innet.plots.style import PAPER_PLOTS, REGISTRY, register, save, style

# Drawing cannot change a result (innet.provenance.presentation_paths).
PRESENTATION = True


def _cdf(ax, values: np.ndarray, label: str) -> None:
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return
    ax.plot(v, np.arange(1, v.size + 1) / v.size, label=label)


@register("basic.fattree")
def plot_basic_fattree(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    flows = tables["flows"]
    done = flows[flows["completed"]]
    paths = []
    fig, ax = plt.subplots()
    _cdf(ax, done["fct_us"].to_numpy(), "flow completion time")
    _cdf(ax, done["first_packet_latency_us"].to_numpy(), "first-packet latency")
    ax.set_xscale("log")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("CDF over flows")
    ax.set_title(f"basic.fattree: {summary.get('trace', '')}, load {summary.get('offered_load', '')}")
    ax.legend()
    paths.append(save(fig, out / "fct_cdf.png"))
    fig, ax = plt.subplots()
    ax.scatter(done["size_bytes"], done["fct_us"], s=3, alpha=0.4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("FCT (µs)")
    ax.set_title("FCT by flow size")
    paths.append(save(fig, out / "fct_by_size.png"))
    return paths


def generic(summary: dict, tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """CDFs of every microsecond column; a bar chart of the summary's numbers otherwise."""
    paths = []
    for name, df in tables.items():
        cols = [c for c in df.columns if c.endswith("_us") and pd.api.types.is_numeric_dtype(df[c])]
        if not cols:
            continue
        fig, ax = plt.subplots()
        for c in cols:
            _cdf(ax, df[c].to_numpy(dtype=float), c)
        ax.set_xlabel("µs")
        ax.set_ylabel("CDF")
        ax.set_title(name)
        ax.legend()
        paths.append(save(fig, out / f"{name}_cdf.png"))
    if not paths:
        nums = {k: v for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        fig, ax = plt.subplots()
        ax.barh(list(nums), list(nums.values()))
        ax.set_xscale("symlog")
        ax.set_title("summary")
        paths.append(save(fig, out / "summary.png"))
    return paths


def wants_paper(experiment: str) -> bool:
    """Whether the experiment's plot draws the paper's numbers (pass them to ``plot``)."""
    return experiment in PAPER_PLOTS


def plot(experiment: str, summary: dict, tables: dict[str, pd.DataFrame], out: Path,
         paper_numbers: list[dict] | None = None) -> list[Path]:
    """The experiment's plots; ``paper_numbers`` (its paper's manifest numbers) for a plot that
    draws them beside ours (``wants_paper``), which draws ours alone without them."""
    style()
    fn = REGISTRY.get(experiment, generic)
    if experiment in PAPER_PLOTS:
        return fn(summary, tables, Path(out), paper_numbers or [])
    return fn(summary, tables, Path(out))
