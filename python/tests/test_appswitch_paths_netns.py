"""Figs. 13-14 (appswitch.timeline: one query's frames on every interface) and Fig. 22
(appswitch.cluster: two Cassandra nodes and the coordinator-cache estimate): the marks' placement
and §5.7's formulas on made-up inputs (no root), then the quick forms against real Cassandra in
network namespaces (root; without it they FAIL saying so, never skip)."""

from __future__ import annotations

import hashlib
import struct

import pytest

from innet import _native
from innet.appswitch.cluster import estimate
from innet.appswitch.timeline import cql_header, parse_frame, place_marks, summarize


def frame(sport: int, dport: int, payload: bytes) -> bytes:
    """A PSH|ACK segment built in Rust, then 6 bytes of Ethernet padding (not payload)."""
    return _native.tcp_frame("10.77.0.1", "10.77.0.2", sport, dport, payload) + b"\0" * 6


def cql(version: int, stream: int, opcode: int, body: bytes = b"x" * 20) -> bytes:
    """A v5 self-contained segment holding one frame (CRCs zero: the marks never check them)."""
    f = struct.pack("!BBhBi", version, 0, stream, opcode, len(body)) + body
    return b"\0" * 6 + f


def rec(t_ns: int, out: bool, sport: int, dport: int, payload: bytes) -> dict:
    return {"t_ns": t_ns, "out": out, "sport": sport, "dport": dport, "seq": 1, "len": len(payload),
            "sha1": hashlib.sha1(payload).hexdigest(), "head": payload[:16].hex()}


def test_frames_are_parsed_to_their_cql_header_and_padding_is_not_payload():
    q = cql(0x05, 7, 0x0A)
    seg = parse_frame(frame(40000, 9042, q))
    assert seg is not None and seg["payload"] == q and seg["dport"] == 9042
    assert cql_header(seg["payload"], 5) == (0x05, 7, 0x0A)
    assert parse_frame(frame(40000, 80, q)) is None  # not CQL
    assert parse_frame(frame(40000, 9042, b"")) is None  # a bare ACK
    assert parse_frame(frame(40000, 9042, q)[:14 + 20 + 10]) is None  # cut inside the TCP header


def test_marks_follow_the_query_across_interfaces_and_a_hit_never_reaches_the_server():
    q, a = cql(0x05, 7, 0x0A), cql(0x85, 7, 0x08, b"rows")
    ctl = cql(0x05, 3, 0x07)  # the control connection's QUERY in the same window: not the query
    t = 1_000_000_000
    miss = {
        "c0": [rec(t + 5, True, 40001, 9042, ctl), rec(t + 10, True, 40000, 9042, q), rec(t + 900, False, 9042, 40000, a)],
        "p0": [rec(t + 12, False, 40000, 9042, q), rec(t + 890, True, 9042, 40000, a)],
        "p1": [rec(t + 60, True, 40000, 9042, q), rec(t + 700, False, 9042, 40000, a)],
        "s0": [rec(t + 62, False, 40000, 9042, q), rec(t + 690, True, 9042, 40000, a)],
    }
    h = 2_000_000_000
    hit = {"c0": [rec(h + 10, True, 40000, 9042, q), rec(h + 100, False, 9042, 40000, a)],
           "p0": [rec(h + 12, False, 40000, 9042, q), rec(h + 90, True, 9042, 40000, a)]}
    frames = {i: miss.get(i, []) + hit.get(i, []) for i in ("c0", "p0", "p1", "s0")}
    samples = [("miss", 0, t, 1.0), ("hit", 0, h, 0.1)]
    placed = place_marks(frames, samples, 5)
    m, k = placed
    assert m["complete"] and k["complete"], placed
    assert [m["marks"][x][1] - t for x in "ABCDEFGH"] == [10, 12, 60, 62, 690, 700, 890, 900]
    assert [k["marks"][x][1] - h for x in "ABCD"] == [10, 12, 90, 100]
    assert k["frames_to_server"] == 0 and m["frames_to_server"] == 4
    s, ex = summarize(placed)
    assert s["cases"]["miss"]["switch_BC_us"] == pytest.approx(0.048)
    assert s["cases"]["miss"]["server_DE_us"] == pytest.approx(0.628)
    assert s["cases"]["hit"]["total_us"] == pytest.approx(0.090)
    assert s["derived"]["hit_vs_miss_total"] == pytest.approx(90 / 890)
    assert ex["hit"]["marks"]["C"] == {"iface": "p0", "t_us": pytest.approx(0.080)}
    # An answer on another stream (another request's) is not this query's answer.
    frames["c0"][-1] = rec(h + 100, False, 9042, 40000, cql(0x85, 8, 0x08, b"rows"))
    assert not place_marks(frames, samples, 5)[1]["complete"]


def test_the_coordinator_cache_estimate_is_section_5_7s_formulas():
    b = estimate(0.34, normal_s1=1000.0, normal_s2=1400.0, hit=200.0, miss_s1=1100.0, miss_s2=1500.0)
    assert b["proposed_miss"] == pytest.approx(1300.0)
    assert b["proposed"] == pytest.approx(0.34 * 200 + 0.66 * 1300)
    assert b["existing_hit"] == 1000.0  # a coordinator-cache hit behaves like a key held by Server1
    assert b["existing_miss"] == pytest.approx(1200.0)
    assert b["existing"] == pytest.approx(0.34 * 1000 + 0.66 * 1200)
    assert (b["existing_miss_server1"], b["existing_miss_server2"]) == (1000.0, 1400.0)


def test_timeline_quick(cassandra_cache, tmp_path):
    """appswitch.timeline --quick: every miss is seen at all eight marks in path order, every hit
    at its four, and no frame of a hit's connection reaches the server side while it is answered;
    the switch counts exactly one hit per pair. The plot is drawn."""
    from innet import api, plots

    r = api.run("appswitch.timeline", quick=True)
    c = r.summary["cases"]
    pairs = r.summary["pairs"]
    assert c["miss"]["complete"] == pairs and c["hit"]["complete"] == pairs, c
    assert c["hit"]["frames_to_server"] == 0 and c["miss"]["frames_to_server"] >= 4 * pairs, c
    assert r.summary["switch_hits"] == pairs, r.summary["switch"]
    marks = r.tables["marks"]
    for q in set(marks["query"]):
        mine = marks[marks["query"] == q].set_index("mark")["t_us"]
        assert list(mine.sort_values().index) == sorted(mine.index), (q, mine)  # A < B < C < ...
    assert [p.name for p in plots.plot(r.experiment, r.summary, r.tables, tmp_path)] == ["timeline.png"]


def test_cluster_quick(cassandra_cache, tmp_path):
    """appswitch.cluster --quick: two nodes each hold some of the queried keys (RF 1), the switch's
    hits equal the LRU replay (checked inside), and the bars are §5.7's formulas of the measured
    means. The plot is drawn."""
    from innet import api, plots

    r = api.run("appswitch.cluster", quick=True)
    s = r.summary
    assert s["server1_keys_queried"] > 0 and s["server2_keys_queried"] > 0, s
    assert s["server1_keys_queried"] + s["server2_keys_queried"] == s["queries"]
    assert 0.1 < s["hit_ratio"] < 0.9 and s["hits"] == int(s["switch"]["hits"]), s
    m, b = s["measured_mean_us"], s["fig22_us"]
    assert b == pytest.approx(estimate(s["hit_ratio"], m["normal_server1"], m["normal_server2"], m["proposed_hit"],
                                       m["proposed_miss_server1"], m["proposed_miss_server2"]))
    assert [p.name for p in plots.plot(r.experiment, r.summary, r.tables, tmp_path)] == ["cluster.png"]
