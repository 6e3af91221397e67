#!/usr/bin/env python3
"""Steady-state cache misses per packet-hop, by source line and by data structure.

    python3 bench/cachegrind_steady.py LONG.out SHORT.out --hops N [--src DIR] [--lines 40]

LONG.out and SHORT.out are cachegrind outputs of two runs that differ only in length (e.g.
`valgrind --tool=cachegrind --cache-sim=yes --LL=1048576,16,64 --cachegrind-out-file=LONG.out
basic_run pods=50 tors_per_pod=8 servers_per_tor=32 spines_per_pod=8 cores=16 flows=4000`, and
the same with flows=1000); N is the difference of their packet-hops (delivered packets x mean
hops, from the two summaries). The difference of the two profiles is the steady state, without
the build and warm-up both runs share. It prints the last-level (read + write) and L1d misses
per hop of the top source lines (with the function they are inlined into and, from the checkout
at DIR, the line's text), then the last-level misses per hop summed by the data structure each
line loads. That assignment is by the line's text and function (see `structure`): it follows
the engine's code as of issue 24's fourth pass and needs revisiting when the hot path changes
(the fifth pass split the flow records and the flow list out of the hosts' share, for the UDP
flows of `ft16-1m`).
"""

from __future__ import annotations

import argparse
import collections
import linecache
import os
import sys


def load(path: str) -> tuple[list[str], dict]:
    """Counts per (file, line, function) of one cachegrind output."""
    events: list[str] = []
    fl = fn = ""
    rows: dict = collections.defaultdict(lambda: [0] * len(events))
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("fl="):
                fl = line[3:].strip()
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line[:1].isdigit():
                parts = line.split()
                r = rows[(fl, int(parts[0]), fn)]
                for i, v in enumerate(parts[1:]):
                    r[i] += int(v)
    if not events:
        sys.exit(f"{path}: not a cachegrind output (no 'events:' line)")
    return events, rows


def structure(fl: str, ln: int, fn: str, text: str) -> str:
    """The data structure a hot line loads (heuristic; see the module doc)."""
    std = fl.split("/library/")[-1]
    if "metrics.flows" in text or text.startswith(("rec.", "if rec.", "if let Some(rec)")):
        return "flow records (metrics.flows)"
    if "self.flows" in text or fl.endswith("apps.rs"):
        return "flow list (FlowSpec) and the flow driver"
    if any(t in fn for t in ("Host", "tcp::", "pump_")) or "/tcp/" in fl or fl.endswith("host.rs"):
        return "packet slot" if "net.pkt(" in text else "hosts + TCP (Conn, connection table, UDP sources)"
    if "event_queue" in fl or "EventQueue" in fn:
        return "event heap"
    if any(t in text for t in ("pkt.hops", "routing_ip()", "mix64(")) or "phv/" in fl or "PacketPool" in fn:
        return "packet slot"
    if ("option.rs" in std and ln in (745, 767)) or "non_null.rs" in std:
        return "packet slot"
    if "next_hop" in fn or fl.endswith("routing.rs"):
        return "FIB (routing tables)"
    if any(t in text for t in ("forwarded", "ingress_passes", "actions.is_empty")) or (
        "option.rs" in std and ln == 0 and "SimSwitch" in fn
    ):
        return "switch object (pipeline, program counters)"
    if any(t in text for t in ("max_queue_bytes", "tx_packets", "tx_bytes")):
        return "per-port counters (metrics.ports)"
    if any(t in text for t in ("rx_packets", ".receive(&mut self.net", "first_port", "buffer_used", "ingress_latency")) or (
        fl.endswith("network.rs") and ln == 0
    ):
        return "node info, node counters, node table"
    if "ptr/mod.rs" in std and ln in (1717, 1917):
        return "queue and wire FIFO buffers"
    if "vec_deque" in std or "raw_vec" in std or ("option.rs" in std and ln in (636, 662)) or fl.endswith(("network.rs", "engine.rs")):
        return "port state (Port: link, queue/wire headers, peer)"
    if "malloc" in fl or "memmove" in fl or "memcpy" in fl:
        return "allocator, memcpy"
    return "other"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("long")
    ap.add_argument("short")
    ap.add_argument("--hops", type=float, required=True, help="packet-hops of LONG minus those of SHORT")
    ap.add_argument("--src", default=".", help="checkout the binaries were built from (for line text)")
    ap.add_argument("--lines", type=int, default=40)
    a = ap.parse_args()
    if a.hops <= 0:
        sys.exit(f"--hops must be positive, got {a.hops}")
    events, rows = load(a.long)
    events_short, short = load(a.short)
    if events_short != events:
        sys.exit(f"{a.short}: events {events_short} differ from {a.long}'s {events}")
    for k, v in short.items():
        r = rows[k]
        for i, x in enumerate(v):
            r[i] -= x
    ix = {e: i for i, e in enumerate(events)}
    for need in ("Ir", "D1mr", "D1mw", "DLmr", "DLmw"):
        if need not in ix:
            sys.exit(f"{a.long}: no {need} counts (run cachegrind with --cache-sim=yes)")

    def ll(r: list[int]) -> float:
        return (r[ix["DLmr"]] + r[ix["DLmw"]]) / a.hops

    def text(fl: str, ln: int) -> str:
        marker = os.sep + "crates" + os.sep
        if marker not in fl:
            return ""
        return linecache.getline(os.path.join(a.src, "crates", fl.split(marker, 1)[1]), ln).strip()

    tot = [sum(r[i] for r in rows.values()) / a.hops for i in range(len(events))]
    print(
        f"per packet-hop: {tot[ix['Ir']]:.0f} instructions, {tot[ix['D1mr']] + tot[ix['D1mw']]:.1f} L1d misses, "
        f"{tot[ix['DLmr']] + tot[ix['DLmw']]:.2f} last-level misses ({tot[ix['DLmw']]:.2f} of them writes)"
    )
    print(f"\n{'LL/hop':>6} {'L1d/hop':>7}  line [function] text")
    for (fl, ln, fn), r in sorted(rows.items(), key=lambda kv: -ll(kv[1]))[: a.lines]:
        short_fl = fl.split("/library/")[-1].split(os.sep + "crates" + os.sep)[-1]
        d1 = (r[ix["D1mr"]] + r[ix["D1mw"]]) / a.hops
        print(f"{ll(r):6.2f} {d1:7.2f}  {short_fl}:{ln} [{fn[-60:]}] {text(fl, ln)[:70]}")
    by: collections.Counter = collections.Counter()
    for (fl, ln, fn), r in rows.items():
        by[structure(fl, ln, fn, text(fl, ln))] += ll(r)
    total = sum(by.values())
    print(f"\n{'last-level misses per packet-hop by data structure':<56} {'':>6}")
    for name, v in by.most_common():
        print(f"{name:<56} {v:6.2f} {100 * v / total:5.1f} %")
    print(f"{'total':<56} {total:6.2f}")


if __name__ == "__main__":
    main()
