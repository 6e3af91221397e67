"""The CLI contract of shared/DESIGN.md §4, exercised through the real command."""

import json

import pandas as pd


def test_list_names_the_experiments(innet_cmd):
    r = innet_cmd("list")
    assert r.returncode == 0, r.stderr
    assert "basic.fattree" in r.stdout


def test_run_json_prints_only_the_summary_and_writes_outputs(innet_cmd, tmp_path):
    out = tmp_path / "o"
    r = innet_cmd("run", "basic.fattree", "--quick", "--set", "flows=300", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)  # stdout is exactly one JSON document
    for key in ["flows", "fct_mean_us", "fct_p99_us", "first_packet_latency_mean_us", "delivered_packets",
                "dropped_packets", "conservation_ok", "seed"]:
        assert key in summary, key
    assert summary["conservation_ok"] is True
    assert summary["flows"] == 300
    assert (out / "summary.json").read_text() == r.stdout
    flows = pd.read_parquet(out / "flows.parquet")
    assert len(flows) == 300 and flows["completed"].all()
    assert (flows["fct_us"] >= flows["first_packet_latency_us"]).all()
    assert len(pd.read_csv(out / "switches.csv")) == 80
    assert list(out.glob("*.png")), "every run gets at least one plot"


def test_same_seed_gives_byte_identical_summaries(innet_cmd, tmp_path):
    a = innet_cmd("run", "basic.fattree", "--quick", "--set", "flows=200", "--out", str(tmp_path / "a"), "--json")
    b = innet_cmd("run", "basic.fattree", "--quick", "--set", "flows=200", "--out", str(tmp_path / "b"), "--json")
    c = innet_cmd("run", "basic.fattree", "--quick", "--set", "flows=200", "--set", "seed=2", "--out",
                  str(tmp_path / "c"), "--json")
    assert a.returncode == b.returncode == c.returncode == 0
    assert (tmp_path / "a" / "summary.json").read_bytes() == (tmp_path / "b" / "summary.json").read_bytes()
    assert a.stdout != c.stdout


def test_human_output_is_a_table(innet_cmd, tmp_path):
    r = innet_cmd("run", "basic.fattree", "--quick", "--set", "flows=100", "--out", str(tmp_path), "--no-plots")
    assert r.returncode == 0, r.stderr
    assert "fct_mean_us" in r.stdout and "conservation_ok" in r.stdout


def test_config_file_sets_parameters(innet_cmd, tmp_path):
    cfg = tmp_path / "spec.toml"
    cfg.write_text('experiment = "basic.fattree"\n[params]\nflows = 150\nload = 0.2\ntrace = "websearch"\n')
    r = innet_cmd("run", "basic.fattree", "--quick", "--config", str(cfg), "--out", str(tmp_path / "o"), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert (s["flows"], s["offered_load"], s["trace"]) == (150, 0.2, "websearch")


def _user_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    line = r.stderr.strip()
    assert line.startswith("innet: error:") and "\n" not in line, line
    for n in needles:
        assert n in line, (n, line)


def test_bad_input_gets_one_clear_line_and_exit_2(innet_cmd, tmp_path):
    _user_error(innet_cmd("run", "no.such"), "no.such", "basic.fattree")
    _user_error(innet_cmd("run", "basic.fattree", "--set", "load"), "key=value")
    _user_error(innet_cmd("run", "basic.fattree", "--quick", "--set", "lod=0.3"), "'lod'", "load")
    _user_error(innet_cmd("run", "basic.fattree", "--quick", "--set", "load=lots"), "'load'", "number")
    _user_error(innet_cmd("run", "basic.fattree", "--quick", "--set", "cores=10"), "topology.cores")
    _user_error(innet_cmd("run", "basic.fattree", "--quick", "--set", "trace=tpcc"), "'trace'")
    bad = tmp_path / "bad.toml"
    bad.write_text("[params\nflows = 1\n")
    _user_error(innet_cmd("run", "basic.fattree", "--config", str(bad)), str(bad))
    _user_error(innet_cmd("run", "basic.fattree", "--bogus-flag"), "bogus")
    _user_error(innet_cmd("bench", "sim", "--flows", str(tmp_path / "missing.htsim")), "missing.htsim")


def test_bench_sim_reports_speed_and_reads_htsim_lists(innet_cmd, tmp_path):
    f = tmp_path / "small.htsim"
    f.write_text("Nodes 16\nConnections 3\n0->15 id 1 start 0 size 20000\n1->2 id 2 start 100 size 5000\n"
                 "7->9 id 3 start 5000 size 1000\n")
    r = innet_cmd("bench", "sim", "--flows", str(f), "--k", "4", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["delivered_packets"] == 20 + 5 + 1
    assert rep["conservation_ok"] is True
    for k in ["packet_hops_per_s", "events_per_s", "wall_s", "peak_rss_mib"]:
        assert rep[k] > 0, k
