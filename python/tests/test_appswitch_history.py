"""The history checker's self-test (python/innet/appswitch/history.py, issue 36): synthetic
histories whose verdict is known — legal ones (concurrent writes, a read overlapping a write,
an indeterminate write applied late, a TTL'd value read before it expires and read as absent
after), stale reads (an overwritten value, an expired TTL value: the restart bug), reads from the
future, values never written, and hangs inside and outside fault windows. No root, no servers."""

from __future__ import annotations

from innet.appswitch.history import Op, ServerClock, check


def W(key, value, a, b, ttl=None, ok=True):
    return Op("write", key, value, a, b, ttl, ok=ok)


def R(key, value, a, b, client="c"):
    return Op("read", key, value, a, b, client=client)


def verdicts(ops, **kw):
    v = check(ops, **kw)
    return [i["verdict"] for i in v.impossible], v


def test_legal_histories_pass():
    ops = [
        W("k", "1", 1.0, 1.1),
        R("k", "1", 1.2, 1.3),
        # Two overlapping writes: either order may win, reads in the overlap may see either.
        W("k", "2", 2.0, 2.5), W("k", "3", 2.1, 2.4),
        R("k", "2", 2.6, 2.7), R("k", "3", 2.6, 2.7),
        # A read overlapping a write may see the old or the new value.
        W("k", "4", 3.0, 3.2), R("k", "3", 3.1, 3.15), R("k", "4", 3.1, 3.15),
        # An indeterminate write (timed out) may apply at any later time, or never.
        W("j", "x", 4.0, 4.05, ok=False), R("j", None, 4.5, 4.6), R("j", "x", 9.0, 9.1), R("j", "x", 5.0, 5.1),
        # A delete.
        W("k", None, 6.0, 6.1), R("k", None, 6.2, 6.3),
    ]
    got, v = verdicts(ops)
    assert got == [], v.impossible
    assert v.reads_checked == 9 and v.ok, v.hangs


def test_initial_values_are_legal_until_overwritten():
    ops = [R("a", "v0", 0.0, 0.1), W("a", "v1", 1.0, 1.1), R("a", "v0", 1.05, 1.2), R("a", "v0", 2.0, 2.1)]
    got, _ = verdicts(ops, initial={"a": "v0"})
    assert got == ["stale"]


def test_stale_reads_are_found():
    ops = [W("k", "1", 1.0, 1.1), W("k", "2", 2.0, 2.1), R("k", "1", 2.2, 2.3),
           # ... even when several clients write: "1" was overwritten for sure by 3.1.
           W("k", "3", 3.0, 3.1), R("k", "2", 3.2, 3.3, client="other")]
    got, v = verdicts(ops)
    assert got == ["stale", "stale"], v.impossible
    assert v.impossible[1]["client"] == "other"


def test_reads_from_the_future_and_unknown_values_are_found():
    ops = [W("k", "1", 1.0, 1.1), R("k", "2", 1.2, 1.3), W("k", "2", 1.5, 1.6), R("k", "zz", 2.0, 2.1)]
    got, _ = verdicts(ops)
    assert got == ["future", "unknown"]


def test_ttl_values_expire_by_cassandras_rule():
    ttl = 5
    w = W("t", "v", 10.0, 10.2, ttl)
    ops = [w,
           R("t", "v", 12.0, 12.1),            # live
           R("t", "v", 14.9, 15.0),            # may still be live (the write may have been applied at 10.2)
           R("t", None, 14.5, 14.6),           # may already be gone: floor(10.0) + 5 = 15 > 14.6, but
                                               # the checker cannot prove nowInSec, so lenient from 14.0
           R("t", None, 15.4, 15.5),           # gone
           R("t", "v", 15.3, 15.4)]            # the restart bug: served after it certainly expired
    got, v = verdicts(ops)
    assert got == ["stale"], v.impossible
    assert v.impossible[0]["invoked"] == 15.3
    # A server whose clock is coarse (memcached: 1 s ticks) may drop it that much later.
    late = [w, R("t", "v", 15.5, 15.6)]
    assert verdicts(late)[0] == ["stale"]
    got, v = verdicts(late, expiry_slack=1.0)
    assert got == [], v.impossible
    assert check(late).impossible[0]["after_expiry_s"] == 0.3
    # An expired value does not bring back the one it overwrote.
    ops = [W("t", "old", 1.0, 1.1), W("t", "new", 2.0, 2.1, 1), R("t", "old", 4.0, 4.1)]
    assert verdicts(ops)[0] == ["stale"]
    # Absent before any TTL could run out, after a write that surely applied: stale.
    ops = [W("t", "v", 1.0, 1.1, 5), R("t", None, 2.0, 2.1)]
    assert verdicts(ops)[0] == ["stale"]


def test_ttls_are_judged_on_the_servers_sampled_clock():
    """memcached expires on its own whole-second clock, advanced by a timer that runs late when
    its thread is starved: judged on that clock as sampled (stats `time`), an early `None` is
    legal exactly when the samples show the clock could have reached the write's reading + T,
    and a late value exactly when they show it could not."""
    def ticking(lag_from=None, lag_to=None, lag=0):
        # One sample per 0.1 s of wall time 0-30 s, answered at once; a punctual clock reads
        # floor(wall) + 1000, one that fell `lag` s behind reads less inside [lag_from, lag_to).
        out = []
        for i in range(300):
            x = i / 10
            c = int(x) + 1000
            if lag_from is not None and lag_from <= x < lag_to:
                c = max(int(lag_from) + 1000, c - lag)
            out.append((x, x + 0.001, c))
        return ServerClock(out)

    w = W("t", "v", 10.05, 10.06, 3)  # taken when the clock read 1010: gone once it reads 1013
    punctual = ticking()
    assert verdicts([w, R("t", None, 13.05, 13.06)], server_clock=punctual)[0] == []
    assert verdicts([w, R("t", "v", 12.95, 12.96)], server_clock=punctual)[0] == []
    # 1.7 s early on a punctual clock: impossible (the case issue 36's memcached runs showed) ...
    early = [w, R("t", None, 11.35, 11.36)]
    assert verdicts(early, server_clock=punctual)[0] == ["stale"]
    # ... legal when the write was taken while the clock stood 2 s behind (its timer late).
    stalled = ticking(lag_from=8.0, lag_to=10.5, lag=2)  # reads 1008 during [8, 10.5)
    got, v = verdicts(early, server_clock=stalled)
    assert got == [], v.impossible
    # A value read after the clock surely reached the write's reading + T: stale; while the
    # clock was stalled below it, legal.
    late = [w, R("t", "v", 13.5, 13.51)]
    assert verdicts(late, server_clock=punctual)[0] == ["stale"]
    assert verdicts(late, server_clock=ticking(lag_from=12.0, lag_to=14.0, lag=2))[0] == []
    # Outside the samples there is no bound either way (never blamed on a guess).
    assert verdicts([W("t", "v", 40.0, 40.01, 3), R("t", None, 40.5, 40.6)], server_clock=punctual)[0] == []
    # An overwrite that surely applied before the clock could reach the expiry still rules the
    # expiry out as an explanation.
    ops = [w, W("t", "w2", 11.0, 11.01), R("t", None, 13.5, 13.6)]
    assert verdicts(ops, server_clock=punctual)[0] == ["stale"]


def test_hangs_outside_fault_windows_are_found():
    ops = [R("k", None, 1.0, 1.1), R("k", None, 2.0, 9.0, client="slow"), W("k", "x", 20.0, None),
           R("k", "x", 30.0, 30.05), R("k", None, 40.0, 49.0, client="in-fault"),
           R("k", None, 50.0, 58.0, client="after-grace")]
    v = check(ops, faults=[(41.0, 43.0)], hang_s=5, grace_s=5)
    # "in-fault" waited 9 s, all but 1 s inside [36, 48]; "after-grace" waited 8 s, 6 of them
    # after the window and its grace; the write never completed (30 s outside the window).
    assert [(h["op"], h["client"]) for h in v.hangs] == [("read", "slow"), ("write", ""), ("read", "after-grace")], v.hangs
    assert not v.hangs[1]["completed"] and v.hangs[1]["waited_outside_faults_s"] == 26.0
    assert not v.ok
