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

from innet.reproduce.numbers import check_spec, finite

TIERS = ("smoke", "standard", "full")
DEFAULT_TIER = "standard"
UNAVAILABLE_KINDS = ("hardware-only:", "no experiment yet:", "setup:", "summary:")
_FIGURE_KEYS = {
    "id", "title", "kind", "section", "panels", "experiment", "unavailable", "docs", "fixed", "grid",
    "quick_fixed", "quick_grid", "standard_fixed", "standard_grid", "full_fixed", "full_grid", "cost_s", "part_cost_s",
    "x", "log_x", "series", "plot", "paper", "resources", "results_of", "exclusive", "smoke",
    "standard_seeds", "seeds_note", "configs",
}
STANDARD_SEEDS = 2
_PAPER_KEYS = {"paper", "title", "venue", "docs", "figure", "metric_ranges"}

# Outputs of an experiment that are a function of its parameters alone — constants of ours, not
# measurements: a paper number on one of them must be marked ``configured = true``
# (python/tests/test_reproduce.py runs each formula against the experiment).
OUR_CONSTANTS: dict[str, dict[str, tuple[str, Any]]] = {
    "switchvm.resources": {
        "stages": ("4 + 2 × eus (permissions, prolog, epilog, steering, two per EU)", lambda p: 4 + 2 * p["eus"]),
        "direct_mappings_per_eu": ("direct_per_eu", lambda p: p["direct_per_eu"]),
        "segment_mappings_per_eu": ("segments_per_lane × lanes", lambda p: p["segments_per_lane"] * p["lanes"]),
        "memory_cells_per_eu": ("mem_entries × lanes", lambda p: p["mem_entries"] * p["lanes"]),
        "steering_rules": ("steering_entries", lambda p: p["steering_entries"]),
        "eus": ("eus", lambda p: p["eus"]),
    },
    "switchv2p.migration": {
        "schemes.nocache.gateway_packets_fraction": ("1: NoCache resolves every packet at a gateway", lambda p: 1.0),
        "schemes.ondemand.gateway_packets_fraction": ("0: the run pre-installs the migrating VM's mapping in OnDemand's hosts",
                                                      lambda p: 0.0),
        "schemes.nocache.invalidation_packets": ("0: NoCache sends no invalidations", lambda p: 0.0),
        "schemes.ondemand.invalidation_packets": ("0: OnDemand sends no invalidations", lambda p: 0.0),
        "schemes.switchv2p_noinval.invalidation_packets": ("0: the variant without invalidations", lambda p: 0.0),
    },
}
# Parameter values too common to say anything when a paper's number equals them.
_TRIVIAL_VALUES = (0.0, 1.0)


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
    # Measured seconds of one part of a split point, per tier: {words of a part's label: s}
    # (sweep.part_costs); the parts no key matches share equally what they leave of cost_s.
    part_cost_s: dict[str, dict[str, float]] = field(default_factory=dict)
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
    # Named parameter sets each run as its own series (e.g. the authors' artifact's settings and
    # our realistic default); the first is the one the paper numbers are judged on.
    configs: list[dict[str, str]] = field(default_factory=list)

    @property
    def judged_where(self) -> dict[str, str]:
        """The parameters of the configuration the paper numbers are judged on (none: all points)."""
        return {k: v for k, v in self.configs[0].items() if k != "name"} if self.configs else {}

    def tier_configs(self, tier: str) -> list[dict[str, str]]:
        """The configs ``tier`` runs: all of them, but only the judged one in the smoke tier (it
        draws no verdicts: it only exercises the path)."""
        return self.configs[:1] if tier == "smoke" else self.configs

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


def _figure(name: str, fig: dict[str, Any], where: str, ranges: dict[str, tuple[float, float]] | None = None) -> Figure:
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
    part_cost = _part_costs(fig.get("part_cost_s", {}), where)
    configs = [_strs(c) for c in fig.get("configs", [])]
    if configs and (len(configs) < 2 or any("name" not in c or len(c) < 2 for c in configs)
                    or len({c["name"] for c in configs}) != len(configs)):
        raise ManifestError(f"{where}: configs needs two or more distinct {{ name = ..., parameter = value, ... }} tables "
                            "(the first is judged, e.g. the authors' artifact's settings; the others are drawn beside it)")
    numbers = list(fig.get("paper", []))
    for i, n in enumerate(numbers):
        try:
            check_spec(n, f"{where} paper[{i}]", ranges)
        except ValueError as e:
            raise ManifestError(str(e)) from None
    return Figure(
        paper=name, id=fig["id"], title=fig["title"], kind=fig.get("kind", "figure"), section=fig.get("section", ""),
        panels=list(fig.get("panels", [])), experiment=fig.get("experiment"), unavailable=why, docs=fig.get("docs", ""),
        fixed=_strs(fig.get("fixed", {})), grid=_grid(fig.get("grid", {})),
        quick_fixed=_strs(fig.get("quick_fixed", {})), quick_grid=_grid(fig.get("quick_grid", {})),
        standard_fixed=_strs(fig.get("standard_fixed", {})), standard_grid=_grid(fig.get("standard_grid", {})),
        full_fixed=_strs(fig.get("full_fixed", {})), full_grid=_grid(fig.get("full_grid", {})),
        cost_s=cost, part_cost_s=part_cost, x=fig.get("x"), log_x=bool(fig.get("log_x", False)), series=list(fig.get("series", [])),
        plot=dict(fig.get("plot", {})), paper_numbers=numbers, resources=dict(fig.get("resources", {})),
        results_of=fig.get("results_of"), exclusive=fig.get("exclusive"), smoke=bool(fig.get("smoke", True)),
        standard_seeds=seeds, seeds_note=str(fig.get("seeds_note", "")), configs=configs,
    )


def _part_costs(spec: Any, where: str) -> dict[str, dict[str, float]]:
    """``part_cost_s = { full = { "OLS" = 40, "PSC low" = 12 } }``: per tier, seconds of one part
    by words of its label."""
    def bad(what: str) -> ManifestError:
        return ManifestError(f"{where}: part_cost_s {what}; expected {{ TIER = {{ \"words of a part's label\" = seconds }} }}, "
                             f"TIER one of {TIERS}")

    if not isinstance(spec, dict):
        raise bad(f"is {type(spec).__name__}")
    out = {}
    for tier, costs in spec.items():
        if tier not in TIERS or not isinstance(costs, dict) or not costs:
            raise bad(f"has {tier!r} = {costs!r}")
        for words, s in costs.items():
            if not str(words).split() or isinstance(s, bool) or not isinstance(s, (int, float)) or s <= 0:
                raise bad(f"{tier}.{words!r} = {s!r} (a positive number of seconds for non-empty words)")
        out[tier] = {str(k): float(v) for k, v in costs.items()}
    return out


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
        ranges = _ranges(data.get("metric_ranges", {}), where)
        figures = [_figure(name, fig, f"{where} figure #{i + 1}", ranges) for i, fig in enumerate(data.get("figure", []))]
        registry = _registry()
        for i, x in enumerate(figures):
            check_configured(x, registry, f"{where} figure #{i + 1} ({x.id})")
        ids = [x.id for x in figures]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ManifestError(f"{where}: duplicate figure id(s) {sorted(dup)}")
        for x in figures:
            src = next((y for y in figures if y.id == x.results_of), None)
            if x.results_of and (src is None or src.experiment != x.experiment or src.results_of):
                raise ManifestError(f"{where} ({x.id}): results_of must name another entry of this paper with the same experiment")
            if x.results_of and x.configs:
                raise ManifestError(f"{where} ({x.id}): configs belong to the entry that runs ({x.results_of})")
            if src is not None and x.results_of:
                x.configs = src.configs  # drawn and judged as its source ran
        papers[name] = Paper(name, data["title"], data.get("venue", ""), data.get("docs", f"docs/{name}.md"), figures)
    return papers


def paper_numbers(paper: str) -> list[dict[str, Any]]:
    """Every number ``paper``'s manifest states (all its entries'; none for a paper not in it)."""
    p = load_papers().get(paper)
    return [n for fig in p.figures for n in fig.paper_numbers] if p else []


def _ranges(d: dict[str, Any], where: str) -> dict[str, tuple[float, float]]:
    out = {}
    for k, v in d.items():
        if not (isinstance(v, list) and len(v) == 2 and all(finite(x) is not None or x in (float("inf"), float("-inf")) for x in v)
                and float(v[0]) < float(v[1])):
            raise ManifestError(f"{where}: metric_ranges.{k} must be [low, high] with low < high (inf allowed), got {v!r}")
        out[k] = (float(v[0]), float(v[1]))
    return out


_REGISTRY: dict[str, dict[str, str]] | None = None


def _registry() -> dict[str, dict[str, str]]:
    """{experiment: {parameter: default}} of the registered experiments (cached)."""
    global _REGISTRY
    if _REGISTRY is None:
        from innet import api

        _REGISTRY = {e["name"]: {p["name"]: str(p.get("default", "")) for p in e["params"]} for e in api.list_experiments()}
    return _REGISTRY


def run_parameters(fig: Figure, registry: dict[str, dict[str, str]]) -> dict[str, list[float]]:
    """Every numeric value a parameter of ``fig``'s judged runs takes (standard and full tiers: the
    experiment's defaults, the manifest's fixed and grid values, a resource entry's settings)."""
    params: dict[str, set[str]] = {}
    for k, v in registry.get(fig.experiment or "", {}).items():
        params.setdefault(k, set()).add(v)
    for d in (fig.resources, fig.fixed, fig.standard_fixed, fig.full_fixed):  # the smoke tier is never judged
        for k, v in d.items():
            params.setdefault(k, set()).add(str(v))
    for d in (fig.grid, fig.standard_grid, fig.full_grid):
        for k, vs in d.items():
            params.setdefault(k, set()).update(vs)
    out: dict[str, list[float]] = {}
    for k, vs in params.items():
        for v in vs:
            for x in v.strip('"').replace(";", ",").split(","):
                f = finite(x.strip())
                if f is not None:
                    out.setdefault(k, []).append(f)
    return out


def _metric_parts(metric: str) -> list[str]:
    return [m.strip() for m in metric.replace(" - ", " / ").replace(" + ", " / ").split(" / ")]


def configured_reasons(fig: Figure, number: dict[str, Any], registry: dict[str, dict[str, str]]) -> list[str]:
    """Why ``number`` of ``fig`` is a value we set rather than measure: its metric is a constant
    of ours (OUR_CONSTANTS), names a parameter of the run, or its value equals a value a
    parameter of the run takes (0 and 1 aside; the seed never counts). Empty: nothing says so."""
    why = []
    params = run_parameters(fig, registry)
    constants = OUR_CONSTANTS.get(fig.experiment or "", {})
    for part in _metric_parts(str(number["metric"])):
        leaf = part.rsplit("].", 1)[-1].rsplit(".", 1)[-1]
        for key, (formula, _) in constants.items():
            if part == key or part.endswith("." + key):
                why.append(f"{part} is a constant of ours ({formula})")
        if leaf in params and leaf != "seed":
            why.append(f"{part} is the run's parameter {leaf}")
    value = float(number["value"])
    if value not in _TRIVIAL_VALUES:
        same = sorted(k for k, vs in params.items() if k != "seed" and value in vs)
        if same:
            why.append(f"the paper's {value:g} is the value of our parameter {', '.join(same)}")
    return why


def check_configured(fig: Figure, registry: dict[str, dict[str, str]], where: str) -> None:
    """A paper number is judged only on what we measure: one whose metric or value is ours by
    configuration must say ``configured = true`` (or, for a value that merely equals a parameter
    value, say in ``measured`` why it is measured); ``configured = true`` needs such a reason."""
    for i, n in enumerate(fig.paper_numbers):
        why = configured_reasons(fig, n, registry)
        if n.get("configured"):
            if not why:
                raise ManifestError(f"{where} paper[{i}] ({n['label']}): configured = true, but its metric is no constant or "
                                    "parameter of ours and its value no parameter value: judge it")
            continue
        hard = [w for w in why if not w.startswith("the paper's ")]
        if hard or (why and not n.get("measured")):
            raise ManifestError(f"{where} paper[{i}] ({n['label']}): {'; '.join(why)}: a number we set cannot match the paper; "
                                "mark it configured = true" + ("" if hard else " (or say in measured why it is measured)"))


def available_experiments() -> set[str]:
    from innet import api

    return {e["name"] for e in api.list_experiments()}


def seeded_experiments() -> set[str]:
    """Registered experiments that take a ``seed`` parameter."""
    from innet import api

    return {e["name"] for e in api.list_experiments() if any(p["name"] == "seed" for p in e["params"])}


def figure_points(fig: Figure, tier: str, seeds: list[str | None] | None = None) -> list[sweep.Point]:
    """The figure's points at ``tier``, once per seed (None: the experiment's default seed)."""
    from innet.reproduce import sweep  # pandas and dask: only when points are made

    assert fig.experiment is not None, f"{fig.paper}/{fig.id} has no experiment"
    points = []
    for seed in seeds or [None]:
        for config in fig.tier_configs(tier) or [{}]:
            fixed, grid, quick = fig.tier_params(tier)
            fixed.update({k: v for k, v in config.items() if k != "name"})
            if seed is not None:
                fixed["seed"] = seed
            points += sweep.expand(fig.experiment, grid, fixed=fixed, quick=quick)
    return points


def n_points(fig: Figure, tier: str) -> int:
    _, grid, _ = fig.tier_params(tier)
    n = max(1, len(fig.tier_configs(tier)))
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
    for i, config in enumerate(fig.tier_configs(tier)):
        sets = " ".join(f"--set {k}={v}" for k, v in config.items() if k != "name")
        parts.append(f"{'; series' if i else '; judged'} {config['name']}: {sets}")
    return " ".join(parts)
