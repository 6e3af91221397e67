"""appswitch.throughput (Fig. 23) in its --quick form: every case is in summary.json with its
packets per second, every replayed frame was counted and accounted for by the switch (forwarded,
or dropped because the switch answered it), and the hit captures (a live all-hits connection:
the server sees nothing of the requests the switch answers) are answered by the switch while the
miss captures all go to the server. No root or servers needed (in-memory replay, in Rust:
crates/appswitch/src/throughput.rs)."""

import json


def test_throughput_quick_counts_every_frame(innet_cmd, tmp_path):
    out = tmp_path / "o"
    r = innet_cmd("run", "appswitch.throughput", "--quick", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert (out / "summary.json").read_text() == r.stdout
    exchanges, repeat = int(s["params"]["exchanges"]), int(s["params"]["repeat"])
    cases = s["cases"]
    assert set(cases) == {"cql-hit", "cql-miss", "redis-hit", "redis-miss", "forward-on-cql-miss"}
    for name, c in cases.items():
        assert c["switch_pps"] > 0 and c["ns_per_frame"] > 0, name
        assert s["switch_pps_by_case"][name] == c["switch_pps"]
        if name.startswith("forward"):
            continue
        # SYN, SYN-ACK, ACK; (PREPARE and system_schema.tables exchanges for CQL);
        # request/answer/ACK per exchange the
        # server answers, request/ACK per exchange the switch answers; a hit capture starts with
        # a forwarded write (CQL UPDATE, Redis SET), and the CQL one with one learning miss.
        cql, hit = name.startswith("cql"), name.endswith("-hit")
        by_switch = (exchanges - 1 if cql else exchanges) if hit else 0
        forwarded_exchanges = (2 if cql else 0) + (1 if hit else 0) + exchanges - by_switch
        per_capture = 3 + 3 * forwarded_exchanges + 2 * by_switch
        assert c["frames_in_capture"] == per_capture, name
        assert c["frames"] == per_capture * repeat, name
        assert c["forwarded"] + c["dropped"] + c["malformed"] == c["frames"], (name, c)
        assert c["malformed"] == 0 and c["protocol_errors"] == 0, (name, c)
        assert c["hits"] + c["misses"] == exchanges * repeat, (name, c)
        if hit:
            # Every replay: CQL's first read of the key misses (the write before it invalidated
            # it) and is learned; every other read is answered by the switch.
            assert c["hits"] == by_switch * repeat, (name, c)
            assert c["misses"] == (repeat if cql else 0) and c["generated"] >= c["hits"], (name, c)
        else:
            assert c["hits"] == 0 and c["generated"] == 0, (name, c)
            assert c["forwarded"] == c["frames"], (name, c)
    assert s["switch_pps"] == min(c["switch_pps"] for n, c in cases.items() if not n.startswith("forward"))
