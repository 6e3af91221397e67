"""SwitchV2P through the real CLI: every experiment's quick form writes its figure's data, a
plot, and the per-scheme summary the issue names; bad parameters name themselves."""

import json
from pathlib import Path

import pandas as pd
import pytest

KEYS = ["hit_rate", "fct_mean_us", "fct_improvement", "first_packet_latency_mean_us", "fpl_improvement",
        "gateway_packets", "avg_packet_hops"]


def _run(innet_cmd, tmp_path, exp, *sets):
    args = ["run", exp, "--quick", "--out", str(tmp_path), "--json"]
    for s in sets:
        args += ["--set", s]
    r = innet_cmd(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_cachesize_quick_has_every_scheme_and_a_figure(innet_cmd, tmp_path):
    s = _run(innet_cmd, tmp_path, "switchv2p.cachesize", "duration_ms=0.3", "cache_fractions=0.1,1")
    for scheme in ["nocache", "locallearning", "gwcache", "switchv2p"]:
        for k in KEYS:
            assert k in s["schemes"][scheme], (scheme, k)
    pts = pd.read_parquet(tmp_path / "points.parquet")
    assert set(pts["cache_fraction"]) == {0.1, 1.0} | {0.5}  # NoCache runs at the default size
    assert (tmp_path / "cachesize.png").exists()


def test_migration_quick_reports_table4(innet_cmd, tmp_path):
    s = _run(innet_cmd, tmp_path, "switchv2p.migration", "incast_packets=300", "migrate_at_us=150")
    full = s["schemes"]["switchv2p"]
    for k in ["misdelivered_packets", "invalidation_packets", "last_misdelivered_us", "gateway_packets_fraction"]:
        assert k in full
    assert full["misdelivered_packets"] > 0
    assert s["schemes"]["switchv2p_nots"]["invalidation_packets"] >= full["invalidation_packets"]
    assert (tmp_path / "migration.png").exists()


@pytest.mark.parametrize("exp,extra", [
    ("switchv2p.hits_by_layer", ["duration_ms=0.3"]),
    ("switchv2p.pod_bytes", ["duration_ms=0.2", "schemes=nocache,switchv2p"]),
    ("switchv2p.gateways", ["duration_ms=0.2", "schemes=nocache,switchv2p"]),
    ("switchv2p.topology", ["duration_ms=0.2", "schemes=nocache,switchv2p"]),
    ("switchv2p.alibaba", ["duration_ms=0.1", "schemes=nocache,switchv2p"]),
    ("switchv2p.cachesize", ["trace=microbursts", "duration_ms=0.5", "cache_fractions=0.5", "schemes=nocache,switchv2p"]),
    ("switchv2p.cachesize", ["trace=video", "duration_ms=2", "cache_fractions=0.5", "schemes=nocache,switchv2p"]),
])
def test_other_experiments_run_and_plot(innet_cmd, tmp_path, exp, extra):
    s = _run(innet_cmd, tmp_path, exp, *extra)
    assert s["experiment"] == exp
    assert list(tmp_path.glob("*.png"))


def test_bad_scheme_and_trace_are_named(innet_cmd, tmp_path):
    r = innet_cmd("run", "switchv2p.cachesize", "--quick", "--set", "schemes=nocache,magic", "--out", str(tmp_path))
    assert r.returncode == 2 and "schemes" in r.stderr and "magic" in r.stderr, r.stderr
    r = innet_cmd("run", "switchv2p.cachesize", "--quick", "--set", "trace_file=/nonexistent.csv", "--out", str(tmp_path))
    assert r.returncode == 2 and "/nonexistent.csv" in r.stderr, r.stderr


CALLGRAPH = Path(__file__).resolve().parents[2] / "crates" / "workloads" / "tests" / "data" / "mscallgraph_released.csv"


def test_alibaba_runs_the_real_call_graph_and_its_conversion(innet_cmd, tmp_path):
    """`trace_file` takes Alibaba's released call-graph CSV: its 10 RPC/HTTP calls (of 21, the
    rest placeholders, a self-call, mc/db/mq) run as 10 flows; the converter's CSV runs the same
    rows and gives the same results, and its placement file covers FT16-400K."""
    s = _run(innet_cmd, tmp_path / "cg", "switchv2p.alibaba", f"trace_file={CALLGRAPH}", "duration_ms=10")
    for scheme in ["nocache", "switchv2p"]:
        assert s["schemes"][scheme]["flows"] == 10, s["schemes"][scheme]
        assert s["schemes"][scheme]["completed_flows"] == 10
    out, placement, names = tmp_path / "alibaba.csv", tmp_path / "placement.json", tmp_path / "names.csv"
    r = innet_cmd("switchv2p", "convert-alibaba", str(CALLGRAPH), "-o", str(out), "--placement", str(placement),
                  "--names", str(names), "--duration-ms", "10", "--json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert (stats["flows"], stats["calls"], stats["unknown_end"], stats["self_calls"]) == (10, 21, 4, 1)
    assert stats["other_rpctype"] == {"db": 2, "mc": 2, "mq": 1, "userdefined": 1}
    lines = out.read_text().splitlines()
    assert len(lines) == 10 and lines[0] == "0,1,39138,1,212"
    p = json.loads(placement.read_text())
    assert list(p)[:3] == ["p1", "p2", "p3"] and len(p) == 12_800 and p["p2"][0] == "32"
    assert names.read_text().splitlines()[1:] == ["0,b65fdc9bfef6b497", "1,7695b43b41732a0f", "2,35114acfb54c54fb", "3,1e5dd1f5843e50b9"]
    s2 = _run(innet_cmd, tmp_path / "conv", "switchv2p.alibaba", f"trace_file={out}", "duration_ms=10")
    assert s2["schemes"] == s["schemes"]
    # The text form names what it left out.
    r = innet_cmd("switchv2p", "convert-alibaba", str(CALLGRAPH), "-o", str(out), "--duration-ms", "10")
    assert r.returncode == 0 and "10 flows between 4 VMs" in r.stdout and "unknown caller or callee 4" in r.stdout, r.stdout


def test_bad_call_graphs_name_file_and_line(innet_cmd, tmp_path):
    bad = tmp_path / "MSCallGraph_bad.csv"
    bad.write_text(",traceid,timestamp,rpcid,um,rpctype,interface,rt\n0,T,1,0.1,a,rpc,i,1\n")
    r = innet_cmd("run", "switchv2p.alibaba", "--quick", "--set", f"trace_file={bad}", "--out", str(tmp_path))
    assert r.returncode == 2 and f"{bad}:1: the call-graph header has no column 'dm'" in r.stderr, r.stderr
    bad.write_text(",traceid,timestamp,rpcid,um,rpctype,dm,interface,rt\n0,T,1,0.1,a,rpc,b,i,1\n1,T,x1,0.2,a,rpc,b,i,1\n")
    r = innet_cmd("switchv2p", "convert-alibaba", str(bad), "-o", str(tmp_path / "o.csv"))
    assert r.returncode == 2 and f"{bad}:3: column timestamp must be" in r.stderr, r.stderr
    r = innet_cmd("switchv2p", "convert-alibaba", str(tmp_path / "none.csv"), "-o", str(tmp_path / "o.csv"))
    assert r.returncode == 2 and "none.csv: no such file" in r.stderr, r.stderr
