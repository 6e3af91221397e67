"""Sweeps on real Dask processes, resumption, failures kept, and the report rendered in Chromium."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from innet.reproduce import sweep


def _dask(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, **kw)


def _kill(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=30)


def test_grid_expansion_keys_points_by_parameters_and_code():
    g = sweep.parse_grid(["load=0.2,0.3", "schemes=a,b;c"])
    assert g == {"load": ["0.2", "0.3"], "schemes": ["a,b", "c"]}
    pts = sweep.expand("basic.fattree", g, repeat=2, fixed={"flows": "50"}, version="v1")
    assert len(pts) == 8 and len({p.key for p in pts}) == 8
    assert {p.overrides()["seed"] for p in pts} == {"1", "2"}
    again = sweep.expand("basic.fattree", g, repeat=2, fixed={"flows": "50"}, version="v1")
    assert [p.key for p in pts] == [p.key for p in again]
    other = sweep.expand("basic.fattree", g, repeat=2, fixed={"flows": "50"}, version="v2")
    assert not {p.key for p in pts} & {p.key for p in other}
    with pytest.raises(ValueError):
        sweep.parse_grid(["load"])


def test_sweep_resumes_and_keeps_the_error_of_a_failed_point(innet_cmd, tmp_path):
    args = ["sweep", "basic.fattree", "--grid", "load=0.2,0.3,7", "--set", "flows=40", "--quick", "--workers", "1",
            "--out", str(tmp_path)]
    r = innet_cmd(*args)
    assert r.returncode == 0, r.stderr
    assert "2 run, 0 already done, 1 failed" in r.stdout
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert len(df) == 3
    bad = df[df["param.load"] == "7"].iloc[0]
    assert bad["status"] == "failed" and "load" in bad["error"]
    assert (df[df["status"] == "ok"]["m.conservation_ok"]).all()
    r = innet_cmd(*args)
    assert r.returncode == 0, r.stderr
    assert "0 run, 2 already done, 1 failed" in r.stdout
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == 3


def _scheduler(tmp_path):
    """A `dask scheduler` process on loopback and its address."""
    sched_file = tmp_path / "scheduler.json"
    scheduler = _dask("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                      "--no-dashboard", "--scheduler-file", str(sched_file))
    for _ in range(150):
        try:  # the scheduler writes the file in more than one step: read it once it parses
            return scheduler, json.loads(sched_file.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            time.sleep(0.2)
    return scheduler, json.loads(sched_file.read_text())["address"]


def _worker(address, name, threads=1):
    return _dask("distributed.cli.dask_worker", address, "--nthreads", str(threads), "--no-nanny", "--no-dashboard", "--name", name)


def test_a_worker_killed_mid_sweep_loses_no_point(tmp_path):
    scheduler, address = _scheduler(tmp_path)
    workers = []
    try:
        for i in range(2):
            workers.append(_worker(address, f"w{i}"))
        loads = ["0.1", "0.15", "0.2", "0.25", "0.3", "0.35", "0.4", "0.45"]
        out = tmp_path / "out"
        cmd = [shutil.which("innet"), "sweep", "basic.fattree", "--grid", "load=" + ",".join(loads), "--set", "flows=400",
               "--quick", "--scheduler", address, "--out", str(out)]
        run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Kill the first worker as soon as the first point is in.
        deadline = time.time() + 120
        while time.time() < deadline and not list((out / "points").glob("*.json")):
            time.sleep(0.05)
        assert run.poll() is None, "the sweep ended before a worker could be killed"
        _kill(workers[0])
        stdout, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr
        assert "8 points: 8 run" in stdout, stdout
        df = pd.read_parquet(out / "results.parquet")
        expected = {p.key for p in sweep.expand("basic.fattree", {"load": loads}, fixed={"flows": "400"}, quick=True)}
        assert sorted(df["point"]) == sorted(expected), "every point exactly once"
        assert (df["status"] == "ok").all(), df[["status", "error"]]
    finally:
        for w in workers:
            _kill(w)
        _kill(scheduler)



def test_the_plan_asks_a_running_scheduler_for_its_workers(innet_cmd, tmp_path):
    from dask.distributed import Client

    scheduler, address = _scheduler(tmp_path)
    # Three worker processes, one of them with two threads: four task slots.
    workers = [_worker(address, f"w{i}", threads) for i, threads in enumerate((1, 1, 2))]
    try:
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(3, timeout=120)
        r = innet_cmd("reproduce", "switchv2p/fig9", "--tier", "full", "--dry-run", "--scheduler", address, "--out", str(tmp_path / "o"))
        assert r.returncode == 0, r.stderr
        assert f"on the Dask scheduler {address}'s 4 worker(s)" in r.stdout, r.stdout
        # --workers N plans for N whatever the scheduler has.
        r = innet_cmd("reproduce", "switchv2p/fig9", "--tier", "full", "--dry-run", "--scheduler", address, "--workers", "24",
                      "--out", str(tmp_path / "o"))
        assert "on 24 worker(s)" in r.stdout, r.stdout
    finally:
        for w in workers:
            _kill(w)
        _kill(scheduler)
    r = innet_cmd("reproduce", "switchv2p/fig9", "--tier", "full", "--dry-run", "--scheduler", address, "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and f"--scheduler {address}" in r.stderr, (r.stdout, r.stderr)

def test_on_a_users_cluster_the_real_packet_entries_run_on_the_clients_machine(tmp_path):
    """With a user's scheduler, a serial batch (a real-packet entry: root, namespaces, real
    servers) runs on the client's machine beside the cluster's simulations; the simulated batch
    runs on the cluster's workers."""
    from dask.distributed import Client

    from innet.reproduce import run as repro_run

    sim = sweep.Batch(sweep.expand("switchvm.latency", {}, quick=True), tmp_path / "sim", split=False)
    real = sweep.Batch(sweep.expand("switchvm.overhead", {}, quick=True), tmp_path / "real", serial="netns", split=False)
    scheduler, address = _scheduler(tmp_path)
    workers = [_worker(address, "w0")]
    done = []
    try:
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(1, timeout=120)
            client.get_task_stream()  # installs the scheduler's task-stream record from here on
            repro_run.run_jobs([sim, real], address, None, done.append)
            ran = {str(t["key"]) for t in client.get_task_stream()}
    finally:
        for w in workers:
            _kill(w)
        _kill(scheduler)
    assert sorted(id(b) for b in done) == sorted([id(sim), id(real)])
    for b in (sim, real):
        rows = sweep.load_points(b.out)
        assert len(rows) == 1 and all(r["status"] == "ok" for r in rows.values()), rows
    assert f"innet-{sim.points[0].key}" in ran, ran
    assert f"innet-{real.points[0].key}" not in ran, ran


def test_reproduce_on_a_users_dask_cluster_gives_the_local_runs_results(innet_cmd, tmp_path):
    """A user's own cluster: a `dask scheduler` and three `dask worker --nthreads 1` processes
    started by hand, `innet reproduce --scheduler`: the split point's parts run on those workers
    and the results are the local run's."""
    from dask.distributed import Client

    entry = "switchv2p/fig9"  # smoke tier: one point split into 4 parts (schemes x gateway counts)
    scheduler, address = _scheduler(tmp_path)
    workers = [_worker(address, f"w{i}") for i in range(3)]
    try:
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(3, timeout=120)
            client.get_task_stream()  # installs the scheduler's task-stream record from here on
            r = innet_cmd("reproduce", entry, "--tier", "smoke", "--scheduler", address, "--out", str(tmp_path / "cluster"))
            assert r.returncode == 0, r.stderr
            assert f"on the Dask scheduler {address}'s 3 worker(s)" in r.stdout, r.stdout
            ran = client.get_task_stream()
    finally:
        for w in workers:
            _kill(w)
        _kill(scheduler)
    parts = [t for t in ran if "-part" in str(t["key"])]
    assert len(parts) == 4 and len({t["worker"] for t in parts}) >= 2, ran
    r = innet_cmd("reproduce", entry, "--tier", "smoke", "--workers", "2", "--out", str(tmp_path / "local"))
    assert r.returncode == 0, r.stderr

    def summaries(out):
        rows = sweep.load_points(out / "smoke" / entry)
        assert len(rows) == 1 and all(row["status"] == "ok" for row in rows.values())
        return {k: {c: v for c, v in row.items() if c.startswith(("m.", "param."))} for k, row in rows.items()}

    assert summaries(tmp_path / "cluster") == summaries(tmp_path / "local")


def _chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.fail("Debian's chromium is not installed (scripts/setup.sh installs it)")


def test_the_report_renders_every_section_in_headless_chromium(innet_cmd, tmp_path):
    root = tmp_path / "rep"
    r = innet_cmd("reproduce", "switchvm", "--quick", "--workers", "2", "--out", str(root))
    assert r.returncode == 0, r.stderr
    r = innet_cmd("reproduce", "switchv2p/table4", "--quick", "--out", str(root))
    assert r.returncode == 0, r.stderr
    html_path = tmp_path / "report.html"
    md_path = tmp_path / "REPRODUCED.md"
    r = innet_cmd("report", str(root), "-o", str(html_path), "--markdown", str(md_path), "--quick")
    assert r.returncode == 0, r.stderr
    page = html_path.read_text()
    for paper in ["switchv2p", "orbitcache", "gigaflow", "switchvm", "appswitch"]:
        assert f"id='{paper}'" in page
    assert "data:image/png;base64," in page and "http://" not in page and "https://" not in page
    md = md_path.read_text()
    assert "smoke run: not comparable with the paper" in md and "| SwitchV2P: invalidation packets | 24 |" in md
    # The smoke tier's figures in a folder of their own, apart from the standard tier's page's.
    assert (tmp_path / "figures" / "reproduced-smoke" / "switchv2p-table4.png").exists()
    assert "](figures/reproduced-smoke/switchv2p-table4.png)" in md and not (tmp_path / "figures" / "reproduced").exists()
    chrome = _chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]
    shot = tmp_path / "report.png"
    r = subprocess.run([chrome, *flags, f"--screenshot={shot}", "--window-size=1200,4000", html_path.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000, r.stderr[-2000:]
    console_errors = [l for l in r.stderr.splitlines() if "CONSOLE" in l and ("rror" in l or "Uncaught" in l)]
    assert not console_errors, console_errors
    dom = subprocess.run([chrome, *flags, "--dump-dom", html_path.as_uri()], capture_output=True, text=True, timeout=120)
    for title in ["SwitchV2P", "OrbitCache", "Gigaflow", "SwitchVM", "application switch"]:
        assert title in dom.stdout, title
    assert dom.stdout.count("<img") >= 4
