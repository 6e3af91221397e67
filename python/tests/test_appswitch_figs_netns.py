"""The quick forms of appswitch.connections (Fig. 17) and appswitch.lexical (Fig. 19) against the
real Cassandra in network namespaces (python/innet/appswitch/passes.py). Needs root: without
namespaces the experiments raise and these tests FAIL saying so; they never skip."""

from __future__ import annotations


def test_connections_quick(cassandra_cache):
    """Fig. 17 quick: every query of every connection of both clients is answered, correctly; at
    every point the switch itself answered its hits (its counters: every read a hit or a miss,
    a request and a reply migrated per hit) and its hit count agrees with the timeline replay;
    and with one connection per client, hits are faster than misses.

    Timing is asserted only where the client's clock measures the path: with one connection per
    client the requests are sequential, and the hit and miss samples are interleaved within the
    same pass (so load changes reach both alike). With 8 connections each client's 8 threads
    share one Python interpreter, and the turnaround is mostly the client's own scheduling:
    two runs at load average ~30 measured hit / miss medians of 21.6 / 15.6 ms (1 client) and
    55.3 / 44.4 ms (2 clients) where a hit's packets take ~0.1 ms on the wire and a miss's
    ~4 ms (Figs. 13-14). The counters check the mechanism there instead, which load cannot
    flip."""
    from innet import api

    r = api.run("appswitch.connections", quick=True)
    pts = r.summary["points"]
    assert {(p["clients"], p["conns"]) for p in pts} == {(1, 1), (1, 8), (2, 1), (2, 8)}
    for p in pts:
        where = f"clients={p['clients']} conns={p['conns']}"
        assert set(p["turnaround_mean_us"]) == {"all", "hit", "miss", "normal"}, where
        assert p["errors"] == [], where
        assert p["answered"] == p["queries_sent"] == p["answered_normal"] == 150 * p["clients"], where
        assert p["wrong_answers"] == 0, where
        assert 0.1 < p["hit_ratio"] < 1.0, where
        # The timeline replay must agree with the switch's own counter (within concurrency slack).
        assert abs(p["hits_replay"] - p["hits_switch"]) <= max(3, 0.1 * p["hits_switch"]), where
        # Every read (a prepared SELECT of a cached table) is a hit or a miss, once; each hit's
        # request (an EXECUTE of >= 9 + 2 + 16 bytes) never reached the server and its reply (a
        # RESULT Rows) never came from it: α and β grow by them (as test_turnaround_quick_direction).
        sw = p["switch"]
        assert sw["hits"] == p["hits_switch"] and sw["hits"] + sw["misses"] == p["queries_sent"], (where, sw)
        assert sw["migrated_request_bytes"] >= 27 * sw["hits"] and sw["migrated_reply_bytes"] >= 9 * sw["hits"], (where, sw)
        assert sw["protocol_errors"] == 0, (where, sw)
        if p["conns"] == 1:
            med = p["turnaround_median_us"]
            assert med["hit"] < med["miss"], f"{where}: hits not faster than misses: {med}"
    # Two clients: the switch saw both source addresses' connections (twice the queries answered).
    assert sum(p["answered"] for p in pts if p["clients"] == 2) == 2 * sum(p["answered"] for p in pts if p["clients"] == 1)


def test_lexical_quick(cassandra_cache):
    """Fig. 19 quick: the fixed-offset parser finds exactly the keys the lexer finds (same hits on
    the same query sequence: wrong offsets would give no hits), normal has none, hits are faster."""
    from innet import api

    r = api.run("appswitch.lexical", quick=True)
    pts = {p["mode"]: p for p in r.summary["points"]}
    assert set(pts) == {"normal", "lexical", "fixed"}
    for mode, p in pts.items():
        assert set(p["turnaround_mean_us"]) == {"all", "hit", "miss", "normal"}, mode
        assert p["answered"] == p["queries_sent"] == 300, mode
    assert pts["normal"]["hit_ratio"] == 0.0
    assert pts["lexical"]["hit_ratio"] > 0.2
    assert pts["fixed"]["hit_ratio"] == pts["lexical"]["hit_ratio"]
    for mode in ("lexical", "fixed"):
        med = pts[mode]["turnaround_median_us"]
        assert med["hit"] < med["miss"] and med["hit"] < med["normal"], f"{mode}: {med}"
    assert pts["fixed"]["fixed_layout"] == {"table": [14, 14], "key": [40, 8]}
    assert isinstance(pts["lexical"]["lexical_vs_fixed"], float)


def test_timeline_replay_matches_sequential_lru_and_inflight_misses():
    """The hit classifier of the concurrent runs: on a sequential run it equals the plain LRU
    replay; a second request for a key whose first miss is still in flight is a miss too."""
    import random

    from innet.appswitch.experiments import lru_hits
    from innet.appswitch.passes import replay_hits_timeline

    rng = random.Random(3)
    keys = [rng.randrange(20) for _ in range(500)]
    seq = [(k, 10 * i, 10 * i + 5) for i, k in enumerate(keys)]
    assert replay_hits_timeline(seq, 8) == lru_hits(keys, 8)
    # Overlapping: A sent at 0 (answer at 100), A again at 50 (in flight: miss), A at 150: hit.
    assert replay_hits_timeline([("a", 0, 100), ("a", 50, 120), ("a", 150, 160)], 4) == [False, False, True]
    assert replay_hits_timeline([("a", 0, 1), ("a", 2, 3)], 0) == [False, False]
