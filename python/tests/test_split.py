"""A sweep's runs as separate tasks (issue 34): each part simulated in a process of its own and
merged gives byte for byte the summary (and the tables) of the whole run in one process; a point
split on real Dask workers lands as the same point; an interrupted point resumes with its
missing parts only."""

import json
import multiprocessing

import pandas as pd
import pytest

from innet import _native, reproduce
from innet.reproduce import sweep

# Quick forms of every experiment that sweeps inside one run, shortened further so that each
# part is a second or two: (experiment, overrides).
SWEEPS = [
    ("switchv2p.cachesize", {"trace": "hadoop", "duration_ms": "0.1", "stop_ms": "100.0", "schemes": "nocache,switchv2p,direct,gwcache",
                             "cache_fractions": "0.1,10", "ecmp": "correlated"}),
    # Fig. 6's experiment on the small network (FT16-400K's build alone takes a minute here).
    ("switchv2p.alibaba", {"topology": "ft8_10k", "duration_ms": "0.1", "stop_ms": "100.0", "schemes": "nocache,switchv2p",
                           "cache_fractions": "0.5,10"}),
    ("switchv2p.gateways", {"duration_ms": "0.1", "stop_ms": "100.0", "gateway_counts": "40,4", "schemes": "nocache,switchv2p"}),
    ("switchv2p.topology", {"duration_ms": "0.1", "stop_ms": "100.0", "pod_counts": "1,8", "schemes": "nocache,switchv2p"}),
    ("switchv2p.pod_bytes", {"duration_ms": "0.1", "stop_ms": "100.0", "schemes": "switchv2p,gwcache"}),
    # Gigaflow's sweeps: a part is one (pipeline, locality) with every cache.
    ("gigaflow.e2e", {"pipelines": "PSC,OFD", "localities": "high,low", "rules": "500", "flows": "1500"}),
    ("gigaflow.tables", {"pipelines": "PSC,OLS", "localities": "high", "ks": "1,2,4", "rules": "500", "flows": "1500"}),
]


def _steady(tables):
    """The tables without the wall-clock columns (Gigaflow's clock_*: measured again in every run)."""
    return [(name, {c: v for c, v in cols.items() if not c.startswith("clock_")}) for name, cols in tables]


def _part_in_fresh_process(args):
    name, overrides, index = args
    from innet import _native as native

    return native.run_experiment_part(name, overrides, True, index)


@pytest.mark.parametrize("name,overrides", SWEEPS, ids=[s[0] for s in SWEEPS])
def test_parts_run_apart_merge_into_the_whole_runs_bytes(name, overrides):
    labels = _native.experiment_parts(name, overrides, True)
    assert labels and len(labels) >= 2, labels
    # Each part in a process of its own (nothing shared with the whole run below), two at a time.
    with multiprocessing.get_context("spawn").Pool(2, maxtasksperchild=1) as pool:
        parts = pool.map(_part_in_fresh_process, [(name, overrides, i) for i in range(len(labels))])
    merged_json, merged_tables = _native.merge_experiment_parts(name, overrides, True, parts)
    whole_json, whole_tables = _native.run_experiment(name, overrides, True, None)
    assert merged_json == whole_json
    assert _steady(merged_tables) == _steady(whole_tables)
    # The parts are the runs the whole run makes, and a wrong or missing part is refused.
    assert json.loads(parts[0])["part"] == labels[0]
    with pytest.raises(_native.UserInputError, match="part results given"):
        _native.merge_experiment_parts(name, overrides, True, parts[:-1])
    with pytest.raises(_native.UserInputError, match=r"part 0 is the result of"):
        _native.merge_experiment_parts(name, overrides, True, parts[1:] + parts[:1])


def test_experiments_that_do_not_sweep_run_whole():
    assert _native.experiment_parts("switchv2p.hits_by_layer", {}, True) is None
    assert _native.experiment_parts("basic.fattree", {}, True) is None
    assert _native.experiment_parts("gigaflow.search", {}, True) is None
    with pytest.raises(_native.UserInputError, match="gateway_counts"):
        _native.experiment_parts("switchv2p.gateways", {"gateway_counts": "40,6"}, True)


def _rows(out):
    """The point rows but for their times (and the tables' wall-clock columns)."""
    drop = {"wall_s", "cpu_s", "finished_at"}
    rows = {k: {c: v for c, v in r.items() if c not in drop} for k, r in sweep.load_points(out).items()}
    for r in rows.values():
        r["tables"] = {t: [{c: v for c, v in row.items() if not c.startswith("clock_")} for row in rs] for t, rs in r["tables"].items()}
    return rows


@pytest.mark.parametrize("name,overrides", [SWEEPS[0], SWEEPS[5]], ids=[SWEEPS[0][0], SWEEPS[5][0]])
def test_a_split_point_on_dask_workers_is_the_whole_point_and_resumes_part_by_part(tmp_path, name, overrides):
    points = sweep.expand(name, {}, fixed=overrides, quick=True)
    whole = sweep.run_sweep(points, tmp_path / "whole", workers=2, split=False)
    assert (whole.done, whole.failed) == (1, 0)
    # Interrupted after two of its parts: those are kept, the others run.
    labels = sweep.point_parts(points[0])
    for i in (0, 2):
        sweep._write_part(tmp_path / "split", points[0], i, {**sweep.run_part(name, points[0].overrides(), True, i), "part": labels[i]})
    progress = []
    split = sweep.run_sweep(points, tmp_path / "split", workers=2, on_progress=lambda *a: progress.append(a))
    assert (split.done, split.failed) == (1, 0)
    assert progress[-1] == (len(labels) - 2, 0, 0, len(labels) - 2)  # (done, running, failed, total) tasks
    assert _rows(tmp_path / "split") == _rows(tmp_path / "whole")
    assert not (tmp_path / "split" / sweep.PARTS_DIR / points[0].key).exists()  # merged: the parts are gone
    row = next(iter(sweep.load_points(tmp_path / "split").values()))
    assert row["cpu_s"] > 0 and row["tables"]["points"]
    df = pd.read_parquet(tmp_path / "split" / sweep.RESULTS_FILE)
    assert list(df["status"]) == ["ok"]


def test_measured_part_costs_price_the_parts_they_name(tmp_path):
    base = {"id": "f", "title": "t", "experiment": "gigaflow.tables", "cost_s": {"smoke": 1, "standard": 1, "full": 100}}
    fig = reproduce._figure("p", {**base, "part_cost_s": {"full": {"OLS": 40, "PSC low": 12}}}, "w")
    assert fig.part_cost_s == {"full": {"OLS": 40.0, "PSC low": 12.0}}
    points = sweep.expand("gigaflow.tables", {}, fixed={"pipelines": "PSC,OLS", "localities": "high,low"}, quick=True)
    batch = sweep.Batch(points, tmp_path, cost_s=fig.cost_s["full"], part_cost_s=fig.part_cost_s["full"])
    # A key's words all in the label: its measured seconds; the others share what is left of the
    # point's cost_s (its total), or nothing when the named parts already take it all.
    costs = {t.label.split(": ")[1]: t.cost_s for _, _, ts in sweep.pending(batch) for t in ts}
    assert costs == {"PSC high": 8.0, "PSC low": 12.0, "OLS high": 40.0, "OLS low": 40.0}
    batch.cost_s = 50
    assert sweep.part_costs(batch, ["PSC high", "OLS low", "OTL low"]) == [5.0, 40.0, 5.0]
    batch.cost_s = 30
    assert sweep.part_costs(batch, ["PSC high", "OLS low", "OTL low"]) == [0.0, 40.0, 0.0]
    for bad in ({"fulll": {"OLS": 1}}, {"full": {"OLS": 0}}, {"full": {" ": 3}}, {"full": {}}, {"full": {"OLS": True}}):
        with pytest.raises(reproduce.ManifestError, match=r"\(f\): part_cost_s"):
            reproduce._figure("p", {**base, "part_cost_s": bad}, "w")


def test_finished_tasks_rescale_the_estimates_of_the_rest(tmp_path):
    """A resumed run's plan learns from what its out directory already holds: once three of a
    batch's tasks have finished, the others' estimates are scaled by measured / estimated."""
    points = sweep.expand("gigaflow.tables", {}, fixed={"pipelines": "PSC,OLS", "localities": "high,low"}, quick=True)
    batch = sweep.Batch(points, tmp_path, cost_s=100.0)
    labels = sweep.point_parts(points[0])
    assert len(labels) == 4

    def estimates():
        return [t.cost_s for _, _, ts in sweep.pending(batch) for t in ts]

    assert estimates() == [25.0] * 4
    # Two finished parts that took half their estimate: too few to judge by.
    for i in (0, 1):
        sweep._write_part(tmp_path, points[0], i, {"status": "ok", "cpu_s": 12.5, "wall_s": 30.0, "part": labels[i]})
    assert estimates() == [25.0, 25.0]
    # A third, at twice its estimate: (12.5 + 12.5 + 50) / 75 = 1.
    sweep._write_part(tmp_path, points[0], 2, {"status": "ok", "cpu_s": 50.0, "wall_s": 60.0, "part": labels[2]})
    assert estimates() == [25.0]
    sweep._write_part(tmp_path, points[0], 2, {"status": "ok", "cpu_s": 12.5, "wall_s": 60.0, "part": labels[2]})
    assert estimates() == [12.5]
    # A part without a CPU time (an older row) says nothing; a serial batch is judged on wall time.
    sweep._write_part(tmp_path, points[0], 2, {"status": "ok", "wall_s": 60.0, "part": labels[2]})
    assert estimates() == [25.0]
    batch.serial = "real"
    assert estimates() == [25.0 * (30.0 + 30.0 + 60.0) / 75.0]


def test_a_point_of_another_commit_counts_as_done_only_while_it_is_still_current(tmp_path, monkeypatch):
    """A resumed run keeps a finished point that another build made when the page would call it
    current (only presentation or another system's crate changed since its commit), and runs it
    again when a change could move it, or when its commit cannot be named."""
    from innet import provenance

    old = sweep.expand("gigaflow.tables", {}, fixed={"pipelines": "PSC"}, quick=True, version="built-at-aaaa111")
    new = sweep.expand("gigaflow.tables", {}, fixed={"pipelines": "PSC"}, quick=True, version="built-at-bbbb222")
    assert old[0].key != new[0].key
    ok = {"status": "ok", "error": "", "summary": {"x": 1}, "wall_s": 1.0, "cpu_s": 1.0}
    sweep._write_point(tmp_path, old[0], ok, {"commit": "aaaa111"})
    batch = sweep.Batch(new, tmp_path, cost_s=10.0)
    monkeypatch.setattr(provenance, "current_commit", lambda *a: "bbbb222")
    changed: list[str] = []
    monkeypatch.setattr(provenance, "changed_paths", lambda a, b, *w: tuple(changed) if (a, b) == ("aaaa111", "bbbb222") else None)

    def to_run():
        return [p.key for p, _, _ in sweep.pending(batch)]

    for harmless in (["docs/gigaflow.md"], ["python/tests/test_split.py", "crates/switchv2p/src/hosts.rs"],
                     ["crates/orbitcache/src/lib.rs", "python/innet/report/__init__.py"]):
        changed[:] = harmless
        assert to_run() == [], harmless
    for moving in (["crates/gigaflow/src/cache.rs"], ["crates/pipebench/src/lib.rs"], ["crates/sim/src/event_queue.rs"],
                   ["docs/x.md", "python/innet/reproduce/sweep.py"]):
        changed[:] = moving
        assert to_run() == [new[0].key], moving
    changed[:] = ["docs/gigaflow.md"]
    for commit in ("aaaa111+dirty", None):  # a dirty tree's point, or one that names no commit
        sweep._write_point(tmp_path, old[0], ok, {"commit": commit} if commit else {})
        assert to_run() == [new[0].key], commit
    # The same commit, another build of it: done.
    sweep._write_point(tmp_path, old[0], ok, {"commit": "bbbb222"})
    assert to_run() == []
    # A failed point of the current commit is tried again.
    sweep._write_point(tmp_path, old[0], {**ok, "status": "failed", "error": "boom"}, {"commit": "bbbb222"})
    assert to_run() == [new[0].key]
