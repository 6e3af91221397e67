"""appswitch.throughput (Fig. 23) in its --quick form: every case is in summary.json with its
packets per second, every replayed frame was counted and accounted for by the switch (forwarded,
or dropped because the switch answered it), and the hit captures are answered by the switch
while the miss captures all go to the server. No root or servers needed (in-memory replay)."""

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
        # SYN, SYN-ACK, ACK; (PREPARE exchange for CQL); request/answer/ACK per exchange.
        per_capture = 3 + 3 * exchanges + (3 if name.startswith("cql") else 0)
        assert c["frames_in_capture"] == per_capture, name
        assert c["frames"] == per_capture * repeat, name
        assert c["forwarded"] + c["dropped"] + c["malformed"] == c["frames"], (name, c)
        assert c["malformed"] == 0 and c["protocol_errors"] == 0, (name, c)
        assert c["hits"] + c["misses"] == exchanges * repeat, (name, c)
        if name.endswith("-hit"):
            # Only the very first read of the one key misses; the cache stays warm across replays.
            assert c["misses"] == 1 and c["generated"] >= c["hits"], (name, c)
        else:
            assert c["hits"] == 0 and c["generated"] == 0, (name, c)
            assert c["forwarded"] == c["frames"], (name, c)
    assert s["switch_pps"] == min(c["switch_pps"] for n, c in cases.items() if not n.startswith("forward"))
