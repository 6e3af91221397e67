"""`innet gigaflow pipeline|traffic|traversals`: Pipebench on the command line."""

import json


def test_pipeline_prints_a_flow_file_the_tracer_accepts(innet_cmd, tmp_path):
    r = innet_cmd("gigaflow", "pipeline", "OLS", "--profile", "acl", "--rules", "200", "--seed", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# Pipebench OLS")
    path = tmp_path / "ols.flows"
    path.write_text(r.stdout)
    t = innet_cmd("vswitch", "trace", str(path), "in_port=1,tcp,nw_dst=10.0.0.1,tp_dst=80")
    assert t.returncode == 0, t.stderr
    again = innet_cmd("gigaflow", "pipeline", "ols", "--rules", "200", "--seed", "1")
    assert again.stdout == r.stdout


def test_traffic_is_csv_in_time_order(innet_cmd):
    r = innet_cmd("gigaflow", "traffic", "PSC", "--rules", "100", "--flows", "500", "--locality", "low")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "time_ns,flow,in_port,dl_src,dl_dst,nw_proto,nw_src,nw_dst,tp_src,tp_dst"
    times = [int(x.split(",")[0]) for x in lines[1:]]
    assert len(times) >= 500 and times == sorted(times)
    assert len({x.split(",")[1] for x in lines[1:]}) == 500
    # Window timing numbers flows by their first packet.
    firsts = []
    for x in lines[1:]:
        f = int(x.split(",")[1])
        if f not in firsts:
            firsts.append(f)
    assert firsts == list(range(500))
    r = innet_cmd("gigaflow", "traffic", "PSC", "--rules", "100", "--flows", "500", "--locality", "low", "--timing", "arrivals")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == lines[0] and r.stdout != "\n".join(lines) + "\n"
    r = innet_cmd("gigaflow", "traffic", "PSC", "--timing", "burst")
    assert r.returncode == 2


def test_traversals_match_table_1(innet_cmd):
    r = innet_cmd("gigaflow", "traversals", "OTL", "--rules", "500", "--flows", "5000")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["paper_traversals"] == 11 and v["spec_traversals"] == 11 and v["traffic_traversals"] == 11


def test_bad_input_is_a_one_line_error(innet_cmd):
    r = innet_cmd("gigaflow", "pipeline", "XYZ")
    assert r.returncode == 2 and r.stdout == ""
    r = innet_cmd("gigaflow", "pipeline", "PSC", "--rules", "0")
    assert r.returncode == 2 and "rules must be" in r.stderr
