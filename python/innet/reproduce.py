"""The figure sets of the five papers (python/innet/papers/*.toml) run through the sweep
machinery: ``innet reproduce PAPER|all``. Each figure names its experiment, the fixed
parameters, the grid (full and ``--quick``), the series to plot, and the paper's numbers with
their source. A figure whose experiment this build does not have is reported as such."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from innet import api, sweep


@dataclass
class Figure:
    paper: str
    id: str
    title: str
    experiment: str
    fixed: dict[str, str]
    grid: dict[str, list[str]]
    quick_fixed: dict[str, str]
    quick_grid: dict[str, list[str]]
    x: str | None
    log_x: bool
    series: list[str]
    paper_numbers: list[dict[str, Any]]

    def out_dir(self, root: Path) -> Path:
        return root / self.paper / self.id


@dataclass
class Paper:
    name: str
    title: str
    source: str
    figures: list[Figure]


def _strs(d: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in d.items()}


def load_papers() -> dict[str, Paper]:
    papers = {}
    for f in sorted(resources.files("innet.papers").iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".toml"):
            continue
        data = tomllib.loads(f.read_text())
        name = data["paper"]
        figures = [
            Figure(
                paper=name,
                id=fig["id"],
                title=fig["title"],
                experiment=fig["experiment"],
                fixed=_strs(fig.get("fixed", {})),
                grid={k: [str(x) for x in v] for k, v in fig.get("grid", {}).items()},
                quick_fixed=_strs(fig.get("quick_fixed", {})),
                quick_grid={k: [str(x) for x in v] for k, v in fig.get("quick_grid", {}).items()},
                x=fig.get("x"),
                log_x=bool(fig.get("log_x", False)),
                series=list(fig.get("series", [])),
                paper_numbers=list(fig.get("paper", [])),
            )
            for fig in data.get("figure", [])
        ]
        papers[name] = Paper(name, data["title"], data.get("source", ""), figures)
    return papers


def available_experiments() -> set[str]:
    return {e["name"] for e in api.list_experiments()}


def figure_points(fig: Figure, quick: bool) -> list[sweep.Point]:
    fixed = dict(fig.fixed)
    grid = dict(fig.grid)
    if quick:
        fixed.update(fig.quick_fixed)
        grid = dict(fig.quick_grid) if fig.quick_grid else {k: v[:1] for k, v in fig.grid.items()}
    return sweep.expand(fig.experiment, grid, fixed=fixed, quick=quick)


def command(fig: Figure, quick: bool) -> str:
    """A command that reproduces one point set of the figure by hand."""
    parts = [f"innet sweep {fig.experiment}"]
    grid = (fig.quick_grid if quick else fig.grid) or {}
    fixed = {**fig.fixed, **(fig.quick_fixed if quick else {})}
    parts += [f"--grid {k}={','.join(v)}" for k, v in grid.items()]
    parts += [f"--set {k}={v}" for k, v in fixed.items()]
    if quick:
        parts.append("--quick")
    return " ".join(parts)
