"""The application switch's Figs. 13 and 14 (§5.1, "packet transmission over time", a cache miss
and a cache hit) on real packets: one query's frames timestamped on every interface they cross
— the client's (`c0`), both switch ports (`p0` towards the client, `p1` towards the server) and
the server's (`s0`) — and the paper's marks placed on them. Declared in
crates/appswitch/src/experiments.rs (`appswitch.timeline`), which names ``timeline`` here to run it.

The paper recorded "packet transmission and reception times on all network interfaces of the
client machines, the application switch, and the server machine", then shifted each machine's
clock to line them up. Here the namespaces share the host's clock, so the kernel's packet
timestamps (SO_TIMESTAMPNS on an AF_PACKET socket per interface: the time the frame reached the
interface's taps, on receive and on transmit) need no alignment.

Marks (the paper's letters where it names them): A the client sends the query (`c0` out), B the
switch receives it (`p0` in), C the switch sends — on a miss the query on to the server (`p1`
out), on a hit its own answer back (`p0` out) —; on a miss D the server receives the query
(`s0` in), E the server sends its answer (`s0` out), F the switch receives the answer (`p1` in),
G the switch sends it on (`p0` out), H the client receives it (`c0` in); on a hit D the client
receives the switch's answer (`c0` in). B→C is the switch's time, D→E (miss) the server's.

The workload (`innet.appswitch.workload timeline`): per pair, a prepared SELECT of a key not read
before (a miss) and, `gap_ms` later, of the same key (a hit); every query alone on the wire.
The frames of query j are those between its send time and the next query's; the query frame is
followed across interfaces by its payload bytes (the switch rewrites sequence numbers, never
payloads it forwards), the answer by its connection and CQL stream id.

    python3 -m innet.appswitch.timeline capture IFACE OUT   # in the interface's namespace
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

CQL_PORT = 9042
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = 35
ETH_P_ALL = 0x0003
OP_EXECUTE, OP_RESULT = 0x0A, 0x08

# Interface → the point of the path it is (namespace roles filled in by the runner).
INTERFACES = ("c0", "p0", "p1", "s0")
MISS_MARKS = [("A", "c0", "query", True), ("B", "p0", "query", False), ("C", "p1", "query", True),
              ("D", "s0", "query", False), ("E", "s0", "answer", True), ("F", "p1", "answer", False),
              ("G", "p0", "answer", True), ("H", "c0", "answer", False)]
HIT_MARKS = [("A", "c0", "query", True), ("B", "p0", "query", False), ("C", "p0", "answer", True),
             ("D", "c0", "answer", False)]


def parse_frame(frame: bytes) -> dict | None:
    """A TCP/IPv4 segment to or from the CQL port with a payload: its ports, sequence number and
    payload (the headers read in Rust, `_native.tcp_segment`); None for anything else."""
    from innet import _native

    seg = _native.tcp_segment(frame)
    if seg is None or CQL_PORT not in seg[:2] or not seg[3]:
        return None
    sport, dport, seq, payload = seg
    return {"sport": sport, "dport": dport, "seq": seq, "payload": payload}


def cql_header(payload: bytes, protocol: int) -> tuple[int, int, int] | None:
    """(version byte, stream, opcode) of the first frame in an uncompressed segment payload: v4
    frames start the payload; v5 frames sit in a self-contained segment after its 6-byte header."""
    off = 6 if protocol >= 5 else 0
    if len(payload) < off + 9:
        return None
    version, _flags, stream, opcode = struct.unpack("!BBhB", payload[off:off + 5])
    return version, stream, opcode


def capture(iface: str, out: str) -> int:
    """Record every CQL data segment on `iface` until SIGTERM: JSON lines (kernel timestamp ns,
    outgoing?, ports, seq, payload length, payload SHA-1, the first 16 payload bytes in hex)."""
    stop = False

    def on_term(*_: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.settimeout(0.1)
    Path(out + ".ready").touch()
    with open(out, "w") as f:
        while not stop:
            try:
                data, anc, _flags, addr = s.recvmsg(262144, 64)
            except socket.timeout:
                continue
            except InterruptedError:
                continue
            seg = parse_frame(data)
            if seg is None:
                continue
            t_ns = None
            for level, typ, val in anc:
                if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", val[:16])
                    t_ns = sec * 1_000_000_000 + nsec
            if t_ns is None:
                t_ns = time.time_ns()
            p = seg["payload"]
            f.write(json.dumps({"t_ns": t_ns, "out": addr[2] == PACKET_OUTGOING, "sport": seg["sport"],
                                "dport": seg["dport"], "seq": seg["seq"], "len": len(p),
                                "sha1": hashlib.sha1(p).hexdigest(), "head": p[:16].hex()}) + "\n")
            f.flush()
    return 0


def _header(rec: dict, protocol: int) -> tuple[int, int, int] | None:
    return cql_header(bytes.fromhex(rec["head"]) + b"\0" * 16, protocol)


def place_marks(frames: dict[str, list[dict]], samples: list, protocol: int) -> list[dict]:
    """Per query of `samples` ((kind, key, send ns, turnaround µs), in send order): its marks
    {letter: (iface, t_ns)}, whether all were found, and how many of its frames reached the
    server side (`p1`/`s0`; a hit must have none)."""
    out = []
    for j, (kind, key, t_send, turnaround_us) in enumerate(samples):
        t_end = samples[j + 1][2] if j + 1 < len(samples) else float("inf")
        win = {i: sorted((r for r in frames.get(i, []) if t_send - 1_000_000 <= r["t_ns"] < t_end),
                         key=lambda r: r["t_ns"]) for i in INTERFACES}
        marks: dict[str, tuple[str, int]] = {}
        q = next((r for r in win["c0"] if r["out"] and r["dport"] == CQL_PORT
                  and (_header(r, protocol) or (0, 0, 0))[2] == OP_EXECUTE), None)
        to_server = 0
        if q is not None:
            _, stream, _ = _header(q, protocol)
            cport = q["sport"]

            def query_at(iface: str, outgoing: bool) -> dict | None:
                return next((r for r in win[iface] if r["out"] == outgoing and r["sha1"] == q["sha1"]
                             and r["dport"] == CQL_PORT), None)

            def answer_at(iface: str, outgoing: bool) -> dict | None:
                for r in win[iface]:
                    h = _header(r, protocol)
                    if (r["out"] == outgoing and r["sport"] == CQL_PORT and r["dport"] == cport and h
                            and h[0] & 0x80 and h[1] == stream and h[2] == OP_RESULT):
                        return r
                return None

            to_server = sum(1 for i in ("p1", "s0") for r in win[i] if cport in (r["sport"], r["dport"]))
            for letter, iface, what, outgoing in (MISS_MARKS if kind == "miss" else HIT_MARKS):
                r = query_at(iface, outgoing) if what == "query" else answer_at(iface, outgoing)
                if r is not None:
                    marks[letter] = (iface, r["t_ns"])
        want = MISS_MARKS if kind == "miss" else HIT_MARKS
        out.append({"query": j, "kind": kind, "key": key, "turnaround_us": turnaround_us, "marks": marks,
                    "complete": len(marks) == len(want), "frames_to_server": to_server})
    return out


def _us(marks: dict, a: str, b: str) -> float:
    return (marks[b][1] - marks[a][1]) / 1000.0


INTERVALS = {
    "miss": {"propagation_AB_us": ("A", "B"), "switch_BC_us": ("B", "C"), "server_DE_us": ("D", "E"),
             "switch_reply_FG_us": ("F", "G"), "total_us": ("A", "H")},
    "hit": {"propagation_AB_us": ("A", "B"), "switch_BC_us": ("B", "C"), "total_us": ("A", "D")},
}


def summarize(placed: list[dict]) -> tuple[dict, dict]:
    """Medians of the intervals per case, the paper's two comparisons, and the example query of
    each case (the one with the median total) as marks in µs after A."""
    cases, examples = {}, {}
    for kind, ivs in INTERVALS.items():
        ok = [p for p in placed if p["kind"] == kind and p["complete"]]
        c: dict[str, Any] = {"queries": sum(1 for p in placed if p["kind"] == kind), "complete": len(ok),
                             "frames_to_server": sum(p["frames_to_server"] for p in placed if p["kind"] == kind)}
        for name, (a, b) in ivs.items():
            c[name] = statistics.median(_us(p["marks"], a, b) for p in ok) if ok else None
        c["client_turnaround_us"] = statistics.median(p["turnaround_us"] for p in ok) if ok else None
        cases[kind] = c
        if ok:
            ex = sorted(ok, key=lambda p: _us(p["marks"], *ivs["total_us"]))[len(ok) // 2]
            examples[kind] = {"query": ex["query"], "marks": {k: {"iface": i, "t_us": (t - ex["marks"]["A"][1]) / 1000.0}
                                                              for k, (i, t) in ex["marks"].items()}}
    m, h = cases["miss"], cases["hit"]

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    derived = {
        "miss_switch_vs_server": ratio(m["switch_BC_us"], m["server_DE_us"]),
        "hit_switch_vs_miss_server": ratio(h["switch_BC_us"], m["server_DE_us"]),
        "hit_vs_miss_total": ratio(h["total_us"], m["total_us"]),
    }
    return {"cases": cases, "derived": derived}, examples


def timeline(name: str, p: dict[str, Any], progress: Callable[[float], None]) -> tuple[str, dict]:
    """appswitch.timeline: Cassandra in the server namespace, the §5.1 table of name length
    `table_len` loaded, the application switch on the switch's ports, a capture on each of the
    four interfaces, `pairs` miss/hit query pairs; marks placed and summarized."""
    from innet.appswitch.experiments import experiment_rig

    pairs, protocol, tlen = int(p["pairs"]), int(p["protocol"]), int(p["table_len"])
    gap_ms, kpt = float(p["gap_ms"]), int(p["keys_per_table"])
    if pairs < 1 or pairs > kpt or not 1 <= tlen <= 16:
        from innet import _native

        raise _native.UserInputError(f"appswitch.timeline: need 1 <= pairs <= keys_per_table ({kpt}) and "
                                     f"1 <= table_len <= 16; got pairs={pairs}, table_len={tlen}")
    tmp = Path(tempfile.mkdtemp(prefix="innet-fig13-"))
    caps: list[subprocess.Popen] = []
    with experiment_rig("appswitch.timeline", "axt") as t:
        progress(0.3)

        def workload(args: list[str]) -> dict:
            cmd = [sys.executable, "-m", "innet.appswitch.workload", *args, "--host", t.server_ip,
                   "--protocol", str(protocol), "--seed", str(p["seed"]), "--tables", str(tlen),
                   "--keys-per-table", str(kpt), "--only-len", str(tlen)]
            return json.loads(t.exec(t.client, cmd, timeout=1800).stdout)

        t.start_switch("forward")
        workload(["turnaround", "--setup", "--ops", "0"])
        t.stop_switch()
        stats_path = tmp / "switch-stats.json"
        t.start_switch("appswitch", {"protocol": "cql", "cache_entries": str(2 * pairs + 16)},
                       extra=["--stats-json", str(stats_path)])
        try:
            where = {"c0": t.client, "p0": t.sw, "p1": t.sw, "s0": t.server}
            for iface in INTERFACES:
                caps.append(t.popen(where[iface], [sys.executable, "-m", "innet.appswitch.timeline", "capture",
                                                   iface, str(tmp / f"{iface}.jsonl")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            deadline = time.time() + 30
            while not all((tmp / f"{i}.jsonl.ready").exists() for i in INTERFACES):
                dead = [c for c in caps if c.poll() is not None]
                if dead:
                    raise RuntimeError(f"a capture exited: {dead[0].stderr.read().decode(errors='replace')[-2000:]}")
                if time.time() > deadline:
                    raise RuntimeError("the captures did not open their sockets within 30 s")
                time.sleep(0.05)
            progress(0.4)
            samples = workload(["timeline", "--ops", str(pairs), "--gap-ms", str(gap_ms)])["samples"]
        finally:
            for c in caps:
                if c.poll() is None:
                    c.send_signal(signal.SIGTERM)
            for c in caps:
                try:
                    c.wait(10)
                except subprocess.TimeoutExpired:
                    c.kill()
        code, log = t.stop_switch()
        if code != 0:
            raise RuntimeError(f"switch exited {code}: {log[-2000:]}")
        stats = json.loads(stats_path.read_text())["program_report"]
        frames = {i: [json.loads(line) for line in (tmp / f"{i}.jsonl").read_text().splitlines() if line]
                  for i in INTERFACES}
    subprocess.run(["rm", "-rf", str(tmp)])
    progress(0.95)
    placed = place_marks(frames, samples, protocol)
    summ, examples = summarize(placed)
    summary = {"experiment": "appswitch.timeline", "params": p, "pairs": pairs, **summ,
               "switch_hits": int(stats["hits"]), "example": examples, "switch": stats}
    rows: dict[str, list] = {"query": [], "kind": [], "key": [], "mark": [], "iface": [], "t_us": []}
    for q in placed:
        if "A" not in q["marks"]:
            continue
        for letter, (iface, t_ns) in q["marks"].items():
            for col, v in (("query", q["query"]), ("kind", q["kind"]), ("key", q["key"]), ("mark", letter),
                           ("iface", iface), ("t_us", (t_ns - q["marks"]["A"][1]) / 1000.0)):
                rows[col].append(v)
    return json.dumps(summary, indent=2) + "\n", {"marks": rows}


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "capture":
        return capture(argv[1], argv[2])
    print("usage: python3 -m innet.appswitch.timeline capture IFACE OUT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
