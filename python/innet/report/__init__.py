"""What ``innet reproduce`` produced, judged: per manifest entry its points, its figure, each
paper number against ours with a verdict, and its provenance; a scoreboard per paper and overall;
one self-contained HTML page and a Markdown twin (docs/REPRODUCED.md) with the figures as PNGs.

A metric is a summary key (``schemes.switchv2p.fct_improvement``) or a table selection
(``points[scheme=switchv2p,cache_fraction=0.5].fct_improvement``), aggregated over the points of
one seed by the number's ``agg`` (mean or max) and then averaged over seeds. With two or more
seeds every verdict is also computed per seed and the verdict shown is the worst of them (a match
is claimed only when every seed matches); the page says per entry whether the seeds agree, on the
verdicts and on the plotted values (innet.report.seed_agreement), and counts the entries whose seeds
differ in the scoreboard. When a point was run again (same parameters, newer code) only its
newest result is used.

The package is the page's: this module, the verdicts (``verdict``), the seeds' agreement
(``seed_agreement``) and the figures drawn from the manifest's plot specs (``paperfig``). It reads
the manifest and the results (innet.reproduce); nothing that makes a result reads it.
"""

from __future__ import annotations

import base64
import html
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from innet import provenance, reproduce
from innet.report import paperfig, seed_agreement, verdict
from innet.report.seed_agreement import seed_of
from innet.reproduce import numbers, sweep
from innet.reproduce.numbers import finite

# Judging and showing cannot change a result (innet.provenance.presentation_paths).
PRESENTATION = True

SMOKE_NOTE = "smoke run: not comparable with the paper"
NO_NUMBER = ("No verdict: the paper states no number for this figure, only its plot, and no public artifact publishes "
             "the plotted data (docs/results/reproduce.md); compare the shape by eye.")
CSS = """
body { font-family: sans-serif; max-width: 1150px; margin: 2em auto; color: #222; padding: 0 1em; }
h1 { border-bottom: 2px solid #444; } h2 { margin-top: 2em; border-bottom: 1px solid #aaa; }
h3 { margin-bottom: 0.3em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; } td, th { border: 1px solid #ccc; padding: 3px 8px; vertical-align: top; }
th { background: #f0f0f0; } .match { color: #070; } .direction { color: #850; } .mismatch { color: #b00; font-weight: bold; }
.nc { color: #777; } .stale { color: #b00; font-weight: bold; } .unavail { color: #555; font-style: italic; }
.prov { font-size: 0.8em; color: #555; } img { max-width: 100%; } code { background: #f6f6f6; overflow-wrap: anywhere; }
"""
_CLASS = {verdict.MATCH: "match", verdict.DIRECTION: "direction", verdict.CONFIGURED: "nc", verdict.MISMATCH: "mismatch",
          verdict.NOT_RESOLVED: "direction", verdict.NOT_COMPARABLE: "nc"}
_SELECT = re.compile(r"^(?P<table>[A-Za-z_][\w]*)\[(?P<where>[^\]]*)\]\.(?P<col>.+)$")


def _seed_order(seed: str) -> tuple[int, int, str]:
    """Seeds in numeric order (1, 2, 10), named ones (``default``) after: a page rendered twice from
    the same points lists them the same way, whatever order the points finished in."""
    return (0, int(seed), "") if seed.isdigit() else (1, 0, seed)


@dataclass
class Compared:
    number: dict[str, Any]
    ours: float | None
    verdict: str
    why: str
    by_seed: dict[str, str] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)  # ours per seed

    @property
    def seeds_agree(self) -> bool | None:
        vals = set(self.by_seed.values())
        return None if len(self.by_seed) < 2 else len(vals) == 1


@dataclass
class Entry:
    fig: reproduce.Figure
    status: str
    rows: list[dict[str, Any]]
    compared: list[Compared]
    commits: list[str]
    stale: bool
    wall_s: float
    seeds: list[str]
    finished_at: float | None
    spread: seed_agreement.Spread | None = None
    cpu_s: float | None = None  # None when the points predate the CPU-time record

    @property
    def seeds_differ(self) -> bool:
        """Two or more seeds that tell different stories (a verdict or a plotted value)."""
        return any(c.seeds_agree is False for c in self.compared) or (self.spread is not None and not self.spread.agree)

    def seed_text(self, tier: str = reproduce.DEFAULT_TIER) -> str:
        """What the page says about this entry's seeds."""
        if not self.rows or self.fig.resources:
            return ""
        if len(self.seeds) < 2:
            why = ("the experiment has no seed (deterministic)" if self.seeds == ["default"] else self.fig.seeds_note
                   or (f"the {tier} tier runs {self.fig.standard_seeds}: the run is not complete"
                       if tier == "standard" and self.fig.standard_seeds > 1 else ""))
            return f"one seed ({', '.join(self.seeds)})" + (f": {why}" if why else "")
        judged = [c for c in self.compared if c.seeds_agree is not None]
        parts = []
        if judged:
            differ = [c for c in judged if not c.seeds_agree]
            parts.append(f"verdicts agree on all {len(judged)}" if not differ else
                         f"verdicts DIFFER on {len(differ)} of {len(judged)} (" + "; ".join(c.number["label"] for c in differ) + ")")
        if self.spread:
            sp = self.spread
            parts.append(f"plotted values ({sp.pairs}) differ by median {sp.median:.0%}, at most {sp.largest:.0%} ({sp.where})"
                         + ("" if sp.agree else f": MORE than the ±{seed_agreement.SPREAD_LIMIT:.0%} tolerance"))
        elif self.fig.plot.get("table") in seed_agreement.NOT_COMPARED_TABLES:
            parts.append("time series: not compared instant by instant")
        head = "SEEDS DIFFER" if self.seeds_differ else "seeds agree"
        return f"{head} — seeds {', '.join(self.seeds)}: " + "; ".join(parts or ["nothing to compare"])


def metric_values(row: dict[str, Any], metric: str) -> list[float]:
    """Every value of ``metric`` in one point (a summary key gives at most one)."""
    m = _SELECT.match(metric)
    if not m:
        v = finite(row.get(f"m.{metric}"))
        return [] if v is None else [v]
    recs = (row.get("tables") or {}).get(m["table"], [])
    conds = [c.split("=", 1) for c in m["where"].split(",") if "=" in c]
    out = []
    for rec in recs:
        ok = True
        for k, want in conds:
            got = rec.get(k.strip())
            gn, wn = finite(got), finite(want.strip())
            if not (str(got) == want.strip() or (gn is not None and wn is not None and gn == wn)):
                ok = False
                break
        v = finite(rec.get(m["col"])) if ok else None
        if v is not None:
            out.append(v)
    return out


def _agg(v: list[float], agg: str) -> float:
    return max(v) if agg == "max" else min(v) if agg == "min" else sum(v) / len(v)


def ours(rows: list[dict[str, Any]], metric: str, agg: str = "mean", where: dict[str, Any] | None = None) -> dict[str, float]:
    """Per seed, the metric aggregated over that seed's points (those whose parameters match
    ``where``). ``A / B`` is the ratio of two metrics, ``A + B + ...`` their sum and ``X - Y``
    the difference of two such expressions (``A / B - C / D``: `` - `` binds loosest, then
    `` / ``, then `` + ``), each metric aggregated first."""
    rows = [r for r in rows if all(str(r.get(f"param.{k}")) == str(v) for k, v in (where or {}).items())]
    if " - " in metric:
        first, second = metric.split(" - ", 1)
        a, b = ours(rows, first.strip(), agg), ours(rows, second.strip(), agg)
        return {s: a[s] - b[s] for s in a if s in b}
    if " / " in metric:
        num, den = metric.split(" / ", 1)
        a, b = ours(rows, num.strip(), agg), ours(rows, den.strip(), agg)
        return {s: a[s] / b[s] for s in a if s in b and b[s] != 0}
    if " + " in metric:
        parts = [ours(rows, m.strip(), agg) for m in metric.split(" + ")]
        return {s: sum(p[s] for p in parts) for s in parts[0] if all(s in p for p in parts)}
    by_seed: dict[str, list[float]] = {}
    for r in rows:
        by_seed.setdefault(seed_of(r), []).extend(metric_values(r, metric))
    return {s: _agg(v, agg) for s, v in by_seed.items() if v}


def intervals(rows: list[dict[str, Any]], metric: str) -> dict[str, tuple[float, float]]:
    """Per seed, the [low, high] interval a point stores under ``metric`` (a summary key whose
    value is a two-number list); a seed with several points or no interval has none."""
    by_seed: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        v = r.get(f"m.{metric}")
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                v = None
        if isinstance(v, (list, tuple)) and len(v) == 2 and all(finite(x) is not None for x in v):
            by_seed.setdefault(seed_of(r), []).append((float(v[0]), float(v[1])))
    return {s: iv[0] for s, iv in by_seed.items() if len(iv) == 1}


def compare(fig: reproduce.Figure, rows: list[dict[str, Any]], tier: str) -> list[Compared]:
    out = []
    comparable = tier != "smoke"
    for n in fig.paper_numbers:
        per_seed = ours(rows, n["metric"], n.get("agg", "mean"), {**fig.judged_where, **n.get("where", {})})
        o = sum(per_seed.values()) / len(per_seed) if per_seed else None
        ivs = intervals(rows, n["interval"]) if "interval" in n else {}
        # The mean's comparison must hold by more than the seeds' spread; each seed's by its 1 %.
        spread = max(per_seed.values()) - min(per_seed.values()) if len(per_seed) > 1 else 0.0
        j = verdict.judge(n, o, comparable, next(iter(ivs.values())) if len(per_seed) == 1 and ivs else None, spread)
        seeds = {s: verdict.judge(n, v, comparable, ivs.get(s)) for s, v in per_seed.items()} if comparable else {}
        by_seed = {s: x.verdict for s, x in seeds.items()}
        worst = max([j, *seeds.values()], key=lambda x: verdict.ORDER.index(x.verdict))
        differ = len(set(by_seed.values())) > 1
        if len(seeds) > 1 and (differ or worst.verdict != j.verdict):  # claim only what every seed supports
            j = verdict.Judgement(worst.verdict, ("seeds differ: " if differ else "on every seed: ")
                                  + ", ".join(f"seed {s}: {x.why}" for s, x in seeds.items()))
        out.append(Compared(n, o, j.verdict, j.why, by_seed, dict(per_seed)))
    return out


def resource_row(fig: reproduce.Figure, tier: str) -> dict[str, Any]:
    """A resource-table entry's one point, computed now from ``Program::resources()`` (it is
    instant and depends on the code only, so it always belongs to the current commit)."""
    import json as _json

    from innet import _native

    settings = {k: str(v) for k, v in fig.resources.items() if k != "program"}
    t0 = time.perf_counter()
    rep = _json.loads(_native.program_resources(fig.resources["program"], settings))
    row: dict[str, Any] = {"status": "ok", "prov.commit": provenance.current_commit(), "prov.tier": tier,
                           "wall_s": time.perf_counter() - t0, "finished_at": time.time(),
                           "tables": {"blocks": rep["blocks"]}}
    row.update({f"param.{k}": v for k, v in settings.items()})
    row.update({f"m.{k}": v for k, v in sweep.flatten(rep).items()})
    return row


def load_rows(fig: reproduce.Figure, root: Path, tier: str) -> list[dict[str, Any]]:
    if fig.resources:
        return [resource_row(fig, tier)]
    d = fig.out_dir(root, tier)
    if not d.exists():
        return []
    newest: dict[str, dict[str, Any]] = {}  # a point run again by newer code replaces the old one
    for r in sweep.load_points(d).values():
        if r.get("status") != "ok":
            continue
        key = repr(sorted((k, str(v)) for k, v in r.items() if k.startswith("param."))) + repr(r.get("quick"))
        if key not in newest or float(r.get("finished_at") or 0) >= float(newest[key].get("finished_at") or 0):
            newest[key] = r
    return list(newest.values())


def _stale(fig: reproduce.Figure, commit: str, current: str) -> bool:
    """A point of ``commit`` is stale unless that is the current commit, or nothing changed since
    can change the entry's results (presentation, or another system's crate) and its run
    parameters are unchanged (provenance's module doc)."""
    if not provenance.is_stale(commit, current):
        return False
    return not (provenance.only_presentation_changed(commit, current, fig.experiment)
                and not provenance.run_spec_changed(fig, commit))


def collect(root: str | Path, tier: str, have: set[str] | None = None) -> dict[str, list[Entry]]:
    """Every manifest entry of every paper with what ``root`` holds for ``tier``."""
    root = Path(root)
    current = provenance.current_commit()
    out: dict[str, list[Entry]] = {}
    for paper in reproduce.load_papers().values():
        entries = []
        for fig in paper.figures:
            rows = load_rows(fig, root, tier) if fig.runnable else []
            failed = [r for r in sweep.load_points(fig.out_dir(root, tier)).values() if r.get("status") != "ok"] if fig.experiment and fig.out_dir(root, tier).exists() else []
            if fig.unavailable:
                status = fig.unavailable
            elif have is not None and fig.experiment and fig.experiment not in have:
                status = f"no experiment yet: {fig.experiment} is not registered in this build"
            elif rows:
                status = f"{len(rows)} point{'s' if len(rows) != 1 else ''} run" + (f", {len(failed)} failed" if failed else "")
            elif failed:
                status = f"failed: {failed[0].get('error', '')[:300]}"
            else:
                status = "not run yet"
            commits = sorted({str(r.get("prov.commit", provenance.UNKNOWN)) for r in rows})
            entries.append(Entry(
                fig=fig, status=status, rows=rows, compared=compare(fig, rows, tier), commits=commits,
                stale=bool(rows) and any(_stale(fig, c, current) for c in commits),
                wall_s=sum(float(r.get("wall_s") or 0) for r in rows), seeds=sorted({seed_of(r) for r in rows}),
                finished_at=max((float(r["finished_at"]) for r in rows if r.get("finished_at")), default=None),
                spread=seed_agreement.spread(fig.plot, rows) if tier != "smoke" else None,
                cpu_s=sum(float(r["cpu_s"]) for r in rows) if rows and all(r.get("cpu_s") is not None for r in rows) else None,
            ))
        out[paper.name] = entries
    return out


def figures_href(tier: str) -> str:
    """Where a tier's Markdown page keeps its figures, relative to the page: the standard tier's
    in ``figures/reproduced``, another tier's in ``figures/reproduced-<tier>``."""
    return "figures/reproduced" if tier == reproduce.DEFAULT_TIER else f"figures/reproduced-{tier}"


def scoreboard(collected: dict[str, list[Entry]]) -> dict[str, dict[str, int]]:
    """Counts of each verdict per paper and overall (key ``all``)."""
    board = {}
    every = []
    for name, entries in collected.items():
        vs = [c.verdict for e in entries for c in e.compared]
        every += vs
        board[name] = verdict.scoreboard(vs)
    board["all"] = verdict.scoreboard(every)
    return board


SEEDS_DIFFER = "seeds differ"


def match_kinds(collected: dict[str, list[Entry]]) -> str:
    """One sentence: how many of the matches are on values the paper states (within a
    tolerance) and how many on bounds (the paper states only a side), and what the other new
    columns mean."""
    every = [c for es in collected.values() for e in es for c in e.compared]
    matches = [c for c in every if c.verdict == verdict.MATCH]
    bounds = sum(1 for c in matches if "bound" in c.number)
    return (f"Of the {len(matches)} matches, {len(matches) - bounds} are on values the paper states (within the row's "
            f"tolerance) and {bounds} on bounds (the paper states only a side: \"> 1\", \"≤ 200\"). \"configured\" rows "
            f"({sum(1 for c in every if c.verdict == verdict.CONFIGURED)}) are numbers we set rather than measure, shown but "
            f"never counted as matches; \"not resolved\" rows ({sum(1 for c in every if c.verdict == verdict.NOT_RESOLVED)}) "
            "hold their comparison by less than the seeds' spread or 1 % (docs/cli.md).")


def seed_board(collected: dict[str, list[Entry]]) -> dict[str, str]:
    """Per paper and overall: "k of n" entries run on two or more seeds whose seeds differ."""
    out, every = {}, []
    for name, entries in collected.items():
        multi = [e for e in entries if len(e.seeds) >= 2]
        every += multi
        out[name] = f"{sum(e.seeds_differ for e in multi)} of {len(multi)}"
    out["all"] = f"{sum(e.seeds_differ for e in every)} of {len(every)}"
    return out


def scoreboard_lines(board: dict[str, dict[str, int]], tier: str, seeds: dict[str, str] | None = None) -> list[str]:
    """The scoreboard as aligned text lines (for the terminal); ``seeds`` adds the column of
    entries whose seeds differ (see seed_board)."""
    if tier == "smoke":
        return [f"{SMOKE_NOTE}: no verdicts"]
    head = f"{'paper':12s} " + " ".join(f"{v:>15s}" for v in verdict.ORDER) + (f" {SEEDS_DIFFER:>15s}" if seeds else "")
    lines = [head]
    for name, counts in board.items():
        lines.append(f"{name:12s} " + " ".join(f"{counts[v]:>15d}" for v in verdict.ORDER) + (f" {seeds[name]:>15s}" if seeds else ""))
    return lines


def measured_cost(e: Entry) -> float | None:
    """What one point of ``e`` cost, in the unit of the manifest's ``cost_s``: CPU seconds of the
    worker for a simulated entry; wall seconds for a real-packet one (``exclusive``: its work is
    in the real servers' processes). None when nothing was measured (or the entry shows another
    entry's results)."""
    used = e.wall_s if e.fig.exclusive else e.cpu_s
    if not e.rows or used is None or e.fig.results_of:
        return None
    return used / len(e.rows)


def calibration_lines(collected: dict[str, list[Entry]], tier: str, factor: float = 1.5, floor_s: float = 10.0) -> list[str]:
    """Entries whose measured seconds per point differ from the manifest's ``cost_s`` by more than
    ``factor`` either way (points under ``floor_s`` both ways do not matter to a tier's time): the
    lines say what to write into ``cost_s``. Simulated points are measured in CPU seconds (load on
    the machine does not inflate them); real-packet points (``exclusive`` entries: real servers in
    namespaces, whose work is in other processes) in wall seconds, which is what they occupy."""
    out = []
    for entries in collected.values():
        for e in entries:
            est = e.fig.cost_s.get(tier, 0.0)
            per_point = measured_cost(e)
            if per_point is None or not est:
                continue
            if max(per_point, est) >= floor_s and not est / factor <= per_point <= est * factor:
                out.append(f"cost_s check: {e.fig.paper}/{e.fig.id}: measured {per_point:,.0f} {'wall' if e.fig.exclusive else 'CPU'} s per point "
                           f"({len(e.rows)} points), manifest cost_s.{tier} = {est:,.0f}")
    return out


def _fmt(v: float | None) -> str:
    if v is None:
        return "—"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.3g}"
    return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def _paper_value(n: dict[str, Any]) -> str:
    v = _fmt(float(n["value"]))
    if n.get("bound") == "above":
        return f"> {v}"
    if n.get("bound") == "below":
        return f"≤ {v}"
    return v + (" (approx.)" if n.get("approx") else "")


def _tolerance(n: dict[str, Any]) -> str:
    if n.get("configured"):
        return "configured by us: not judged"
    if "bound" in n:
        return "bound (only the side is stated)"
    if n.get("tolerance") == "direction":
        return f"direction (vs {n['direction_ref']:g})"
    if "abs_tolerance" in n:
        return f"±{float(n['abs_tolerance']):g}"
    t = f"±{float(n.get('tolerance', numbers.DEFAULT_TOLERANCE)):.0%}"
    ref = float(n.get("direction_ref", 0))
    return t if ref == 0 else f"{t}, and {t} of the effect from {ref:g}"


def _docs_link(paper: reproduce.Paper, fig: reproduce.Figure, n: dict[str, Any], md: bool) -> str:
    target = n.get("docs") or fig.docs or paper.docs
    if not target:
        return ""
    target = target if target.startswith("docs/") else f"docs/{target}"
    if md:  # REPRODUCED.md lives in docs/
        return f"[why]({target.removeprefix('docs/')})"
    return f"<span class='prov'>why: <code>{html.escape(target)}</code></span>"


def _prov_text(e: Entry, tier: str, current: str) -> str:
    if not e.rows:
        return ""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(e.finished_at)) if e.finished_at else "?"
    stale = f" — STALE: made by {', '.join(e.commits)}, current is {current}" if e.stale else ""
    if not e.stale and any(c != current for c in e.commits):
        stale = (f" — current is {current}: only presentation (docs, tests, the page's code, paper numbers) "
                 "or other systems' code changed since")
    values: dict[str, list[str]] = {}  # every value a parameter takes over the points; seeds are listed on their own
    for r in e.rows:
        for k, v in r.items():
            if k.startswith("param.") and k != "param.seed" and str(v) not in values.setdefault(k, []):
                values[k].append(str(v))
    params = ", ".join(f"{k.removeprefix('param.')}={'|'.join(v)}" for k, v in sorted(values.items()))
    est = e.fig.cost_s.get(tier, 0.0) * len(e.rows)  # the manifest's cost of the points shown
    cpu = f", CPU {e.cpu_s:,.0f} s" if e.cpu_s is not None else ""
    return (f"commit {', '.join(e.commits)} · tier {tier} · seeds {', '.join(e.seeds)} · wall {e.wall_s:,.0f} s{cpu}"
            f"{f' (manifest estimate {est:,.0f} s)' if est else ''} · "
            f"finished {when} · parameters: {params or 'experiment defaults'}{stale}")


def check_page(page: str, collected: dict[str, list[Entry]], markdown: str | None = None,
               md_dir: str | Path | None = None) -> list[str]:
    """What is wrong with a built page: a manifest entry without its section or status row, or
    an entry whose runs should give a figure without its image (in the HTML, and in the
    Markdown when given, whose images must exist under ``md_dir``). Empty when all is well."""
    problems = []
    sections = {}
    for part in page.split("<h3 id='")[1:]:
        sid, _, body = part.partition("'")
        sections[sid] = body.split("<h2", 1)[0]
    for paper, entries in collected.items():
        for e in entries:
            sid = f"{paper}-{e.fig.id}"
            body = sections.get(sid)
            if body is None or "Status: " not in body:
                problems.append(f"{sid}: no section with a status row on the page")
                continue
            if e.fig.plot and e.rows and "<img " not in body:
                problems.append(f"{sid}: {len(e.rows)} point(s) run but no figure drawn (check the plot spec against the run's tables)")
    if markdown is not None:
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown):
            if md_dir is not None and not (Path(md_dir) / target).is_file():
                problems.append(f"markdown: image {target} does not exist")
        for paper, entries in collected.items():
            for e in entries:
                if f"### {e.fig.title}" not in markdown:
                    problems.append(f"markdown: {paper}/{e.fig.id} has no section")
    return problems


def build(root: str | Path, tier: str = reproduce.DEFAULT_TIER, figures_dir: str | Path | None = None,
          figures_href: str | None = None) -> tuple[str, str]:
    """(html, markdown) for ``root``'s ``tier`` results. With ``figures_dir`` the PNGs are also
    written there and the Markdown links them through ``figures_href`` (default: the dir name)."""
    root = Path(root)
    have = reproduce.available_experiments()
    papers = reproduce.load_papers()
    collected = collect(root, tier, have)
    board = scoreboard(collected)
    seeds = seed_board(collected)
    current = provenance.current_commit()
    fig_dir = Path(figures_dir) if figures_dir else None
    href = figures_href or (fig_dir.name if fig_dir else "")
    if fig_dir:
        fig_dir.mkdir(parents=True, exist_ok=True)
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>innet: reproduced figures</title><style>{CSS}</style></head><body>",
         "<h1>innet: the five papers' evaluations, reproduced</h1>",
         f"<p>Tier <b>{tier}</b>, results under <code>{html.escape(str(root))}</code>, page made at commit <code>{current}</code>.</p>"]
    md = ["# Reproduced figures", "",
          f"Generated by `innet report {root} --tier {tier}` at commit `{current}`; do not edit by hand.", ""]
    # Scoreboard first.
    if tier == "smoke":
        h.append(f"<p class='nc'><b>{SMOKE_NOTE}.</b> No verdicts are drawn from smoke runs.</p>")
        md += [f"**{SMOKE_NOTE}.** No verdicts are drawn from smoke runs.", ""]
    cols = [*verdict.ORDER] + ([] if tier == "smoke" else [f"entries whose {SEEDS_DIFFER}"])
    h.append("<h2>Scoreboard</h2><table><tr><th>paper</th>" + "".join(f"<th>{v}</th>" for v in cols) + "</tr>")
    md += ["## Scoreboard", "", "| paper | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name, counts in board.items():
        label = "all papers" if name == "all" else name
        sd_h = "" if tier == "smoke" else f"<td class='{'' if seeds[name].startswith('0 ') else 'mismatch'}'>{seeds[name]}</td>"
        h.append(f"<tr><td><a href='#{name}'>{label}</a></td>" + "".join(f"<td class='{_CLASS[v]}'>{counts[v]}</td>" for v in verdict.ORDER)
                 + sd_h + "</tr>")
        md.append(f"| {label} | " + " | ".join(str(counts[v]) for v in verdict.ORDER) + ("" if tier == "smoke" else f" | {seeds[name]}") + " |")
    h.append("</table>")
    md.append("")
    if tier != "smoke":
        kinds = match_kinds(collected)
        h.append(f"<p>{html.escape(kinds)}</p>")
        md += [kinds, ""]
    multi = [c for es in collected.values() for e in es for c in e.compared if c.seeds_agree is not None]
    line = (f"Seeds: an entry's seeds differ when a paper number gets different verdicts on different seeds, or a plotted "
            f"value differs between seeds by more than ±{seed_agreement.SPREAD_LIMIT:.0%}; a verdict whose seeds differ is the worst "
            f"of the seeds' verdicts. {sum(1 for c in multi if c.seeds_agree)} of {len(multi)} verdicts judged on two or more seeds "
            f"are the same on every seed.")
    if tier != "smoke":
        h.append(f"<p>{html.escape(line)}</p>")
        md += [line, ""]
    for paper in papers.values():
        entries = collected[paper.name]
        h.append(f"<h2 id='{paper.name}'>{html.escape(paper.title)}</h2><p>{html.escape(paper.venue)}</p>")
        md += [f"## {paper.title}", "", paper.venue, ""]
        for e in entries:
            fig = e.fig
            h.append(f"<h3 id='{paper.name}-{fig.id}'>{html.escape(fig.title)}</h3>")
            md += [f"### {fig.title}", ""]
            meta = " · ".join(x for x in [fig.section, "panels: " + "; ".join(fig.panels) if fig.panels else ""] if x)
            if meta:
                h.append(f"<p class='prov'>{html.escape(meta)}</p>")
                md += [f"_{meta}_", ""]
            cls = "unavail" if fig.unavailable or e.status.startswith("no experiment") else ""
            h.append(f"<p class='{cls}'>Status: {html.escape(e.status)}</p>")
            md += [f"Status: {e.status}", ""]
            spec = {**fig.plot, "configs": fig.configs} if fig.configs else fig.plot
            png = paperfig.draw(spec, fig.title, e.rows, fig.paper_numbers) if fig.plot and e.rows else None
            if png:
                h.append(f"<img alt='{html.escape(fig.title)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>")
                if fig_dir:
                    name = f"{paper.name}-{fig.id}.png"
                    (fig_dir / name).write_bytes(png)
                    md += [f"![{fig.title}]({href}/{name})", ""]
            if fig.runnable and not fig.paper_numbers:
                h.append(f"<p class='prov'>{NO_NUMBER}</p>")
                md += [NO_NUMBER, ""]
            if e.compared:
                # The authors' artifact on the same input, where it was run (docs/results/artifacts.md).
                art = any(c.number.get("artifact") for c in e.compared)
                art_th, art_md = ("<th>authors' artifact</th>", " authors' artifact |") if art else ("", "")
                h.append(f"<table><tr><th>paper number</th><th>paper</th>{art_th}<th>ours</th><th>tolerance</th><th>verdict</th><th>seeds</th><th>source</th></tr>")
                md += [f"| paper number | paper |{art_md} ours | tolerance | verdict | seeds | source |",
                       "|---|---:|" + ("---|" if art else "") + "---:|---|---|---|---|"]
                for c in e.compared:
                    n = c.number
                    paper_v = _paper_value(n)
                    link_h = f" {_docs_link(paper, fig, n, False)}" if c.verdict == verdict.MISMATCH else ""
                    link_m = f" {_docs_link(paper, fig, n, True)}" if c.verdict == verdict.MISMATCH else ""
                    per = " / ".join(_fmt(v) for _, v in sorted(c.values.items(), key=lambda kv: _seed_order(kv[0])))
                    agree = "" if c.seeds_agree is None else (f"agree ({per})" if c.seeds_agree else "DIFFER: " + ", ".join(
                        f"{s}: {v} ({_fmt(c.values.get(s))})" for s, v in sorted(c.by_seed.items(), key=lambda kv: _seed_order(kv[0]))))
                    art_td = f"<td>{html.escape(n.get('artifact', ''))}</td>" if art else ""
                    art_cell = f" {n.get('artifact', '')} |" if art else ""
                    h.append(f"<tr><td>{html.escape(n['label'])}</td><td>{paper_v}</td>{art_td}<td>{_fmt(c.ours)}</td><td>{_tolerance(n)}</td>"
                             f"<td class='{_CLASS[c.verdict]}' title='{html.escape(c.why)}'>{c.verdict}{link_h}</td><td>{html.escape(agree)}</td>"
                             f"<td>{html.escape(n.get('source', ''))}</td></tr>")
                    md.append(f"| {n['label']} | {paper_v} |{art_cell} {_fmt(c.ours)} | {_tolerance(n)} | {c.verdict}{link_m} | {agree} | {n.get('source', '')} |")
                h.append("</table>")
                md.append("")
            if fig.runnable:
                entry = fig.results_of or fig.id
                cmd = f"innet reproduce {paper.name}/{entry} --tier {tier}" + ("" if not fig.experiment else f"  (by hand: {reproduce.command(fig, tier)})")
                h.append(f"<p class='prov'>Command: <code>{html.escape(cmd)}</code></p>")
                md += [f"Command: `{cmd}`", ""]
            st = e.seed_text(tier) if tier != "smoke" else ""
            if st:
                h.append(f"<p class='{'mismatch' if e.seeds_differ else 'prov'}'>Seeds: {html.escape(st)}</p>")
                md += [f"Seeds: {'**' + st + '**' if e.seeds_differ else st}", ""]
            prov = _prov_text(e, tier, current)
            if prov:
                h.append(f"<p class='prov{' stale' if e.stale else ''}'>Provenance: {html.escape(prov)}</p>")
                md += [f"Provenance: {prov}", ""]
    h.append("</body></html>")
    return "\n".join(h), "\n".join(md) + "\n"
