"""``innet reproduce``: plan the manifest entries of a tier, say before starting what the run
costs (core-minutes, the longest task, the expected wall clock on the workers at hand), run every
task on one Dask cluster with a line per finished figure, and record provenance with each point
(the command then prints the scoreboard: innet.cli.reproduce).

Tasks: every point of an entry, and a point of an experiment that sweeps inside one run
(SwitchV2P's schemes × cache sizes, gateways, pods; Gigaflow's pipelines) split into its
independent runs, which are merged back into the whole run's result (``sweep``). The expected
wall clock is a list schedule of the tasks' costs (the manifest's measured ``cost_s`` per point;
a part its measured ``part_cost_s``, else an equal share of what is left) in the order they are
submitted, longest first.

The real-packet entries (``exclusive``: real servers in network namespaces, timed in wall-clock)
need root and the servers scripts/setup.sh installs, and the machine to themselves. On the local
cluster they run after the simulations; with a user's ``--scheduler`` they run here, on the
client's machine, one at a time beside the cluster's simulations (a SLURM job or a Kubernetes pod
can neither make namespaces nor start Cassandra as root)."""

from __future__ import annotations

import heapq
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from innet import provenance, reproduce
from innet.reproduce import sweep


class PlanError(ValueError):
    """A user error in what to reproduce."""


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"


def plan(paper: str, tier: str, root: Path, seed: str | None = None, n_seeds: int | None = None, split: bool = True
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
                                          serial=fig.exclusive, cost_s=fig.cost_s.get(tier, 0.0), split=split,
                                          part_cost_s=fig.part_cost_s.get(tier, {}))))
    return jobs, skipped


@dataclass
class Schedule:
    """What a list of tasks costs: core-seconds in all, the longest task (no run can be shorter),
    and the expected wall clock on ``workers``."""

    core_s: float
    longest_s: float
    longest: str
    wall_s: float
    workers: int
    tasks: int


def schedule(tasks: list[tuple[str, float, str | None]], workers: int, beside: bool = False) -> Schedule:
    """List scheduling of ``(name, seconds, serial group)`` tasks, as ``run`` submits them: the
    simulated tasks longest first, each to the worker that frees first; then the serial groups
    (the real-packet entries, started after the simulations, one task at a time per group), each
    group a chain given to the worker that frees first. ``beside``: the serial tasks run on the
    client's machine instead, one after another from the start, beside the workers' simulations
    (a user's cluster, ``--scheduler``)."""
    workers = max(1, workers)
    free = [0.0] * workers

    def place(costs: list[float], start: float) -> float:
        free[:] = [start] * workers
        heapq.heapify(free)
        for c in sorted(costs, reverse=True):
            heapq.heappush(free, heapq.heappop(free) + c)
        return max(free)

    spread = place([c for _, c, g in tasks if not g], 0.0)
    chains: dict[str, float] = {}
    for _, c, g in tasks:
        if g:
            chains[g] = chains.get(g, 0.0) + c
    if beside:
        wall = max(spread, sum(chains.values()))
    else:
        wall = place(list(chains.values()), spread) if chains else spread
    name, longest = max(((n, c) for n, c, _ in tasks), key=lambda x: x[1], default=("", 0.0))
    return Schedule(sum(c for _, c, _ in tasks), longest, name, wall, workers, len(tasks))


def plan_schedule(jobs: list[tuple[reproduce.Figure, sweep.Batch]], workers: int, beside: bool = False) -> Schedule:
    """The schedule of the tasks still to run (finished points and parts left out)."""
    names = {id(b): f"{f.paper}/{f.id}" for f, b in jobs}
    tasks = sweep.pending_tasks([b for _, b in jobs])
    return schedule([(f"{names[id(t.batch)]} ({t.label})", t.cost_s, t.batch.serial) for t in tasks], workers, beside)


def run_jobs(batches: list[sweep.Batch], scheduler: str | None, workers: int | None,
             on_batch_done: Callable[[sweep.Batch], None]) -> None:
    """Run the batches: the simulated ones spread over the cluster's workers; the real-packet
    ones (``serial``) after them on the local cluster, or, with a user's ``scheduler``, here on a
    local one-worker cluster of their own, beside the scheduler's simulations. ``on_batch_done``
    may then be called from two threads."""
    sims = [b for b in batches if not b.serial]
    reals = [b for b in batches if b.serial]
    if not (scheduler and reals):
        # The local cluster: the real-packet entries after the simulations, with the machine to
        # themselves (a simulation on the other core would be in their measurements).
        sweep.run_batches(sims, scheduler=scheduler, workers=workers, on_batch_done=on_batch_done)
        sweep.run_batches(reals, scheduler=scheduler, workers=workers, on_batch_done=on_batch_done)
        return
    failure: list[BaseException] = []

    def here() -> None:
        try:
            sweep.run_batches(reals, scheduler=None, workers=1, on_batch_done=on_batch_done)
        except BaseException as e:  # noqa: BLE001 - raised again in the calling thread
            failure.append(e)

    local = threading.Thread(target=here, name="innet-real-packet-entries")
    local.start()
    try:
        sweep.run_batches(sims, scheduler=scheduler, workers=workers, on_batch_done=on_batch_done)
    finally:
        local.join()
    if failure:
        raise failure[0]


def scheduler_workers(address: str) -> int:
    """Task slots (worker threads) of a running Dask scheduler."""
    from dask.distributed import Client

    try:
        with Client(address, timeout="10s") as client:
            return sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    except OSError as e:
        raise PlanError(f"--scheduler {address}: {e} (give --workers N to plan without it)") from None


def run(paper: str, tier: str, root: Path, seed: str | None = None, scheduler: str | None = None, workers: int | None = None,
        dry_run: bool = False, echo: Callable[[str], None] = print, n_seeds: int | None = None, split: bool = True) -> bool:
    """Run the plan (or only print it, ``dry_run``); whether points were run."""
    jobs, skipped = plan(paper, tier, root, seed, n_seeds, split)
    for line in skipped:
        echo(f"  not run: {line}")
    n_workers = workers or (scheduler_workers(scheduler) if scheduler else os.cpu_count() or 1)
    where = f"the Dask scheduler {scheduler}'s {n_workers}" if scheduler and not workers else str(n_workers)
    beside = bool(scheduler) and any(b.serial for _, b in jobs)
    sched = plan_schedule(jobs, n_workers, beside)
    total = sched.core_s
    n_points = sum(len(b.points) for _, b in jobs)
    head = (f"estimated {total / 3600:.1f} core-hours" if tier == "full" else f"{total / 60:.0f} core-minutes not yet done")
    echo(f"{tier} tier: {len(jobs)} entries, {n_points} points, {sched.tasks} tasks to run ({head}); expected about "
         f"{_hms(sched.wall_s)} on {where} worker(s)" + (" (the real-packet entries on this machine, beside them)" if beside else ""))
    if sched.tasks:
        echo(f"  longest task (no worker count makes the run shorter): {sched.longest}, {sched.longest_s / 60:.1f} core-min; "
             f"in all {total / 60:.0f} core-min, {total / 60 / max(1, sched.tasks):.1f} per task "
             f"({'points split into their runs' if split else 'one task per point'})")
    for fig, b in jobs:
        seeds = sorted({dict(p.params).get("seed", "default") for p in b.points})
        if tier == "standard" and len(seeds) < 2 and not (seed or n_seeds):
            echo(f"  one seed: {fig.paper}/{fig.id}: " + (fig.seeds_note or f"{fig.experiment} has no seed (deterministic)"))
    if dry_run:
        for fig, b in jobs:
            seeds = sorted({dict(p.params).get("seed", "default") for p in b.points})
            tasks = [t for _, _, ts in sweep.pending(b) for t in ts]
            left = sum(t.cost_s for t in tasks)
            longest = max((t.cost_s for t in tasks), default=0.0)
            echo(f"  {fig.paper}/{fig.id}: {len(b.points)} point(s), seeds {','.join(seeds)}, {len(tasks)} task(s), "
                 f"{left / 60:.1f} core-min left, longest task {longest / 60:.1f} core-min")
        return False
    t0 = time.perf_counter()
    done_figs = [0]
    costs = {id(b): sum(t.cost_s for _, _, ts in sweep.pending(b) for t in ts) for _, b in jobs}
    by_batch = {id(b): (f, costs[id(b)]) for f, b in jobs}
    left = [total]

    lock = threading.Lock()  # run_jobs may call it from two threads

    def figure_done(b: sweep.Batch) -> None:
        with lock:
            done_figs[0] += 1
            (f, c), r = by_batch[id(b)], b.report
            assert r is not None
            left[0] -= c
            echo(f"[{done_figs[0]}/{len(jobs)}] {f.paper}/{f.id}: {r.done} run, {r.skipped} already done, {r.failed} failed "
                 f"({_hms(time.perf_counter() - t0)} elapsed, about {_hms(left[0] / n_workers)} of work left by the estimates)")

    run_jobs([b for _, b in jobs], scheduler, workers, figure_done)
    echo(f"results under {root / tier} in {_hms(time.perf_counter() - t0)}; `innet report {root} --tier {tier}` makes the page")
    return True
