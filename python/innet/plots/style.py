"""What every plot module shares: the per-experiment plot registry, one style, and saving a
figure. System plot modules (innet.plots.<system>) register their functions here; ``innet.plots``
picks one per experiment. A plot that draws the paper's numbers beside ours registers with
``paper=True`` and is given them (the caller reads the manifest: no plot does)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd

PlotFn = Callable[..., list[Path]]  # (summary, tables, out[, paper_numbers]) -> the PNGs written
REGISTRY: dict[str, PlotFn] = {}
# Experiments whose plot also takes the paper's numbers (its system's manifest entries' ``paper``).
PAPER_PLOTS: set[str] = set()


def register(experiment: str, paper: bool = False) -> Callable[[PlotFn], PlotFn]:
    def deco(fn: PlotFn) -> PlotFn:
        REGISTRY[experiment] = fn
        if paper:
            PAPER_PLOTS.add(experiment)
        return fn

    return deco


def style() -> None:
    plt.rcParams.update(
        {
            "figure.figsize": (6.0, 4.0),
            "figure.dpi": 110,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 10,
        }
    )


def legend_below(fig, fontsize: float = 8) -> None:
    """One legend for the whole figure, below its panels, in place of the axes' own legends (a
    legend inside an axes covers bars and lines: Gigaflow's Fig. 8, OrbitCache's Fig. 8); then
    lay the figure out."""
    import math

    legend: dict = {}
    for ax in fig.axes:
        shown = ax.get_legend()
        for h, lab in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lab, h)
        if shown is not None:
            shown.remove()
    if not legend:
        fig.tight_layout()
        return
    longest = max(len(str(lab)) for lab in legend)
    ncol = min(len(legend), max(1, int(fig.get_figwidth() * 14 / (longest + 6))))  # ~14 characters of 7-8 pt per inch
    extra = 0.25 * math.ceil(len(legend) / ncol) + 0.1
    fig.set_figheight(fig.get_figheight() + extra)
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=ncol, fontsize=fontsize, frameon=False)
    fig.tight_layout(rect=(0, extra / fig.get_figheight(), 1, 1))


def save(fig, path: Path) -> Path:
    legend_below(fig)
    fig.savefig(path)
    plt.close(fig)
    return path
