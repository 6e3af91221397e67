"""Parameter sweeps on Dask: every point of a grid is a task that runs the Rust simulation in a
Dask worker; results land as one Parquet dataset with a row per point.

- Points are keyed by (experiment, parameters, quick, code version), so re-running a sweep into
  the same directory skips the points already done; a failed point keeps its error (and is tried
  again on the next run). A point another build made counts as done when it is still current by
  the rule the page judges provenance with (``innet.provenance``): made at a clean commit from
  which only presentation or other systems' crates changed. So a days-long full tier resumes
  across commits to docs or to another system, and recomputes what a change can move.
- A local cluster sized to the machine is started unless ``scheduler`` names a running Dask
  scheduler (the same call works against a Slurm or Kubernetes Dask deployment).
- A worker that dies mid-task is handled by Dask: the scheduler re-runs the task elsewhere
  (``retries`` bounds how often a task that *raises* is retried).
- A point of an experiment that sweeps inside one run (SwitchV2P's schemes × cache sizes, say)
  is split into its independent runs ("parts", ``_native.experiment_parts``), each a task of its
  own; when the last part lands, the parts are merged (in Rust, the code ``innet run`` uses)
  into exactly the point the whole run gives. Finished parts are kept, so an interrupted point
  resumes with its missing parts only. Tasks are submitted longest first (by ``Batch.cost_s``).

Storage, under ``out``: ``points/<key>.json`` (one file per finished point, written atomically,
with the run's small tables and any provenance the caller passes), ``parts/<key>/<i>.json``
(finished parts of a point not yet merged; removed once it is) and ``results.parquet`` (all
points, rebuilt at the end of every sweep; tables stay in the point files).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

RESULTS_FILE = "results.parquet"
POINTS_DIR = "points"
PARTS_DIR = "parts"
# Tables up to this many rows are kept with a point (the per-scheme, per-axis-value tables that
# figures are drawn from); longer ones (per-packet timelines) are left out of the store.
MAX_TABLE_ROWS = 5000


@functools.cache
def code_version() -> str:
    """A short hash of the native module (the simulator) and the innet version: points computed
    by different code never mix. Hashed once per process (the module cannot change under it;
    a plan expands a hundred batches)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as pkg_version

    from innet import _native

    try:
        version = pkg_version("innet")
    except PackageNotFoundError:
        version = "0"
    h = hashlib.sha256(version.encode())
    path = getattr(_native, "__file__", None)
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def parse_grid(specs: Iterable[str]) -> dict[str, list[str]]:
    """``k=v1,v2,...`` (or ``k=a,b;c,d`` when values themselves hold commas) → {k: [values]}."""
    grid: dict[str, list[str]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--grid expects key=v1,v2,..., got '{spec}'")
        sep_char = ";" if ";" in values else ","
        vals = [v.strip() for v in values.split(sep_char) if v.strip()]
        if not vals:
            raise ValueError(f"--grid {key}: no values")
        if key in grid:
            raise ValueError(f"--grid {key} given twice")
        grid[key] = vals
    return grid


@dataclass(frozen=True)
class Point:
    experiment: str
    params: tuple[tuple[str, str], ...]
    quick: bool
    version: str

    @property
    def key(self) -> str:
        blob = json.dumps([self.experiment, list(self.params), self.quick, self.version])
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def overrides(self) -> dict[str, str]:
        return dict(self.params)


def expand(
    experiment: str,
    grid: Mapping[str, list[str]],
    repeat: int = 1,
    fixed: Mapping[str, str] | None = None,
    quick: bool = False,
    version: str | None = None,
) -> list[Point]:
    """The cross product of the grid (plus fixed overrides); ``repeat`` > 1 adds seeds 1..N."""
    if repeat < 1:
        raise ValueError("--repeat must be at least 1")
    version = version or code_version()
    keys = sorted(grid)
    points = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        params = dict(fixed or {})
        params.update(zip(keys, combo))
        seeds = [params.get("seed")] if repeat == 1 else [str(s) for s in range(1, repeat + 1)]
        for seed in seeds:
            p = dict(params)
            if seed is not None:
                p["seed"] = seed
            points.append(Point(experiment, tuple(sorted(p.items())), quick, version))
    # Same parameters twice (e.g. a repeated grid value) is one point.
    return list(dict.fromkeys(points))


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested summary → flat columns ``a.b.c``; lists become JSON text."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, name + "."))
        elif isinstance(v, list):
            out[name] = json.dumps(v)
        else:
            out[name] = v
    return out


def run_point(experiment: str, overrides: dict[str, str], quick: bool) -> dict[str, Any]:
    """Run one point in this process (a Dask task body). Never raises for a failed simulation:
    the error is the result, so it lands in the dataset."""
    from innet import api

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        r = api.run(experiment, quick=quick, overrides=overrides)
        return _ok(r.summary, r.tables, time.perf_counter() - t0, time.process_time() - c0)
    except Exception as e:  # noqa: BLE001 - every failure is recorded with its message
        return {"status": "failed", "error": f"{type(e).__name__}: {e}", "summary": {}, "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0}


def _ok(summary: dict[str, Any], tables: Mapping[str, pd.DataFrame], wall_s: float, cpu_s: float) -> dict[str, Any]:
    kept = {name: json.loads(df.to_json(orient="records")) for name, df in tables.items() if len(df) <= MAX_TABLE_ROWS}
    return {"status": "ok", "error": "", "summary": summary, "tables": kept, "wall_s": wall_s, "cpu_s": cpu_s}


def point_parts(point: Point) -> list[str] | None:
    """The labels of the parts ``point`` splits into (None: it runs whole, as one task). Asks the
    experiment (cheap: no simulation, no trace)."""
    from innet import _native

    if _native.experiment_runner(point.experiment) is not None:
        return None
    return _native.experiment_parts(point.experiment, point.overrides(), point.quick)


def run_part(experiment: str, overrides: dict[str, str], quick: bool, index: int) -> dict[str, Any]:
    """Run part ``index`` of a point in this process (a Dask task body); never raises."""
    from innet import _native

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        text = _native.run_experiment_part(experiment, overrides, quick, index)
        return {"status": "ok", "error": "", "result": text, "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    except Exception as e:  # noqa: BLE001 - every failure is recorded with its message
        return {"status": "failed", "error": f"{type(e).__name__}: {e}", "result": "", "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0}


def merge_parts(point: Point, parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The point's result from its parts' results (in order): what ``run_point`` gives, with the
    parts' wall and CPU seconds summed (core-seconds, as one process would have spent)."""
    from innet import _native

    wall, cpu = sum(p["wall_s"] for p in parts), sum(p.get("cpu_s") or 0.0 for p in parts)
    try:
        summary_json, tables = _native.merge_experiment_parts(point.experiment, point.overrides(), point.quick,
                                                              [p["result"] for p in parts])
        return _ok(json.loads(summary_json), {name: pd.DataFrame(c) for name, c in tables}, wall, cpu)
    except Exception as e:  # noqa: BLE001 - every failure is recorded with its message
        return {"status": "failed", "error": f"merging {len(parts)} parts: {type(e).__name__}: {e}", "summary": {},
                "wall_s": wall, "cpu_s": cpu}


def _row(point: Point, result: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "point": point.key,
        "experiment": point.experiment,
        "quick": point.quick,
        "code_version": point.version,
        "status": result["status"],
        "error": result["error"],
        "wall_s": result["wall_s"],
        # CPU seconds of the worker process: unlike wall_s, barely moved by other load on the
        # machine (real servers an experiment starts are other processes and not counted).
        "cpu_s": result.get("cpu_s"),
        "finished_at": time.time(),
    }
    for k, v in (meta or {}).items():
        row[f"prov.{k}"] = v
    for k, v in point.params:
        row[f"param.{k}"] = v
    for k, v in flatten(result.get("summary", {})).items():
        row[f"m.{k}"] = v
    if result.get("tables"):
        row["tables"] = result["tables"]
    return row


def _write_point(out: Path, point: Point, result: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> None:
    d = out / POINTS_DIR
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{point.key}.tmp"
    tmp.write_text(json.dumps(_row(point, result, meta), default=str))
    tmp.replace(d / f"{point.key}.json")


def load_points(out: str | Path) -> dict[str, dict[str, Any]]:
    d = Path(out) / POINTS_DIR
    rows = {}
    if d.exists():
        for f in sorted(d.glob("*.json")):
            row = json.loads(f.read_text())
            rows[row["point"]] = row
    return rows


def write_dataset(out: str | Path) -> pd.DataFrame:
    rows = [{k: v for k, v in r.items() if k != "tables"} for r in load_points(out).values()]
    df = pd.DataFrame(rows)
    if not df.empty:
        # Mixed-type metric columns (e.g. a number in one point, text in another) become text.
        for c in df.columns:
            if df[c].map(type).nunique() > 1 and df[c].map(lambda v: isinstance(v, str)).any():
                df[c] = df[c].astype(str)
        df = df.sort_values(["experiment", "point"]).reset_index(drop=True)
    df.to_parquet(Path(out) / RESULTS_FILE, index=False)
    return df


@dataclass
class SweepReport:
    total: int
    skipped: int
    done: int = 0
    failed: int = 0
    dataset: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass
class Batch:
    """Points whose results go under one directory (a sweep, or one figure of ``innet reproduce``)."""

    points: list[Point]
    out: Path
    meta: Mapping[str, Any] = field(default_factory=dict)
    report: SweepReport | None = None
    # Points of batches that share a serial group run one at a time (e.g. experiments that own
    # the machine's network namespaces and a real server).
    serial: str | None = None
    # Expected single-core seconds of one point: tasks are submitted longest first, and a
    # point's parts share its cost equally.
    cost_s: float = 0.0
    # Split each point into its parts (False: one task per point, as before issue 34).
    split: bool = True
    # Measured seconds of one part, by words of its label (``part_costs``).
    part_cost_s: Mapping[str, float] = field(default_factory=dict)


@dataclass
class Task:
    """One Dask task: a whole point (``part`` None) or one part of it."""

    batch: Batch
    point: Point
    part: int | None
    label: str
    cost_s: float

    @property
    def key(self) -> str:
        return f"innet-{self.point.key}" + ("" if self.part is None else f"-part{self.part}")


def _parts_dir(out: Path, point: Point) -> Path:
    return Path(out) / PARTS_DIR / point.key


def load_parts(out: str | Path, point: Point) -> dict[int, dict[str, Any]]:
    """The finished parts of ``point`` under ``out``, by index."""
    d = _parts_dir(Path(out), point)
    parts = {}
    if d.exists():
        for f in d.glob("*.json"):
            parts[int(f.stem)] = json.loads(f.read_text())
    return parts


def _write_part(out: Path, point: Point, index: int, result: Mapping[str, Any]) -> None:
    d = _parts_dir(out, point)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{index}.tmp"
    tmp.write_text(json.dumps(dict(result)))
    tmp.replace(d / f"{index}.json")


def _remove_parts(out: Path, point: Point) -> None:
    d = _parts_dir(out, point)
    if d.exists():
        for f in d.iterdir():
            f.unlink()
        d.rmdir()


def _split(batch: Batch, point: Point) -> list[str] | None:
    if not batch.split:
        return None
    try:
        labels = point_parts(point)
    except Exception:  # noqa: BLE001 - e.g. a bad parameter: the whole run records the error
        return None
    return labels if labels and len(labels) > 1 else None


def part_costs(batch: Batch, labels: list[str]) -> list[float]:
    """Expected seconds of each part of a point: for a part whose label holds all the words of a
    ``part_cost_s`` key (the first such key), that measured cost (pipelines and sizes differ);
    the other parts share equally what those leave of the point's ``cost_s`` (its total)."""
    named: list[float | None] = []
    for label in labels:
        words = set(label.split())
        named.append(next((s for key, s in batch.part_cost_s.items() if set(key.split()) <= words), None))
    rest = [i for i, c in enumerate(named) if c is None]
    share = max(batch.cost_s - sum(c for c in named if c is not None), 0.0) / max(len(rest), 1)
    return [share if c is None else c for c in named]


# Finished tasks of a batch needed before their measured cost rescales the estimates of the rest.
CALIBRATE_AFTER = 3


def _measured_s(batch: Batch, row: Mapping[str, Any]) -> float | None:
    """What a finished task cost, in the unit of the estimates: CPU seconds, or wall seconds for
    a serial batch (real-packet runs, whose work is in other processes)."""
    v = row.get("wall_s" if batch.serial else "cpu_s")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def _identity(experiment: str, params: Iterable[tuple[str, Any]], quick: bool) -> tuple[Any, ...]:
    return (experiment, tuple(sorted((k, str(v)) for k, v in params)), bool(quick))


def still_current(rows: Mapping[str, Mapping[str, Any]]) -> dict[tuple[Any, ...], str]:
    """The finished points among ``rows`` that the current code would give again, by identity
    (experiment, parameters, quick) → key: those whose recorded commit (``prov.commit``) is the
    current one, or one from which only presentation or other systems' crates changed
    (``provenance.only_presentation_changed``). Rows without a commit (a plain ``innet sweep``)
    and rows of a dirty tree never qualify: their code cannot be named."""
    from innet import provenance

    current = provenance.current_commit()
    out: dict[tuple[Any, ...], str] = {}
    for key, r in rows.items():
        commit = r.get("prov.commit")
        if r.get("status") != "ok" or not isinstance(commit, str) or not r.get("experiment"):
            continue
        if provenance.is_stale(commit, current) and not provenance.only_presentation_changed(commit, current, r["experiment"]):
            continue
        params = [(k.removeprefix("param."), v) for k, v in r.items() if k.startswith("param.")]
        out[_identity(r["experiment"], params, r.get("quick", False))] = key
    return out


def pending(batch: Batch) -> list[tuple[Point, list[str] | None, list[Task]]]:
    """The batch's unfinished points, each with its part labels (None: it runs whole) and the
    tasks still to run for it (its finished parts left out; none: merge what is there).

    Once ``CALIBRATE_AFTER`` of the batch's tasks (points or parts) have finished under its
    ``out``, the estimates of the rest are scaled by what those cost against their estimates (a
    resumed run's plan and progress then tell the time the machine actually takes)."""
    points = load_points(batch.out)
    finished = {k for k, r in points.items() if r.get("status") == "ok"}
    current = still_current(points)
    out = []
    estimated = measured = 0.0
    n_measured = 0
    for p in dict.fromkeys(batch.points):
        done = p.key if p.key in finished else current.get(_identity(p.experiment, p.params, p.quick))
        if done is not None:
            m = _measured_s(batch, points[done])
            if m is not None and batch.cost_s > 0:
                estimated, measured, n_measured = estimated + batch.cost_s, measured + m, n_measured + 1
            continue
        labels = _split(batch, p)
        if labels is None:
            out.append((p, None, [Task(batch, p, None, p.experiment, batch.cost_s)]))
            continue
        parts = {i: r for i, r in load_parts(batch.out, p).items() if r.get("status") == "ok"}
        costs = part_costs(batch, labels)
        for i, r in parts.items():
            m = _measured_s(batch, r)
            if m is not None and i < len(costs) and costs[i] > 0:
                estimated, measured, n_measured = estimated + costs[i], measured + m, n_measured + 1
        out.append((p, labels, [Task(batch, p, i, f"{p.experiment}: {label}", costs[i]) for i, label in enumerate(labels) if i not in parts]))
    if n_measured >= CALIBRATE_AFTER and estimated > 0:
        scale = measured / estimated
        for _, _, tasks in out:
            for t in tasks:
                t.cost_s *= scale
    return out


def pending_tasks(batches: list[Batch]) -> list[Task]:
    """Every task the batches still need, longest first (the order they are submitted in)."""
    tasks = [t for b in batches for _, _, ts in pending(b) for t in ts]
    return sorted(tasks, key=lambda t: -t.cost_s)


def run_sweep(
    points: list[Point],
    out: str | Path,
    scheduler: str | None = None,
    workers: int | None = None,
    retries: int = 2,
    on_progress: Callable[[int, int, int, int], None] | None = None,
    meta: Mapping[str, Any] | None = None,
    split: bool = True,
) -> SweepReport:
    """Run the points not finished yet under ``out`` on Dask; returns counts and the dataset.
    ``on_progress(done, running, failed, total)`` is called as tasks finish; ``meta`` (e.g. the
    commit and tier) is recorded with every point as ``prov.*`` columns."""
    batch = Batch(points, Path(out), dict(meta or {}), split=split)
    run_batches([batch], scheduler, workers, retries, on_progress)
    assert batch.report is not None
    return batch.report


def run_batches(
    batches: list[Batch],
    scheduler: str | None = None,
    workers: int | None = None,
    retries: int = 2,
    on_progress: Callable[[int, int, int, int], None] | None = None,
    on_batch_done: Callable[[Batch], None] | None = None,
) -> None:
    """Run several batches on one Dask cluster, all tasks in flight together, longest first; each
    batch's report (and dataset) is set when its last point lands, and ``on_batch_done`` is
    called. ``on_progress`` counts tasks (a split point is several)."""
    from dask.distributed import Client, LocalCluster, as_completed

    todo: list[Task] = []
    left: dict[int, int] = {}
    # A split point's parts: labels, and the results landed so far (index → part result).
    parts: dict[tuple[int, str], tuple[list[str], dict[int, dict[str, Any]]]] = {}
    merge_now: list[tuple[Batch, Point]] = []
    for i, b in enumerate(batches):
        b.out.mkdir(parents=True, exist_ok=True)
        mine = pending(b)
        b.report = SweepReport(total=len(b.points), skipped=len(b.points) - len(mine))
        left[i] = len(mine)
        for p, labels, tasks in mine:
            if labels is not None:
                parts[(i, p.key)] = (labels, {k: r for k, r in load_parts(b.out, p).items() if r.get("status") == "ok"})
                if not tasks:
                    merge_now.append((b, p))
            todo += tasks
    todo.sort(key=lambda t: -t.cost_s)
    index = {id(b): i for i, b in enumerate(batches)}
    done = failed = 0

    def point_landed(b: Batch, p: Point, result: Mapping[str, Any]) -> None:
        _write_point(b.out, p, result, b.meta)
        assert b.report is not None
        if result["status"] == "ok":
            b.report.done += 1
            _remove_parts(b.out, p)
        else:
            b.report.failed += 1
        left[index[id(b)]] -= 1
        if not left[index[id(b)]]:
            _finish(b, on_batch_done)

    def part_landed(t: Task, result: dict[str, Any]) -> None:
        assert t.part is not None
        labels, landed = parts[(index[id(t.batch)], t.point.key)]
        result = {**result, "part": labels[t.part]}
        if result["status"] == "ok":
            _write_part(t.batch.out, t.point, t.part, result)
        landed[t.part] = result
        if len(landed) < len(labels):
            return
        bad = [f"part {k} ({labels[k]}): {r['error']}" for k, r in sorted(landed.items()) if r["status"] != "ok"]
        if bad:
            point_landed(t.batch, t.point, {"status": "failed", "error": "; ".join(bad), "summary": {},
                                            "wall_s": sum(r["wall_s"] for r in landed.values())})
        else:
            point_landed(t.batch, t.point, merge_parts(t.point, [landed[k] for k in range(len(labels))]))

    for b, p in merge_now:
        labels, landed = parts[(index[id(b)], p.key)]
        point_landed(b, p, merge_parts(p, [landed[k] for k in range(len(labels))]))
    for i, b in enumerate(batches):
        if not left[i] and not any(bb is b for bb, _ in merge_now):
            _finish(b, on_batch_done)
    if not todo:
        return
    cluster = None
    if scheduler:
        client = Client(scheduler, timeout="30s")
    else:
        n = workers or max(1, os.cpu_count() or 1)
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        futures = {}
        waiting: dict[str, list[Task]] = {}

        def submit(t: Task):
            p = t.point
            if t.part is None:
                f = client.submit(run_point, p.experiment, p.overrides(), p.quick, key=t.key, retries=retries, pure=False,
                                  priority=t.cost_s)
            else:
                f = client.submit(run_part, p.experiment, p.overrides(), p.quick, t.part, key=t.key, retries=retries, pure=False,
                                  priority=t.cost_s)
            futures[f] = t
            return f

        first = []
        for t in todo:
            serial = t.batch.serial
            if serial and serial in waiting:
                waiting[serial].append(t)
                continue
            if serial:
                waiting[serial] = []
            first.append(submit(t))
        running = len(todo)
        if on_progress:
            on_progress(0, running, 0, len(todo))
        pending_futures = as_completed(first)
        for fut in pending_futures:
            t = futures[fut]
            serial = t.batch.serial
            if serial and waiting.get(serial):
                pending_futures.add(submit(waiting[serial].pop(0)))
            try:
                result = fut.result()
            except Exception as e:  # noqa: BLE001 - e.g. the task's worker kept dying
                result = {"status": "failed", "error": f"{type(e).__name__}: {e}", "summary": {}, "result": "", "wall_s": 0.0}
            running -= 1
            if result["status"] == "ok":
                done += 1
            else:
                failed += 1
            if t.part is None:
                point_landed(t.batch, t.point, result)
            else:
                part_landed(t, result)
            if on_progress:
                on_progress(done, running, failed, len(todo))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _finish(b: Batch, on_batch_done: Callable[[Batch], None] | None) -> None:
    assert b.report is not None
    b.report.dataset = write_dataset(b.out)
    if on_batch_done:
        on_batch_done(b)
