#!/usr/bin/env python3
"""Replays a flow file and a pcap through the Gigaflow authors' gvs (built by
bench/artifacts/gigaflow.sh) and prints its counters as JSON.

    bench/artifacts/gvs_run.py --gvs BUILD/src --flows X.flows --pcap X.pcap [--in-ports X.inport]
        [--tables 4 --entries 8000] [--max-masks 64] [--per-packet N] [--keep]

What it does, as the artifact's Ansible orchestrator does on its testbed (docs/results/artifacts.md):
- starts gvs's ovsdb-server and ovs-vswitchd (``--enable-dummy=override``: every netdev is a
  dummy, no host interface is created, no system OVS is touched) in a private directory
  (OVS_RUNDIR/OVS_DBDIR/OVS_LOGDIR/OVS_PKGDATADIR/OVS_SYSCONFDIR all point there);
- ``other_config``: gigaflow-enable, gigaflow-lookup-enable, gigaflow-tables-limit,
  gigaflow-max-entries, gigaflow-max-masks (the orchestrator's 64), max-idle=600000 (the
  orchestrator's; no entry expires during a run); EMC/SMC need no setting: gvs's
  dfc_processing hard-disables both;
- a ``datapath_type=netdev``, ``fail-mode=secure`` bridge with dummy ports p1..pN
  (ofport_request=i), flows loaded with ``ovs-ofctl -O OpenFlow13 add-flows``;
- replays the pcap with ``netdev-dummy/receive pI HEX``, one packet per unixctl call, on the
  packet's input port (``--in-ports``: one byte per packet, written by
  crates/gigaflow/examples/export_e2e_inputs.rs; default port 1). A dummy rx queue hands the
  datapath one packet per main-loop iteration, and the call returns before the next is sent,
  so the datapath sees the packets one at a time in file order (no batching effects);
- reads ``dpif-netdev/pmd-stats-show`` and ``dpif-netdev/pmd-perf-show`` of the main (non-PMD)
  thread, which handles dummy ports: packets, megaflow (dpcls) hits, upcalls, Gigaflow hits,
  per-table occupancy, recycled entries, masks and priority usage, the slow path's cycle split;
- ``dpctl/dump-flows`` counts the Megaflow (dpcls) entries installed beside the Gigaflow tables.

``--per-packet N``: for the first N packets, read the counters after each packet and record
what it was (gigaflow hit, megaflow hit, upcall) and, with gigaflow-debug-enable, the mapping
gvs logged for each upcall (``G<k>:[first table,last table]->next table``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class GvsError(Exception):
    pass


def read_pcap(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if len(data) < 24:
        raise GvsError(f"{path}: not a pcap file (shorter than its 24-byte header)")
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        e = ">"
    else:
        raise GvsError(f"{path}: not a pcap file (magic 0x{magic:08x})")
    linktype = struct.unpack(e + "I", data[20:24])[0]
    if linktype != 1:
        raise GvsError(f"{path}: link type {linktype}, expected 1 (Ethernet)")
    out, at = [], 24
    while at < len(data):
        if at + 16 > len(data):
            raise GvsError(f"{path}: truncated record header at byte {at}")
        _, _, incl, _ = struct.unpack(e + "IIII", data[at:at + 16])
        at += 16
        if at + incl > len(data):
            raise GvsError(f"{path}: truncated packet {len(out)} at byte {at}")
        out.append(data[at:at + incl])
        at += incl
    return out


class Unixctl:
    """A persistent JSON-RPC connection to an OVS daemon's unixctl socket."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.buf = b""
        self.dec = json.JSONDecoder()
        self.next_id = 0

    def call(self, method: str, *params: str) -> str:
        self.next_id += 1
        self.sock.sendall(json.dumps({"method": method, "params": list(params), "id": self.next_id}).encode())
        while True:
            text = self.buf.decode(errors="replace").lstrip()
            if text:
                try:
                    obj, end = self.dec.raw_decode(text)
                    self.buf = text[end:].encode()
                    if obj.get("error"):
                        raise GvsError(f"{method}: {obj['error']}")
                    return obj.get("result") or ""
                except json.JSONDecodeError:
                    pass
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise GvsError(f"{method}: unixctl connection closed")
            self.buf += chunk


class Gvs:
    def __init__(self, src: Path, n_ports: int, other_config: dict[str, str], keep: bool):
        self.src = src
        self.bins = {b: src / p for b, p in {
            "ovs-vswitchd": "vswitchd/ovs-vswitchd", "ovsdb-server": "ovsdb/ovsdb-server", "ovsdb-tool": "ovsdb/ovsdb-tool",
            "ovs-vsctl": "utilities/ovs-vsctl", "ovs-appctl": "utilities/ovs-appctl", "ovs-ofctl": "utilities/ovs-ofctl"}.items()}
        for name, p in self.bins.items():
            if not os.access(p, os.X_OK):
                raise GvsError(f"{p}: {name} missing; build gvs first: bench/artifacts/gigaflow.sh GVS_REPO")
        schema = src / "vswitchd/vswitch.ovsschema"
        if not schema.is_file():
            raise GvsError(f"{schema} missing (not a gvs source tree?)")
        self.keep = keep
        self.dir = Path(tempfile.mkdtemp(prefix="innet-gvs-"))
        self.env = dict(os.environ, OVS_RUNDIR=str(self.dir), OVS_DBDIR=str(self.dir), OVS_LOGDIR=str(self.dir),
                        OVS_PKGDATADIR=str(src / "vswitchd"), OVS_SYSCONFDIR=str(self.dir), OVS_BINDIR=str(src / "utilities"))
        self.db = f"unix:{self.dir}/db.sock"
        self.bridge = "br0"
        self.started = []
        try:
            self._run("ovsdb-tool", "create", f"{self.dir}/conf.db", str(schema))
            self._run("ovsdb-server", f"{self.dir}/conf.db", f"--remote=punix:{self.dir}/db.sock", f"--pidfile={self.dir}/ovsdb-server.pid",
                      f"--unixctl={self.dir}/ovsdb-server.ctl", "--detach", f"--log-file={self.dir}/ovsdb-server.log", "-vconsole:off")
            self.started.append("ovsdb-server")
            self.vsctl("--no-wait", "init")
            oc = [f"other_config:{k}={v}" for k, v in other_config.items()]
            self.vsctl("--no-wait", "set", "Open_vSwitch", ".", *oc)
            self._run("ovs-vswitchd", self.db, "--enable-dummy=override", f"--pidfile={self.dir}/ovs-vswitchd.pid",
                      f"--unixctl={self.dir}/ovs-vswitchd.ctl", "--detach", f"--log-file={self.dir}/ovs-vswitchd.log", "-vconsole:off")
            self.started.append("ovs-vswitchd")
            self.vsctl("add-br", self.bridge, "--", "set", "bridge", self.bridge, "datapath_type=netdev", "fail-mode=secure")
            for i in range(1, n_ports + 1):
                self.vsctl("add-port", self.bridge, f"p{i}", "--", "set", "interface", f"p{i}", "type=dummy", f"ofport_request={i}")
            self.ctl = Unixctl(self.dir / "ovs-vswitchd.ctl")
            self.mgmt = f"unix:{self.dir}/{self.bridge}.mgmt"
        except BaseException:
            self.stop()
            raise

    def _run(self, prog: str, *args: str, stdin: bytes | None = None) -> str:
        r = subprocess.run([str(self.bins[prog]), *args], env=self.env, input=stdin, capture_output=True)
        if r.returncode != 0:
            raise GvsError(f"{prog} {' '.join(args[:4])}...: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}")
        return r.stdout.decode(errors="replace")

    def vsctl(self, *args: str) -> str:
        return self._run("ovs-vsctl", f"--db={self.db}", "--timeout=30", *args)

    def load_flows(self, flow_file: Path) -> int:
        self._run("ovs-ofctl", "-O", "OpenFlow13", "add-flows", self.mgmt, str(flow_file))
        out = self._run("ovs-ofctl", "-O", "OpenFlow13", "dump-aggregate", self.mgmt)
        m = re.search(r"flow_count=(\d+)", out)
        return int(m.group(1)) if m else -1

    def stop(self) -> None:
        for name in reversed(self.started):
            pidfile = self.dir / f"{name}.pid"
            try:
                pid = int(pidfile.read_text().strip())
                os.kill(pid, 15)
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.02)
            except (OSError, ValueError):
                pass
        self.started = []
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def main_thread_section(text: str) -> str:
    """The part of a pmd-stats-show / pmd-perf-show reply about the main (non-PMD) thread."""
    m = re.search(r"main thread:(.*?)(?=\n\S|\Z)", text, re.S)
    if not m:
        raise GvsError(f"no 'main thread' section in:\n{text}")
    return m.group(1)


def num(pattern: str, text: str, cast=int, default=None):
    m = re.search(pattern, text)
    if not m:
        if default is not None:
            return default
        raise GvsError(f"'{pattern}' not found in:\n{text}")
    return cast(m.group(1))


def parse_stats(show: str) -> dict:
    s = main_thread_section(show)
    tables = []
    for m in re.finditer(r"- Table-(\d+):\s+(\d+) /\s*(\d+) \(\s*([\d.]+) % recyle rate,\s*(\d+) masks, priority usage: ([^)]*)\)", s):
        prio = {int(a): int(b) for a, b in re.findall(r"(\d+): (\d+)", m.group(6))}
        tables.append({"table": int(m.group(1)), "entries": int(m.group(2)), "recycled": int(m.group(3)), "masks": int(m.group(5)), "priority_usage": prio})
    return {
        "packets": num(r"packets received: (\d+)", s),
        "recirculations": num(r"packet recirculations: (\d+)", s),
        "megaflow_hits": num(r"megaflow hits: (\d+)", s),
        "upcalls": num(r"miss with success upcall: (\d+)", s),
        "failed_upcalls": num(r"miss with failed upcall: (\d+)", s),
        "gigaflow_hits": num(r"gigaflow hits: (\d+)", s),
        "gigaflow_entries": num(r"gigaflow occupancy: (\d+) /", s),
        "gigaflow_recycled": num(r"gigaflow occupancy: \d+ / (\d+)", s),
        "tables": tables,
    }


def parse_perf(perf: str) -> dict:
    s = main_thread_section(perf)
    out = {}
    for key, label in [("upcall_cycles", "Upcall cycles"), ("lookup_cycles", "- Lookup cycles"), ("mapping_cycles", "- Mapping cycles"),
                       ("optimizer_cycles", "- Optimizer"), ("composition_cycles", "- Composition"), ("setup_cycles", "- Setup cycles")]:
        out[key] = num(re.escape(label) + r":\s+(\d+)", s, default=-1)
    out["unique_mappings"] = num(r"Unique mappings:\s+(\d+)", s, default=-1)
    out["rule_space"] = num(r"Rule space:\s+(\d+)", s, default=-1)
    return out


def count_megaflows(dump: str) -> int:
    return sum(1 for line in dump.splitlines() if "actions:" in line)


def replay(args) -> dict:
    pkts = read_pcap(args.pcap)
    if args.limit:
        pkts = pkts[:args.limit]
    if args.in_ports:
        ports = list(args.in_ports.read_bytes())
        if len(ports) < len(pkts):
            raise GvsError(f"{args.in_ports}: {len(ports)} input ports for {len(pkts)} packets")
    else:
        ports = [1] * len(pkts)
    n_ports = max(max(ports[:len(pkts)], default=1), args.ports)
    oc = {"gigaflow-enable": "true", "gigaflow-lookup-enable": "true", "gigaflow-tables-limit": str(args.tables),
          "gigaflow-max-entries": str(args.entries), "gigaflow-max-masks": str(args.max_masks), "max-idle": "600000",
          "gigaflow-debug-enable": "true" if args.per_packet else "false"}
    g = Gvs(args.gvs, n_ports, oc, args.keep)
    try:
        t0 = time.monotonic()
        n_flows = g.load_flows(args.flows)
        t_load = time.monotonic() - t0
        c = g.ctl
        c.call("dpif-netdev/pmd-stats-clear")
        per_packet = []
        log = g.dir / "ovs-vswitchd.log"
        log_at = log.stat().st_size if log.exists() else 0
        prev = parse_stats(c.call("dpif-netdev/pmd-stats-show")) if args.per_packet else None
        t0 = time.monotonic()
        last_port, done = None, 0
        for i, (p, port) in enumerate(zip(pkts, ports)):
            # Packets on one port queue in order (FIFO, at most 100). Before a packet on
            # another port, or 50 outstanding, wait until the datapath has taken every packet
            # sent, so the datapath sees the file's order across ports too.
            if last_port is not None and (port != last_port or i - done >= 50):
                wait_for(c, i)
                done = i
            c.call("netdev-dummy/receive", f"p{port}", p.hex())
            last_port = port
            if i < args.per_packet:
                cur = wait_for(c, i + 1)
                done = i + 1
                kind = "gigaflow" if cur["gigaflow_hits"] > prev["gigaflow_hits"] else "megaflow" if cur["megaflow_hits"] > prev["megaflow_hits"] else "upcall" if cur["upcalls"] > prev["upcalls"] else "lost"
                rec = {"i": i, "in_port": port, "kind": kind, "entries": [t["entries"] for t in cur["tables"]], "recycled": [t["recycled"] for t in cur["tables"]], "masks": [t["masks"] for t in cur["tables"]]}
                if log.exists():
                    with open(log, "rb") as f:
                        f.seek(log_at)
                        new = f.read().decode(errors="replace")
                        log_at += len(new.encode())
                    rec["mappings"] = re.findall(r"mapping: (.*)", new)
                per_packet.append(rec)
                prev = cur
        final = wait_for(c, len(pkts))
        t_replay = time.monotonic() - t0
        perf = parse_perf(c.call("dpif-netdev/pmd-perf-show"))
        dump = c.call("dpctl/dump-flows")
        out = {"packets_sent": len(pkts), "flow_file_flows": n_flows, "config": oc, "stats": final, "perf": perf,
               "megaflow_entries": count_megaflows(dump), "load_s": round(t_load, 3), "replay_s": round(t_replay, 3)}
        if args.per_packet:
            out["per_packet"] = per_packet
        if args.dump:
            Path(args.dump).write_text(dump)
        if args.keep:
            out["run_dir"] = str(g.dir)
        return out
    finally:
        g.stop()


def wait_for(c: Unixctl, n: int) -> dict:
    """The counters once the datapath has received `n` packets (it takes one per main-loop iteration)."""
    for k in range(20000):
        s = parse_stats(c.call("dpif-netdev/pmd-stats-show"))
        if s["packets"] >= n:
            return s
        if k > 10:
            time.sleep(0.0005)
    raise GvsError(f"gvs received {s['packets']} of {n} packets (dummy rx queue overflow?)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gvs", type=Path, default=Path.home() / ".cache/innet/artifacts/gvs/src", help="gvs source tree built by bench/artifacts/gigaflow.sh")
    ap.add_argument("--flows", type=Path, required=True, help="flow file (ovs-ofctl add-flows, OpenFlow 1.3)")
    ap.add_argument("--pcap", type=Path, required=True, help="Ethernet pcap to replay")
    ap.add_argument("--in-ports", type=Path, help="one byte per packet: its input port (default: every packet on port 1)")
    ap.add_argument("--ports", type=int, default=4, help="dummy ports to create (at least the largest input port)")
    ap.add_argument("--tables", type=int, default=4, help="gigaflow-tables-limit (MF: 1)")
    ap.add_argument("--entries", type=int, default=8000, help="gigaflow-max-entries per table (MF: 32000)")
    ap.add_argument("--max-masks", type=int, default=64, help="gigaflow-max-masks (the orchestrator's 64)")
    ap.add_argument("--limit", type=int, default=0, help="replay only the first N packets")
    ap.add_argument("--per-packet", type=int, default=0, help="record the outcome and mapping of each of the first N packets")
    ap.add_argument("--dump", help="write dpctl/dump-flows (the Megaflow dpcls) to this file")
    ap.add_argument("--keep", action="store_true", help="keep the run directory (logs, db)")
    args = ap.parse_args()
    for p in (args.flows, args.pcap):
        if not p.is_file():
            sys.exit(f"gvs_run: {p}: no such file")
    try:
        print(json.dumps(replay(args), indent=1))
    except GvsError as e:
        sys.exit(f"gvs_run: {e}")


if __name__ == "__main__":
    main()
