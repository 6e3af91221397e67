"""Per-user answers through the application switch (issue 23, beyond the ten cases): Cassandra 5.0
with authentication and authorization on (scripts/cassandra.sh, INNET_CASSANDRA_AUTH=1: role and
permission caches off), the switch between client and server namespaces, and
python/innet/appswitch/semantics.py's `auth` scenario in the client namespace: an answer one
user may see must never be served to a user without SELECT permission, nor to the same user
after a REVOKE. Needs root: without it the test FAILS saying so."""

from __future__ import annotations

import json
import os
import sys

from netns_rig import program_counter, stop_switch_stats, topology_up


def test_no_user_gets_an_answer_cassandra_would_refuse_them(cassandra_cache, tmp_path):
    with topology_up(f"au{os.getpid() % 10000}", "the application switch", cassandra=True, auth=True) as t:
        stats = tmp_path / "stats.json"
        t.start_switch("appswitch", {"protocol": "cql", "cache_entries": "64"}, extra=["--stats-json", str(stats)])
        r = t.exec(t.client, [sys.executable, "-m", "innet.appswitch.semantics", "auth", "--host", t.server_ip],
                   check=False, timeout=600)
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
        out = json.loads(r.stdout)
        s = stop_switch_stats(t, stats)
        print(json.dumps({"reads": out["reads"], "switch": s.get("program_report")}))
        assert out["reads"] >= 20
        assert out["wrong"] == [], json.dumps(out["wrong"], indent=1)[:6000]
        # The reads went to Cassandra (the rule: authenticated connections are never answered).
        assert program_counter(s, "hits") == 0 and program_counter(s, "learned") == 0, s
        # The SASL exchanges parsed; the drivers' version negotiation (a DSE v2 and a DSE v1
        # connection per Cluster, refused by Cassandra) is not a protocol error (it read 6).
        assert program_counter(s, "protocol_errors") == 0, s
        assert program_counter(s, "unsupported_versions") > 0, s
