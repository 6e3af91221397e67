"""SwitchV2P through the real CLI: every experiment's quick form writes its figure's data, a
plot, and the per-scheme summary the issue names; bad parameters name themselves."""

import json

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
