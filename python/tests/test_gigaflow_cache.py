"""Gigaflow caches from the CLI: the quick e2e experiment, the partitioning experiment and the
`innet bench gigaflow` command."""

import json
from pathlib import Path

PIPELINES = Path(__file__).resolve().parents[2] / "crates" / "ofswitch" / "pipelines"


def test_listed(innet_cmd):
    r = innet_cmd("list")
    assert r.returncode == 0, r.stderr
    for name in ("gigaflow.e2e", "gigaflow.partitioning", "gigaflow.tables", "gigaflow.revalidation", "gigaflow.coverage", "gigaflow.dynamic", "gigaflow.search", "gigaflow.cpu", "gigaflow.threads", "gigaflow.tuples"):
        assert name in r.stdout


def test_e2e_quick_summary(innet_cmd, tmp_path):
    r = innet_cmd("run", "gigaflow.e2e", "--quick", "--set", "pipelines=PSC", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for loc in ("high", "low"):
        mf, gf = s["pipelines"]["PSC"][loc]["mf"], s["pipelines"]["PSC"][loc]["gf"]
        for x in (mf, gf):
            for k in ("hit_rate", "misses", "entries", "rule_space_coverage", "mean_latency_us", "slowpath_us_per_miss"):
                assert k in x
            assert x["entries"] <= x["capacity"]
        # The feasible cross product dwarfs MF's entries; Table 2's count is floored at the upcalls.
        assert gf["rule_space_feasible_chains"] > 10 * mf["rule_space_coverage"]
        assert gf["rule_space_coverage"] >= gf["misses"]
        assert mf["sub_traversal_reoccurrence"] == 1.0 and gf["sub_traversal_reoccurrence"] > 1.0
    assert (tmp_path / "summary.json").is_file()
    for fig in ("hit_rate", "reoccurrence"):
        assert (tmp_path / f"{fig}.png").is_file()


def test_partitioning_quick(innet_cmd, tmp_path):
    r = innet_cmd("run", "gigaflow.partitioning", "--quick", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert set(s["schemes"]) == {"mf", "rnd", "dp", "dp-artifact", "1-1"}


def test_bad_parameter(innet_cmd, tmp_path):
    r = innet_cmd("run", "gigaflow.e2e", "--quick", "--set", "partitioning=zigzag", "--out", str(tmp_path))
    assert r.returncode == 2
    assert "partitioning" in r.stderr


def test_bench_gigaflow(innet_cmd):
    r = innet_cmd("bench", "gigaflow", "--flows", str(PIPELINES / "l3_router.flows"), "--packets", "300", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout.splitlines()[0])
    assert rep["pipeline"] == "l3_router.flows"
    assert rep["gf_slowpath_us_per_miss"] > 0 and rep["mf_lookups_per_s"] > 0
    r = innet_cmd("bench", "gigaflow", "--flows", "/nonexistent.flows")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_coverage_dynamic_search_quick_with_plots(innet_cmd, tmp_path):
    """Table 2, Fig. 18 and Fig. 17 in their quick forms: summaries and figures."""
    r = innet_cmd("run", "gigaflow.coverage", "--quick", "--out", str(tmp_path / "cov"), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for name in ("PSC", "OFD"):
        x = s["pipelines"][name]
        assert x["mf_coverage"] == x["mf_entries"]
        assert x["mf_coverage"] < x["gf_feasible_chains"] <= x["gf_chains_tag_only"]
        assert x["gf_coverage"] == max(x["gf_upcalls"], x["gf_mapping_sum"])
    assert (tmp_path / "cov" / "coverage.png").is_file()
    r = innet_cmd("run", "gigaflow.dynamic", "--quick", "--out", str(tmp_path / "dyn"), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["second_workload_at_packet"] > 0
    assert (tmp_path / "dyn" / "dynamic_hit_rate.png").is_file()
    r = innet_cmd("run", "gigaflow.search", "--quick", "--out", str(tmp_path / "search"), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for k in ("mf", "gf"):
        x = s["schemes"][k]
        assert x["same_entry"] + x["equal_priority_ties"] == x["queries"]
    assert (tmp_path / "search" / "search_lookups.png").is_file()


def test_cpu_quick_with_plot(innet_cmd, tmp_path):
    """Fig. 13 in its quick form: the three parts per miss and the stacked figure."""
    r = innet_cmd("run", "gigaflow.cpu", "--quick", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for name in ("PSC", "OFD"):
        x = s["pipelines"][name]
        assert x["traversal_us_per_miss"] > 0 and x["gigaflow_overhead_pct"] > 0
    assert (tmp_path / "cpu_breakdown.png").is_file()


def test_threads_quick_with_plot(innet_cmd, tmp_path):
    """Fig. 19 in its quick form: misses spread over 1 and 2 worker threads, MF and GF."""
    r = innet_cmd("run", "gigaflow.threads", "--quick", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for scheme in ("mf", "gf"):
        x = s["pipelines"]["PSC"][scheme]
        assert x["threads"]["1"]["misses_per_core_max"] == x["misses"] > x["threads"]["2"]["misses_per_core_max"]
    assert (tmp_path / "threads.png").is_file()


def test_tuples_quick_with_plot(innet_cmd, tmp_path):
    """Fig. 4 in its quick form: fewer header fields, more items per distinct tuple."""
    r = innet_cmd("run", "gigaflow.tuples", "--quick", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["ruleset"]["k1"] > s["ruleset"]["k3"] > s["ruleset"]["k5"] >= 1.0
    assert (tmp_path / "tuples.png").is_file()
