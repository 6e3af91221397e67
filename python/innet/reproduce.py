"""The manifest of the five papers' evaluations (python/innet/papers/*.toml) and how ``innet
reproduce PAPER|all --tier smoke|standard|full`` turns it into sweep points.

Every figure and table of a paper's evaluation has an entry. An entry either names the experiment
that regenerates it, with its parameters per tier, or says in ``unavailable`` why it cannot
("hardware-only: ...", "no experiment yet: ...", "setup: ..." for a table that describes the
setup, "summary: ..." for a table that only summarises the others). Tiers:

- ``smoke``: the experiment's ``--quick`` form plus ``quick_fixed``/``quick_grid``; seconds; no
  verdicts are drawn from it.
- ``standard``: ``fixed``/``grid`` (the paper's regime) plus ``standard_fixed``/``standard_grid``
  (shorter traces, fewer repetitions) so that all five papers finish in about two hours here.
- ``full``: ``fixed``/``grid`` plus ``full_fixed``/``full_grid``: the paper's sizes.

``cost_s`` gives the measured (or, where marked, estimated) wall seconds of one point per tier on
one core of the 2-core development machine; it sizes the tiers and the time printed before a run.
Results of each tier live in their own directory, so tiers never mix and each resumes alone.

Seeds: the standard tier runs every point of a seeded experiment with seeds 1 and 2 (so the page
can show that both seeds give the same directions and magnitudes); an entry too expensive for two
seeds within the two-hour budget sets ``standard_seeds = 1`` and says why in ``seeds_note``. The
smoke tier runs the experiment's default seed; the full tier one seed (``--seeds N`` overrides
both). Experiments without a ``seed`` parameter (deterministic replays) run once.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from innet import verdict

TIERS = ("smoke", "standard", "full")
DEFAULT_TIER = "standard"
UNAVAILABLE_KINDS = ("hardware-only:", "no experiment yet:", "setup:", "summary:")
_FIGURE_KEYS = {
    "id", "title", "kind", "section", "panels", "experiment", "unavailable", "docs", "fixed", "grid",
    "quick_fixed", "quick_grid", "standard_fixed", "standard_grid", "full_fixed", "full_grid", "cost_s",
    "x", "log_x", "series", "plot", "paper", "resources", "results_of", "exclusive", "smoke",
    "standard_seeds", "seeds_note",
}
STANDARD_SEEDS = 2
_PAPER_KEYS = {"paper", "title", "venue", "docs", "figure"}


class ManifestError(ValueError):
    """A malformed manifest entry (names the file and the entry)."""


@dataclass
class Figure:
    paper: str
    id: str
    title: str
    kind: str = "figure"
    section: str = ""
    panels: list[str] = field(default_factory=list)
    experiment: str | None = None
    unavailable: str | None = None
    docs: str = ""
    fixed: dict[str, str] = field(default_factory=dict)
    grid: dict[str, list[str]] = field(default_factory=dict)
    quick_fixed: dict[str, str] = field(default_factory=dict)
    quick_grid: dict[str, list[str]] = field(default_factory=dict)
    standard_fixed: dict[str, str] = field(default_factory=dict)
    standard_grid: dict[str, list[str]] = field(default_factory=dict)
    full_fixed: dict[str, str] = field(default_factory=dict)
    full_grid: dict[str, list[str]] = field(default_factory=dict)
    cost_s: dict[str, float] = field(default_factory=dict)
    x: str | None = None
    log_x: bool = False
    series: list[str] = field(default_factory=list)
    plot: dict[str, Any] = field(default_factory=dict)
    paper_numbers: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[str, Any] = field(default_factory=dict)
    # Drawn and judged from another entry's run (e.g. Figs. 10 and 14 come from one experiment).
    results_of: str | None = None
    # Entries with the same value run one point at a time (real servers in shared namespaces).
    exclusive: str | None = None
    # False: the smoke tier leaves this entry out (each run starts a real server; one sibling
    # entry keeps the path exercised).
    smoke: bool = True
    # Seeds of the standard tier (default STANDARD_SEEDS); fewer needs ``seeds_note`` (why).
    standard_seeds: int = STANDARD_SEEDS
    seeds_note: str = ""

    def seeds(self, tier: str, seeded: bool = True, n: int | None = None) -> list[str | None]:
        """The seeds each point of ``tier`` runs with (None: the experiment's own default).
        ``n`` (``--seeds``) overrides the manifest; an unseeded experiment always runs once."""
        if not seeded:
            return [None]
        if n is None:
            n = self.standard_seeds if tier == "standard" else 0 if tier == "smoke" else 1
        return [str(i) for i in range(1, n + 1)] if n >= 1 else [None]

    @property
    def runnable(self) -> bool:
        return self.experiment is not None or bool(self.resources)

    def out_dir(self, root: Path, tier: str = DEFAULT_TIER) -> Path:
        return Path(root) / tier / self.paper / (self.results_of or self.id)

    def tier_params(self, tier: str) -> tuple[dict[str, str], dict[str, list[str]], bool]:
        """(fixed, grid, quick) of this figure at ``tier``."""
        if tier not in TIERS:
            raise ValueError(f"unknown tier '{tier}'; expected one of {', '.join(TIERS)}")
        fixed = dict(self.fixed)
        if tier == "smoke":
            fixed.update(self.quick_fixed)
            grid = dict(self.quick_grid) if self.quick_grid else {k: v[:1] for k, v in self.grid.items()}
            return fixed, grid, True
        extra_fixed, extra_grid = (self.standard_fixed, self.standard_grid) if tier == "standard" else (self.full_fixed, self.full_grid)
        fixed.update(extra_fixed)
        return fixed, dict(extra_grid or self.grid), False


@dataclass
class Paper:
    name: str
    title: str
    venue: str
    docs: str
    figures: list[Figure]


def _strs(d: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in d.items()}


def _grid(d: dict[str, Any]) -> dict[str, list[str]]:
    return {k: [str(x) for x in v] for k, v in d.items()}


def _figure(name: str, fig: dict[str, Any], where: str) -> Figure:
    unknown = set(fig) - _FIGURE_KEYS
    if unknown:
        raise ManifestError(f"{where}: unknown key(s) {sorted(unknown)}")
    for key in ("id", "title"):
        if key not in fig:
            raise ManifestError(f"{where}: needs '{key}'")
    where = f"{where} ({fig['id']})"
    has_exp, why = "experiment" in fig or "resources" in fig, fig.get("unavailable")
    if has_exp == bool(why):
        raise ManifestError(f"{where}: give either 'experiment' (it regenerates) or 'unavailable' (why it cannot), not {'both' if why else 'neither'}")
    if why and not why.startswith(UNAVAILABLE_KINDS):
        raise ManifestError(f"{where}: 'unavailable' must start with one of {UNAVAILABLE_KINDS}, got {why!r}")
    seeds = fig.get("standard_seeds", STANDARD_SEEDS)
    if not isinstance(seeds, int) or seeds < 1:
        raise ManifestError(f"{where}: standard_seeds must be a positive integer, got {seeds!r}")
    if seeds < STANDARD_SEEDS and len(str(fig.get("seeds_note", ""))) < 20:
        raise ManifestError(f"{where}: standard_seeds = {seeds} (fewer than {STANDARD_SEEDS}) needs seeds_note saying why")
    cost = {k: float(v) for k, v in fig.get("cost_s", {}).items()}
    if "experiment" in fig and "results_of" not in fig and set(cost) != set(TIERS):
        raise ManifestError(f"{where}: cost_s needs seconds per point for each tier {TIERS}, got {sorted(cost)}")
    numbers = list(fig.get("paper", []))
    for i, n in enumerate(numbers):
        try:
            verdict.check_spec(n, f"{where} paper[{i}]")
        except ValueError as e:
            raise ManifestError(str(e)) from None
    return Figure(
        paper=name, id=fig["id"], title=fig["title"], kind=fig.get("kind", "figure"), section=fig.get("section", ""),
        panels=list(fig.get("panels", [])), experiment=fig.get("experiment"), unavailable=why, docs=fig.get("docs", ""),
        fixed=_strs(fig.get("fixed", {})), grid=_grid(fig.get("grid", {})),
        quick_fixed=_strs(fig.get("quick_fixed", {})), quick_grid=_grid(fig.get("quick_grid", {})),
        standard_fixed=_strs(fig.get("standard_fixed", {})), standard_grid=_grid(fig.get("standard_grid", {})),
        full_fixed=_strs(fig.get("full_fixed", {})), full_grid=_grid(fig.get("full_grid", {})),
        cost_s=cost, x=fig.get("x"), log_x=bool(fig.get("log_x", False)), series=list(fig.get("series", [])),
        plot=dict(fig.get("plot", {})), paper_numbers=numbers, resources=dict(fig.get("resources", {})),
        results_of=fig.get("results_of"), exclusive=fig.get("exclusive"), smoke=bool(fig.get("smoke", True)),
        standard_seeds=seeds, seeds_note=str(fig.get("seeds_note", "")),
    )


def load_papers() -> dict[str, Paper]:
    papers = {}
    for f in sorted(resources.files("innet.papers").iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".toml"):
            continue
        where = f"papers/{f.name}"
        try:
            data = tomllib.loads(f.read_text())
        except tomllib.TOMLDecodeError as e:
            raise ManifestError(f"{where}: {e}") from None
        unknown = set(data) - _PAPER_KEYS - {"source"}  # 'source' is the old key, ignored
        if unknown:
            raise ManifestError(f"{where}: unknown top-level key(s) {sorted(unknown)}")
        name = data["paper"]
        figures = [_figure(name, fig, f"{where} figure #{i + 1}") for i, fig in enumerate(data.get("figure", []))]
        ids = [x.id for x in figures]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ManifestError(f"{where}: duplicate figure id(s) {sorted(dup)}")
        for x in figures:
            src = next((y for y in figures if y.id == x.results_of), None)
            if x.results_of and (src is None or src.experiment != x.experiment or src.results_of):
                raise ManifestError(f"{where} ({x.id}): results_of must name another entry of this paper with the same experiment")
        papers[name] = Paper(name, data["title"], data.get("venue", ""), data.get("docs", f"docs/{name}.md"), figures)
    return papers


def available_experiments() -> set[str]:
    from innet import api

    return {e["name"] for e in api.list_experiments()}


def seeded_experiments() -> set[str]:
    """Registered experiments that take a ``seed`` parameter."""
    from innet import api

    return {e["name"] for e in api.list_experiments() if any(p["name"] == "seed" for p in e["params"])}


def figure_points(fig: Figure, tier: str, seeds: list[str | None] | None = None) -> list[sweep.Point]:
    """The figure's points at ``tier``, once per seed (None: the experiment's default seed)."""
    from innet import sweep  # pandas and dask: only when points are made

    assert fig.experiment is not None, f"{fig.paper}/{fig.id} has no experiment"
    points = []
    for seed in seeds or [None]:
        fixed, grid, quick = fig.tier_params(tier)
        if seed is not None:
            fixed["seed"] = seed
        points += sweep.expand(fig.experiment, grid, fixed=fixed, quick=quick)
    return points


def n_points(fig: Figure, tier: str) -> int:
    _, grid, _ = fig.tier_params(tier)
    n = 1
    for v in grid.values():
        n *= len(v)
    return n


def estimate_seconds(fig: Figure, tier: str, seeded: bool = True, seeds: int | None = None) -> float:
    """Expected single-core wall seconds of the figure at ``tier`` (0 when not run), all seeds."""
    if fig.experiment is None or fig.results_of or (tier == "smoke" and not fig.smoke):
        return 0.0
    return fig.cost_s.get(tier, 0.0) * n_points(fig, tier) * len(fig.seeds(tier, seeded, seeds))


def command(fig: Figure, tier: str) -> str:
    """A command that reproduces the figure's points by hand."""
    if fig.experiment is None:
        return f"innet reproduce {fig.paper} --tier {tier}"
    fixed, grid, quick = fig.tier_params(tier)
    parts = [f"innet sweep {fig.experiment}"]
    parts += [f"--grid {k}={(';' if any(',' in x for x in v) else ',').join(v)}" for k, v in grid.items()]
    parts += [f"--set {k}={v}" for k, v in fixed.items()]
    if quick:
        parts.append("--quick")
    return " ".join(parts)
