"""OrbitCache through the real CLI: every experiment's quick form writes its figure's data, a
plot, and the per-scheme summary the issue names; bad parameters name themselves."""

import json

import pandas as pd
import pytest

KEYS = ["throughput_rps", "server_throughput_rps", "switch_throughput_rps", "latency_p50_us", "latency_p99_us",
        "overflow_ratio", "balancing_efficiency", "per_server_rps"]

EXPERIMENTS = {
    "orbitcache.skew": "throughput.png",
    "orbitcache.server_load": "server_load.png",
    "orbitcache.latency": "latency.png",
    "orbitcache.writes": "throughput.png",
    "orbitcache.scalability": "throughput.png",
    "orbitcache.workloads": "throughput.png",
    "orbitcache.cachesize": "throughput.png",
    "orbitcache.keysize": "throughput.png",
    "orbitcache.valuesize": "throughput.png",
    "orbitcache.pegasus": "throughput.png",
    "orbitcache.dynamic": "dynamic.png",
}


def _run(innet_cmd, tmp_path, exp, *sets):
    args = ["run", exp, "--quick", "--out", str(tmp_path), "--json"]
    for s in sets:
        args += ["--set", s]
    r = innet_cmd(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("exp,plot", sorted(EXPERIMENTS.items()))
def test_quick_forms_write_summary_tables_and_plot(innet_cmd, tmp_path, exp, plot):
    # Shorter than the built-in quick forms, to keep CI fast; the directions are Rust tests.
    sets = ["duration_us=3000", "refine=1"] if exp != "orbitcache.dynamic" else ["duration_us=30000", "hot_in_period_us=10000"]
    s = _run(innet_cmd, tmp_path, exp, *sets)
    assert s["schemes"], s
    for scheme, m in s["schemes"].items():
        for k in KEYS:
            assert k in m, (scheme, k)
        assert m["throughput_rps"] > 0
    pts = pd.read_parquet(tmp_path / "points.parquet")
    assert set(pts["scheme"]) == set(s["schemes"])
    assert (tmp_path / plot).exists()


def test_skew_quick_orders_the_schemes_like_the_paper(innet_cmd, tmp_path):
    s = _run(innet_cmd, tmp_path, "orbitcache.skew")
    t = {k: v["throughput_rps"] for k, v in s["schemes"].items()}
    assert t["orbitcache"] > 2 * t["nocache"] and t["orbitcache"] > 1.5 * t["netcache"], t


def test_bad_parameters_name_the_field(innet_cmd, tmp_path):
    r = innet_cmd("run", "orbitcache.skew", "--quick", "--out", str(tmp_path), "--set", "schemes=orbitcache,memcached")
    assert r.returncode != 0 and "memcached" in r.stderr
    r = innet_cmd("run", "orbitcache.valuesize", "--quick", "--out", str(tmp_path), "--set", "axis=64,2000")
    assert r.returncode != 0 and "fixed_value_bytes" in r.stderr and "1416" in r.stderr
    r = innet_cmd("run", "orbitcache.skew", "--quick", "--out", str(tmp_path), "--set", "zipf_alpha=high")
    assert r.returncode != 0 and "zipf_alpha" in r.stderr
