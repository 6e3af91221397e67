"""``innet reproduce``: plan the manifest entries of a tier, say the expected time (standard,
smoke) or core-hours (full) before starting, run every point on one Dask cluster with a line per
finished figure, record provenance with each point, and end with the scoreboard."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from innet import provenance, reproduce, sweep


class PlanError(ValueError):
    """A user error in what to reproduce."""


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"


def plan(paper: str, tier: str, root: Path, seed: str | None = None, n_seeds: int | None = None
         ) -> tuple[list[tuple[reproduce.Figure, sweep.Batch]], list[str]]:
    """The batches to run and the lines saying what will not run (and why). ``seed`` runs every
    seeded entry with that one seed; ``n_seeds`` with seeds 1..N; by default the manifest decides
    (two seeds in the standard tier unless an entry says why one)."""
    if n_seeds is not None and n_seeds < 1:
        raise PlanError(f"--seeds must be at least 1, got {n_seeds}")
    if seed is not None and n_seeds is not None:
        raise PlanError("give --seed S (one given seed) or --seeds N (seeds 1..N), not both")
    papers = reproduce.load_papers()
    paper, _, only = paper.partition("/")
    chosen = list(papers) if paper == "all" else [paper]
    for name in chosen:
        if name not in papers:
            raise PlanError(f"unknown paper '{name}'; expected all, one of {', '.join(papers)}, or PAPER/ENTRY")
    if only and not any(f.id == only for f in papers[chosen[0]].figures):
        raise PlanError(f"{paper} has no entry '{only}'; its entries: {', '.join(f.id for f in papers[chosen[0]].figures)}")
    seeded = reproduce.seeded_experiments()
    have = reproduce.available_experiments()
    commit = provenance.current_commit()
    jobs, skipped = [], []
    for name in chosen:
        for fig in papers[name].figures:
            if only and fig.id != only:
                continue
            if not fig.experiment:
                skipped.append(f"{name}/{fig.id}: " + ("computed by `innet report` from Program::resources()" if fig.resources else str(fig.unavailable)))
                continue
            if fig.results_of:
                continue  # drawn from the entry it names
            if tier == "smoke" and not fig.smoke:
                skipped.append(f"{name}/{fig.id}: left out of the smoke tier (a real server per run; see the manifest)")
                continue
            if fig.experiment not in have:
                skipped.append(f"{name}/{fig.id}: no experiment yet: {fig.experiment} is not registered in this build")
                continue
            meta = {"commit": commit, "tier": tier, "paper": name, "figure": fig.id}
            if seed is not None and fig.experiment not in seeded:
                skipped.append(f"{name}/{fig.id}: {fig.experiment} has no seed (deterministic replay); --seed {seed} leaves it out")
                continue
            seeds = [seed] if seed is not None else fig.seeds(tier, fig.experiment in seeded, n_seeds)
            jobs.append((fig, sweep.Batch(reproduce.figure_points(fig, tier, seeds), fig.out_dir(root, tier), meta,
                                          serial=fig.exclusive)))
    return jobs, skipped


def _remaining_seconds(fig: reproduce.Figure, batch: sweep.Batch, tier: str) -> float:
    done = {k for k, r in sweep.load_points(batch.out).items() if r.get("status") == "ok"} if batch.out.exists() else set()
    left = sum(1 for p in batch.points if p.key not in done)
    return fig.cost_s.get(tier, 0.0) * left


def _expected_seconds(jobs: list[tuple[reproduce.Figure, sweep.Batch]], costs: list[float], n_workers: int) -> float:
    """Wall time: the simulated points spread over the workers (but no shorter than the longest
    single point), then the real-packet entries (``exclusive``) one after another, alone."""
    spread = sum(c for (_, b), c in zip(jobs, costs) if not b.serial)
    longest = max((c / max(1, len(b.points)) for (_, b), c in zip(jobs, costs) if not b.serial), default=0.0)
    return max(spread / n_workers, longest) + sum(c for (_, b), c in zip(jobs, costs) if b.serial)


def run(paper: str, tier: str, root: Path, seed: str | None = None, scheduler: str | None = None, workers: int | None = None,
        dry_run: bool = False, echo: Callable[[str], None] = print, n_seeds: int | None = None) -> None:
    jobs, skipped = plan(paper, tier, root, seed, n_seeds)
    for line in skipped:
        echo(f"  not run: {line}")
    n_workers = workers or (os.cpu_count() or 1)
    costs = [_remaining_seconds(f, b, tier) for f, b in jobs]
    total = sum(costs)
    expected = _expected_seconds(jobs, costs, n_workers)
    if tier == "full":
        echo(f"full tier: {len(jobs)} entries, estimated {total / 3600:.1f} core-hours"
             + (f" on the Dask scheduler {scheduler}" if scheduler else f" (about {_hms(expected)} on this machine's {n_workers} workers)"))
    else:
        echo(f"{tier} tier: {len(jobs)} entries, {sum(len(b.points) for _, b in jobs)} points; expected about "
             f"{_hms(expected)} on {n_workers} worker(s) ({total / 60:.0f} core-minutes not yet done)")
    for fig, b in jobs:
        seeds = sorted({dict(p.params).get("seed", "default") for p in b.points})
        if tier == "standard" and len(seeds) < 2 and not (seed or n_seeds):
            echo(f"  one seed: {fig.paper}/{fig.id}: " + (fig.seeds_note or f"{fig.experiment} has no seed (deterministic)"))
    if dry_run:
        for (fig, b), c in zip(jobs, costs):
            seeds = sorted({dict(p.params).get("seed", "default") for p in b.points})
            echo(f"  {fig.paper}/{fig.id}: {len(b.points)} point(s), seeds {','.join(seeds)}, {c / 60:.1f} core-min left")
        return
    t0 = time.perf_counter()
    done_figs = [0]
    by_batch = {id(b): (f, c) for (f, b), c in zip(jobs, costs)}
    left = [total]

    def figure_done(b: sweep.Batch) -> None:
        done_figs[0] += 1
        (f, c), r = by_batch[id(b)], b.report
        assert r is not None
        left[0] -= c
        echo(f"[{done_figs[0]}/{len(jobs)}] {f.paper}/{f.id}: {r.done} run, {r.skipped} already done, {r.failed} failed "
             f"({_hms(time.perf_counter() - t0)} elapsed, about {_hms(left[0] / n_workers)} of work left by the estimates)")

    # Simulated points first, spread over the workers; then the real-packet entries (real servers
    # in namespaces, timed in wall-clock) one at a time with the machine to themselves: a
    # simulation on the other core would be in their measurements.
    sweep.run_batches([b for _, b in jobs if not b.serial], scheduler=scheduler, workers=workers, on_batch_done=figure_done)
    sweep.run_batches([b for _, b in jobs if b.serial], scheduler=scheduler, workers=workers, on_batch_done=figure_done)
    from innet import report

    echo(f"results under {root / tier} in {_hms(time.perf_counter() - t0)}; `innet report {root} --tier {tier}` makes the page")
    collected = report.collect(root, tier)
    for line in report.scoreboard_lines(report.scoreboard(collected), tier, report.seed_board(collected)):
        echo(line)
