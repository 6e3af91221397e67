"""`innet vswitch trace` prints OVS-style traces of the gigaflow slow path and rejects bad input."""

import json
from pathlib import Path

PIPELINES = Path(__file__).resolve().parents[2] / "crates" / "ofswitch" / "pipelines"


def test_trace_prints_tables_megaflow_and_actions(innet_cmd):
    r = innet_cmd("vswitch", "trace", str(PIPELINES / "l3_router.flows"),
                  "in_port=1,tcp,nw_src=192.168.0.1,nw_dst=10.1.2.4,tp_dst=80")
    assert r.returncode == 0, r.stderr
    assert " 1. ip,nw_dst=10.1.2.0/24, priority 124" in r.stdout
    assert "Megaflow: recirc_id=0,eth,tcp,in_port=1,dl_dst=00:00:00:00:00:00,nw_dst=10.1.2.4/30,nw_frag=no,tp_dst=80" in r.stdout
    assert "Actions: set(dl_dst=00:00:00:00:02:02),output:2" in r.stdout


def test_trace_json(innet_cmd):
    r = innet_cmd("vswitch", "trace", str(PIPELINES / "acl_regs.flows"),
                  "in_port=1,tcp,nw_src=10.1.1.1,nw_dst=10.20.30.4,tp_dst=80", "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert [t["table"] for t in v["tables"]] == [0, 1, 2, 3]
    assert v["outputs"] == [2]


def test_bad_flow_file_names_line_and_column(innet_cmd, tmp_path):
    bad = tmp_path / "bad.flows"
    bad.write_text("table=0,actions=drop\ntable=0,in_port=1,actions=output:2,frobnicate\n")
    r = innet_cmd("vswitch", "trace", str(bad), "in_port=1")
    assert r.returncode == 2
    assert "line 2, column 36" in r.stderr and r.stdout == ""


def test_trace_takes_icmp_type_and_code(innet_cmd):
    r = innet_cmd("vswitch", "trace", str(PIPELINES / "l3_router.flows"),
                  "in_port=1,icmp,nw_dst=10.1.2.3,icmp_type=8,icmp_code=0")
    assert r.returncode == 0, r.stderr
    assert "nw_frag=no,icmp_type=0x8/0xff" in r.stdout
    r = innet_cmd("vswitch", "trace", str(PIPELINES / "l3_router.flows"), "in_port=1,icmp,icmp_type=8/0xf0")
    assert r.returncode == 2 and "exact" in r.stderr


def test_trace_follows_recirculation_with_ct_next(innet_cmd):
    # ct(table=30) recirculates: the second pass is traced with the state --ct-next gives it.
    packet = "in_port=1,tcp,nw_src=10.1.0.1,nw_dst=10.2.0.1,nw_ttl=64,tp_dst=80"
    r = innet_cmd("vswitch", "trace", str(PIPELINES / "conntrack.flows"), packet, "--ct-next", "trk,est", "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert "nw_ttl=64" in v["megaflow"] and v["outputs"] == []
    (second,) = v["recirculations"]
    assert [t["table"] for t in second["tables"]] == [30, 35]
    assert "ct_state=+est-inv+trk,ct_zone=5" in second["megaflow"] and second["outputs"] == [3]
    r = innet_cmd("vswitch", "trace", str(PIPELINES / "conntrack.flows"), packet)
    assert r.returncode == 0 and "resume conntrack with ct_state=new|trk" in r.stdout
    r = innet_cmd("vswitch", "trace", str(PIPELINES / "conntrack.flows"), packet, "--ct-next", "trk,nonsense")
    assert r.returncode == 2 and "--ct-next" in r.stderr


def test_ct_next_states_ovs_refuses_are_refused(innet_cmd):
    # As ofproto/trace (validate_ct_state): the message names the state and the broken rule.
    packet = "in_port=1,tcp,nw_src=10.1.0.1,nw_dst=10.2.0.1,nw_ttl=64,tp_dst=80"
    for state, why in [("trk,new,rpl", '"new" and "rpy" are mutually exclusive'),
                       ("trk,new,est", '"new" and "est" are mutually exclusive'),
                       ("trk,inv,est", 'when "inv" is set, only "trk" may also be set'),
                       ("new", 'If "trk" is unset, no other flags are set')]:
        r = innet_cmd("vswitch", "trace", str(PIPELINES / "conntrack.flows"), packet, "--ct-next", state)
        assert r.returncode == 2, (state, r.stdout, r.stderr)
        assert f"--ct-next {state}: " in r.stderr and why in r.stderr and "Traceback" not in r.stderr
        assert r.stdout == ""


def test_stateful_cases_trace_like_ovs(innet_cmd):
    # dec_ttl at TTL 1 two tables deep ends only that table: the callers' outputs still run.
    flows = str(PIPELINES / "stateful_cases.flows")
    r = innet_cmd("vswitch", "trace", flows, "in_port=1,tcp,nw_ttl=1")
    assert r.returncode == 0, r.stderr
    assert "Actions: output:3,set(dl_src=00:00:5e:00:01:01),output:2" in r.stdout
    assert ">> IPv4 decrement TTL exception" in r.stdout
    # Two ct(table=N) in one pass: both clones are traced; a committed ct_mark is matched later.
    r = innet_cmd("vswitch", "trace", flows, "in_port=2,tcp,nw_ttl=64", "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert len(v["recirculations"]) == 4
    r = innet_cmd("vswitch", "trace", flows, "in_port=2,udp,nw_ttl=64")
    assert "ct_mark=0x5,ct_label=0x3/0x3,ip, priority 40" in r.stdout and "Actions: output:4" in r.stdout
