"""What every plot module shares: the per-experiment plot registry, one style, and saving a
figure. System plot modules (plots_*.py) register their functions here; ``innet.plots`` picks
one per experiment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd

PlotFn = Callable[[dict, "dict[str, pd.DataFrame]", Path], list[Path]]
REGISTRY: dict[str, PlotFn] = {}


def register(experiment: str) -> Callable[[PlotFn], PlotFn]:
    def deco(fn: PlotFn) -> PlotFn:
        REGISTRY[experiment] = fn
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


def save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
