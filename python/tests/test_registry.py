"""One experiment registry: every experiment, simulated or on real packets, is listed, resolved
and run the same way (crates/registry; the appswitch ones by the Python function each names)."""

from __future__ import annotations

import innet
from innet.api import python_runner


# The paper experiments (39) plus gigaflow.cpu (Fig. 13), gigaflow.threads (Fig. 19),
# gigaflow.tuples (Fig. 4), switchvm.resources (Tables 3-4), appswitch.timeline (Figs. 13-14)
# and appswitch.cluster (Fig. 22).
EXPERIMENTS = 45


def test_every_experiment_is_listed_once_with_its_runner():
    exps = innet.list_experiments()
    names = [e["name"] for e in exps]
    assert len(names) == EXPERIMENTS and len(set(names)) == EXPERIMENTS, names
    python_run = {e["name"] for e in exps if e["runner"] == "python"}
    # Every appswitch experiment but the in-memory replay (Fig. 23, run in Rust) starts processes.
    assert python_run == {n for n in names if n.startswith("appswitch.")} - {"appswitch.throughput"}
    assert all(e["runner"] == "simulator" and "module" not in e for e in exps if e["name"] not in python_run)
    # Each real-packet experiment names the function that runs it (the registry is the only list).
    modules = {e["name"]: e["module"] for e in exps if e["runner"] == "python"}
    assert all(m.startswith("innet.appswitch.") for m in modules.values()), modules
    assert all(callable(python_runner(m)) for m in modules.values()), modules
    assert modules["appswitch.turnaround"] == "innet.appswitch.experiments:turnaround"
    for e in exps:
        assert e["params"] and all(p["doc"] and p["default"] for p in e["params"]), e["name"]


def test_real_packet_experiment_parameters_are_checked_before_anything_starts(innet_cmd):
    r = innet_cmd("run", "appswitch.turnaround", "--set", "queries=many")
    assert r.returncode == 2, r.stderr
    assert "'queries'" in r.stderr and "integer" in r.stderr and "Traceback" not in r.stderr
    r = innet_cmd("run", "appswitch.cachesize", "--set", "sizes=4,lots")
    assert r.returncode == 2, r.stderr
    # The registry's rule and wording for a list item, as for every Rust experiment's list.
    assert "parameter 'sizes': expected each item to be a whole number, got 'lots'" in r.stderr, r.stderr
    r = innet_cmd("run", "appswitch.skew", "--set", "zipf_s=1")
    assert r.returncode == 2 and "'zipf_s'" in r.stderr and "zipfs" in r.stderr, r.stderr
