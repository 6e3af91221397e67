#!/usr/bin/env python3
"""The SwitchV2P authors' ns-3 program and innet on identical inputs, side by side.

    switchv2p_compare.py table4 --ns3 NS3_HOME --out DIR
    switchv2p_compare.py fig5   --ns3 NS3_HOME --out DIR [--trace-ms 1.0] [--sizes 0.01,0.5,1500]
                                [--schemes nocache,locallearning,gwcache,switchv2p] [--jobs 2]
    switchv2p_compare.py report --out DIR          # the markdown tables of what DIR holds
    switchv2p_compare.py hystart --out DIR [--rules ns3,rfc9406] [--seeds 1,2,3] [--ecmp artifact] [--cache-index artifact]
                                # innet only, per CUBIC HyStart rule and seed, on fig5's trace,
                                # medians beside the artifact's fig5 points already in DIR
    switchv2p_compare.py table4-ecmp --ns3 NS3_HOME --out DIR [--vary ecmp|rng] [--variants 24] [--payload 92]
                                # Table 4 over N variants per side (a locally instrumented artifact
                                # build, docs/results/artifacts.md): ECMP hash functions and random
                                # streams, or random streams alone on the artifact's own paths

NS3_HOME is the tree bench/artifacts/switchv2p.sh printed. Every point is one artifact run
(`ns3 run --no-build "sim ..."` with exactly the flags of the artifact's run.py /
run_migration_test.sh) and one innet run with the artifact's settings (`ecmp=correlated` or, for
Table 4, `ecmp=artifact`, the
artifact's trace file, its TCP profile, its cache split); each writes its JSON under DIR and is
skipped when it is already there, so an interrupted sweep resumes. Wall clock and CPU time of each
process are recorded beside its results.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ADDRESS_SPACE = 80 * 128          # FT8-10K: 10,240 VMs (run.py ADDRESS_SPACE_SIZE)
SWITCHES = 80                     # run.py SWITCH_COUNT for FT8-10K
GW_LEAVES = ",".join(["0"] * 10 + ["10"] * 10 + ["20"] * 10 + ["31"] * 10)
ARTIFACT_MODE = {"nocache": "NoCache", "locallearning": "LocalLearning", "gwcache": "GwCache",
                 "switchv2p": "SwitchV2P", "bluebird": "Bluebird", "ondemand": "OnDemand", "direct": "Direct"}
# Table 4's rows: the artifact's run_migration_test.sh modes and innet's scheme names.
TABLE4 = [("nocache", "nocache"), ("ondemand", "ondemand"), ("switchv2p", "switchv2p_noinval"),
          ("switchv2p_invalidations", "switchv2p_nots"), ("switchv2p_invalidations_bf", "switchv2p")]
LAYERS = {"core": range(0, 16), "spine": range(16, 48), "tor": range(48, 80)}
# innet's switchv2p.migration in run_migration_test.sh's configuration: its ECMP (ns-3's hash of
# its addresses: the same paths), its never-cleared invalidation bit array, and its gateways:
# `--gwLeaves=0,10,20,31` is one gateway on each of the four gateway ToRs (the main runs list each
# ToR ten times).
TABLE4_ARTIFACT_SETS = {"ecmp": "artifact", "cache_index": "artifact", "invalidation_spacing": "never", "gateways_per_tor": "1"}


def per_switch_memory(scheme: str, p: float) -> int:
    """run.py: mem_size = int(p × address space), split over the caching switches."""
    mem = int(p * ADDRESS_SPACE)
    if scheme == "gwcache":
        return mem // 4
    if scheme == "bluebird":
        return mem // 32
    return mem // SWITCHES


def artifact_args(scheme: str, p: float, trace: Path, placement: Path, out: Path, udp: bool) -> list[str]:
    """The `sim` flags run.py passes for one (scheme, p) point of FT8-10K."""
    mem = per_switch_memory(scheme, p)
    args = ["--gatewayPerFlowLoadBalancing", "--ports=8", "--podWidth=4", "--topology=Fattree",
            f"--gwLeaves={GW_LEAVES}", "--IlpControllerApp::Interval=100us",
            f"--IlpControllerApp::MemorySize={mem}", f"--SwitchApp::MemorySize={mem}",
            f"--P4SwitchApp::MemorySize={mem}"]
    rnd, src, bit, prob = "false", "false", "false", 0.1
    if scheme == "locallearning":
        rnd = "true"
    if scheme == "switchv2p":
        rnd, src, bit, prob = "false", "true", "true", 0.005
    args += [f"--P4SwitchApp::RandomHashFunction={rnd}", f"--P4SwitchApp::SourceLearning={src}",
             f"--P4SwitchApp::AccessBit={bit}", f"--P4SwitchApp::GenerateProbability={prob}",
             f"--simMode={ARTIFACT_MODE[scheme]}", f"--placement={placement}", f"--trace={trace}",
             f"--output={out}"]
    if udp:
        args.insert(0, "--udpMode")
    return args


def table4_args(mode: str, placement: Path, trace: Path, out: Path) -> list[str]:
    """run_migration_test.sh's flags for one of its five modes."""
    args = ["--udpMode", "--ports=8", "--topology=Fattree", "--gatewayPerFlowLoadBalancing",
            "--gwLeaves=0,10,20,31", "--P4SwitchApp::MemorySize=12", "--P4SwitchApp::RandomHashFunction=false",
            "--P4SwitchApp::SourceLearning=true", "--P4SwitchApp::AccessBit=true",
            "--P4SwitchApp::GenerateProbability=0.005", "--migration", "--migrationTs=500",
            "--migrationContainerId=5202", "--migrationDestinationLeaf=17", "--migrationDestinationHost=0",
            f"--placement={placement}", f"--trace={trace}", f"--output={out}"]
    args += {"ondemand": ["--simMode=OnDemand"], "nocache": ["--simMode=NoCache"],
             "switchv2p": ["--P4SwitchApp::BloomFilter=false", "--simMode=SwitchV2P"],
             "switchv2p_invalidations": ["--P4SwitchApp::BloomFilter=false", "--P4SwitchApp::GenerateInvalidations=true", "--simMode=SwitchV2P"],
             "switchv2p_invalidations_bf": ["--P4SwitchApp::BloomFilter=true", "--P4SwitchApp::GenerateInvalidations=true", "--simMode=SwitchV2P"]}[mode]
    return args


def timed(cmd: list[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> dict:
    """Run cmd to completion; its wall seconds and the CPU seconds (user + system) of that process
    and the children it waited for, read from its own wait4 so concurrent points do not mix."""
    t0 = time.monotonic()
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                                env={**os.environ, **env} if env else None)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    cpu = usage.ru_utime + usage.ru_stime
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise RuntimeError(f"{shlex.join(cmd[:3])} ... exited {proc.returncode}; the end of {log}:\n" + "\n".join(tail))
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


def run_artifact(ns3: Path, args: list[str], out: Path, env: dict | None = None) -> dict:
    """One artifact point; its results.json plus timing, cached in out. `env` adds environment
    variables (ns-3's NS_ATTRIBUTE_DEFAULT, the instrumented build's V2P_ECMP_SALT)."""
    done = out.with_suffix(".point.json")
    if done.exists():
        return json.loads(done.read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    # The program by its path: a bare "sim" is ambiguous once another scratch program has one.
    cmd = [str(ns3 / "ns3"), "run", "--no-build", "scratch/switchv2p/sim " + shlex.join(args)]
    timing = timed(cmd, out.with_suffix(".out"), cwd=ns3, env=env)
    point = {"results": json.loads(out.read_text()), "command": shlex.join(cmd), **timing}
    done.write_text(json.dumps(point, indent=1))
    return point


def innet_cmd() -> list[str]:
    return [sys.executable, "-m", "innet"]


def run_innet(experiment: str, sets: dict, out: Path) -> dict:
    """One innet run (summary + the per-point table) plus timing, cached in out."""
    done = out / "point.json"
    if done.exists():
        return json.loads(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    cmd = innet_cmd() + ["run", experiment, "--out", str(out), "--no-plots"]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    timing = timed(cmd, out / "run.log")
    summary = json.loads((out / "summary.json").read_text())
    rows = []
    for name in ("points.csv", "table4.csv"):
        if (out / name).exists():
            with open(out / name) as f:
                rows = list(csv.DictReader(f))
    point = {"summary": summary, "rows": rows, "command": shlex.join(cmd), **timing}
    done.write_text(json.dumps(point, indent=1))
    return point


def trim_trace(src: Path, ms: float, dest: Path) -> int:
    """The rows of an artifact trace that start in its first `ms` milliseconds."""
    limit_ns = ms * 1e6
    n = 0
    with open(src) as fi, open(dest, "w") as fo:
        for line in fi:
            parts = line.split(",")
            if len(parts) < 5 or float(parts[2]) >= limit_ns:
                continue
            fo.write(line)
            n += 1
    return n


def artifact_layer_hits(results: dict, key: str = "switch_to_hits") -> dict:
    raw = results.get(key) or {}
    # Boost's JSON writer prints an empty map as "" (LocalLearning, GwCache and NoCache never
    # fire the artifact's CacheHit trace).
    hits = {int(k): int(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    return {layer: sum(hits.get(i, 0) for i in ids) for layer, ids in LAYERS.items()}


# ---------------------------------------------------------------------------- Table 4

def cmd_table4(a) -> None:
    ns3 = Path(a.ns3)
    data = ns3 / "scratch/switchv2p/datasets"
    out = Path(a.out) / "table4"
    art = {}
    for mode, _ in TABLE4:
        f = out / "artifact" / f"{mode}.json"
        art[mode] = run_artifact(ns3, table4_args(mode, data / "placement_n128_v80.json", data / "incast.csv", f), f)
        print(f"artifact {mode}: {art[mode]['wall_s']} s", file=sys.stderr)
    forms = {"artifact_config": TABLE4_ARTIFACT_SETS, "default": {}}
    for form, sets in forms.items():
        p = run_innet("switchv2p.migration", sets, out / f"innet_{form}")
        print(f"innet {form}: {p['wall_s']} s", file=sys.stderr)


def table4_rows(out: Path) -> list[dict]:
    out = out / "table4"
    art = {m: json.loads((out / "artifact" / f"{m}.point.json").read_text()) for m, _ in TABLE4
           if (out / "artifact" / f"{m}.point.json").exists()}
    if "nocache" not in art:
        return []
    base = art["nocache"]["results"]
    rows = []
    for form in ("artifact_config", "default"):
        f = out / f"innet_{form}" / "point.json"
        ours = json.loads(f.read_text())["summary"]["schemes"] if f.exists() else {}
        for mode, scheme in TABLE4:
            if mode not in art:
                continue
            r = art[mode]["results"]
            o = ours.get(scheme, {})
            cells = {
                "gateway packets (%)": (100 * int(r["total_gw_packets"]) / max(int(r["total_tx_packets"]), 1),
                                        100 * o.get("gateway_packets_fraction", float("nan"))),
                "avg packet latency (× NoCache)": (float(r["avg_packet_latency"]) / float(base["avg_packet_latency"]),
                                                   o.get("avg_packet_latency_vs_nocache", float("nan"))),
                "last misdelivered (µs)": (float(str(r["last_misdelivered_packet"]).split("us")[0].strip("+")),
                                           o.get("last_misdelivered_us", float("nan"))),
                "misdelivered (× NoCache)": (int(r["total_misdelivered_packets"]) / max(int(base["total_misdelivered_packets"]), 1),
                                             o.get("misdelivered_vs_nocache", float("nan"))),
                "misdelivered packets": (int(r["total_misdelivered_packets"]), o.get("misdelivered_packets", float("nan"))),
                "invalidation packets": (int(r["total_invalidation_packets"]), o.get("invalidation_packets", float("nan"))),
                "gateway packets": (int(r["total_gw_packets"]), o.get("gateway_packets", float("nan"))),
                "tenant packets sent": (int(r["total_tx_packets"]), o.get("tenant_packets", float("nan"))),
            }
            rows.append({"form": form, "row": scheme, "cells": cells})
    return rows


# ---------------------------------------------------------------------------- Fig. 5

def fig5_points(a) -> list[tuple[str, float]]:
    sizes = [float(x) for x in a.sizes.split(",")]
    pts = []
    for s in a.schemes.split(","):
        if s not in ARTIFACT_MODE:
            sys.exit(f"switchv2p_compare: unknown scheme {s!r} (expected one of {', '.join(ARTIFACT_MODE)})")
        pts += [(s, sizes[0])] if s in ("nocache", "ondemand", "direct") else [(s, p) for p in sizes]
    return pts


def cmd_fig5(a) -> None:
    ns3 = Path(a.ns3)
    data = ns3 / "scratch/switchv2p/datasets"
    out = Path(a.out) / f"fig5_{a.workload}_{a.trace_ms:g}ms"
    out.mkdir(parents=True, exist_ok=True)
    trace = out / f"{a.workload}_{a.trace_ms:g}ms.csv"
    if not trace.exists():
        n = trim_trace(data / f"{a.workload}.csv", a.trace_ms, trace)
        print(f"trace: {n} rows of {a.workload}.csv start in the first {a.trace_ms} ms", file=sys.stderr)
    udp = a.workload in ("microburst", "video")
    jobs = []
    for scheme, p in fig5_points(a):
        f = out / "artifact" / f"{scheme}_{p:g}.json"
        jobs.append(("artifact", scheme, p, lambda s=scheme, p=p, f=f: run_artifact(
            ns3, artifact_args(s, p, trace, data / "placement_n128_v80.json", f, udp), f)))
        sets = {"trace_file": str(trace), "trace_transport": "udp" if udp else "tcp", "ecmp": "correlated",
                "schemes": scheme, "cache_fractions": f"{p:g}"}
        jobs.append(("innet", scheme, p, lambda sets=sets, s=scheme, p=p: run_innet(
            "switchv2p.cachesize", sets, out / "innet" / f"{s}_{p:g}")))
    failed = 0
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futs = {pool.submit(fn): (side, s, p) for side, s, p, fn in jobs}
        for fut in cf.as_completed(futs):
            side, s, p = futs[fut]
            try:
                r = fut.result()
            except (RuntimeError, OSError, ValueError) as e:
                failed += 1
                print(f"{side} {s} p={p:g}: FAILED: {e}", file=sys.stderr)
                continue
            print(f"{side} {s} p={p:g}: {r['wall_s']} s wall, {r['cpu_s']} s CPU", file=sys.stderr)
    if failed:
        sys.exit(f"switchv2p_compare: {failed} point(s) failed (above); the others are saved, run again to retry")


def innet_row(point: dict, scheme: str, p: float) -> dict:
    for r in point["rows"]:
        if r["scheme"] == scheme and abs(float(r["cache_fraction"]) - p) < 1e-9:
            return r
    for r in point["rows"]:  # schemes without a cache run once, at the base size
        if r["scheme"] == scheme:
            return r
    return {}


def fig5_rows(out: Path) -> list[dict]:
    rows = []
    for d in sorted(out.glob("fig5_*")):
        for art_f in sorted((d / "artifact").glob("*.point.json")):
            scheme, p = art_f.name[: -len(".point.json")].rsplit("_", 1)
            p = float(p)
            art = json.loads(art_f.read_text())
            inn_f = d / "innet" / f"{scheme}_{p:g}" / "point.json"
            inn = json.loads(inn_f.read_text()) if inn_f.exists() else {"rows": [], "wall_s": float("nan"), "cpu_s": float("nan")}
            o = innet_row(inn, scheme, p)
            r = art["results"]
            hits = artifact_layer_hits(r)
            first = artifact_layer_hits(r, "switch_to_first_hits")
            g = lambda k: float(o[k]) if o.get(k, "") != "" else float("nan")
            cells = {
                "gateway packets": (int(r["total_gw_packets"]), g("gateway_packets")),
                "tenant packets sent": (int(r["total_tx_packets"]), g("tenant_packets")),
                "avg FCT (µs)": (float(r["avg_fct"]) / 1e3, g("fct_mean_us")),
                "avg FPL (µs)": (float(r["avg_fpl"]) / 1e3, g("first_packet_latency_mean_us")),
                "avg packet latency (µs)": (float(r["avg_packet_latency"]) / 1e3, g("avg_packet_latency_us")),
                "avg packet hops": (float(r["avg_packet_hops"]), g("avg_packet_hops")),
                "learning packets": (int(r["total_learning_packets"]), g("learning_packets")),
                "invalidations": (int(r["total_invalidation_packets"]), g("invalidation_packets")),
                "misdelivered": (int(r["total_misdelivered_packets"]), g("misdelivered_packets")),
            }
            for layer in LAYERS:
                cells[f"hits {layer}"] = (hits[layer], g(f"hits_{layer}"))
                cells[f"first hits {layer}"] = (first[layer], g(f"first_hits_{layer}"))
            rows.append({"trace": d.name, "scheme": scheme, "p": p, "cells": cells,
                         "wall": (art["wall_s"], inn["wall_s"]), "cpu": (art["cpu_s"], inn["cpu_s"])})
    return rows


# ---------------------------------------------------------------------------- report

def fmt(x) -> str:
    if isinstance(x, float) and x != x:
        return "—"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 100):
        return f"{int(x):,}"
    return f"{x:.3g}" if abs(x) < 100 else f"{x:,.1f}"


def diff(a, b) -> str:
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))) or b != b:
        return "—"
    if a == 0:
        return "=" if b == 0 else "new"
    return f"{100 * (b - a) / abs(a):+.1f} %"


def fig5_paper_rows(rows: list[dict]) -> list[str]:
    """Fig. 5's own quantities on both sides: hit rate (1 − gateway / sent packets) and the FCT and
    first-packet-latency improvement over the same side's NoCache."""
    out = ["| scheme | p | hit rate | FCT × NoCache | FPL × NoCache | gateway packets | hits core / spine / ToR | CPU s |",
           "|---|---|---|---|---|---|---|---|"]
    base = {r["trace"]: r for r in rows if r["scheme"] == "nocache"}
    for r in rows:
        c, b = r["cells"], base.get(r["trace"])
        if b is None:
            continue
        hit = [1 - c["gateway packets"][i] / c["tenant packets sent"][i] for i in (0, 1)]
        fct = [b["cells"]["avg FCT (µs)"][i] / c["avg FCT (µs)"][i] for i in (0, 1)]
        fpl = [b["cells"]["avg FPL (µs)"][i] / c["avg FPL (µs)"][i] for i in (0, 1)]
        layers = ("—" if r["scheme"] != "switchv2p" else
                  " / ".join(f"{fmt(c[f'hits {x}'][0])}" for x in LAYERS) + " vs "
                  + " / ".join(f"{fmt(c[f'hits {x}'][1])}" for x in LAYERS))
        out.append(f"| {r['scheme']} | {r['p']:g} | {hit[0]:.4f} / {hit[1]:.4f} | {fct[0]:.3f} / {fct[1]:.3f} | "
                   f"{fpl[0]:.3f} / {fpl[1]:.3f} | {fmt(c['gateway packets'][0])} / {fmt(c['gateway packets'][1])} | "
                   f"{layers} | {fmt(r['cpu'][0])} / {fmt(r['cpu'][1])} |")
    return out


def cmd_report(a) -> None:
    out = Path(a.out)
    t4 = table4_rows(out)
    if t4:
        print("### Table 4 (artifact vs innet)\n")
        keys = list(t4[0]["cells"])
        for form in ("artifact_config", "default"):
            rows = [r for r in t4 if r["form"] == form]
            print(f"innet form: `{form}`\n")
            print("| cell | " + " | ".join(r["row"] for r in rows) + " |")
            print("|---|" + "---|" * len(rows))
            for k in keys:
                print(f"| {k} | " + " | ".join(f"{fmt(r['cells'][k][0])} / {fmt(r['cells'][k][1])}" for r in rows) + " |")
            print()
    f5 = fig5_rows(out)
    for trace in sorted({r["trace"] for r in f5}):
        rows = [r for r in f5 if r["trace"] == trace]
        print(f"### {trace}: Fig. 5's quantities, artifact / innet\n")
        print("\n".join(fig5_paper_rows(rows)) + "\n")
        print(f"### {trace}: artifact / innet (difference)\n")
        keys = list(rows[0]["cells"])
        print("| scheme | p | " + " | ".join(keys) + " | wall s | CPU s |")
        print("|---|---|" + "---|" * (len(keys) + 2))
        for r in rows:
            cells = [f"{fmt(r['cells'][k][0])} / {fmt(r['cells'][k][1])} ({diff(*r['cells'][k])})" for k in keys]
            print(f"| {r['scheme']} | {r['p']:g} | " + " | ".join(cells)
                  + f" | {fmt(r['wall'][0])} / {fmt(r['wall'][1])} | {fmt(r['cpu'][0])} / {fmt(r['cpu'][1])} |")
        print()


def cmd_hystart(a) -> None:
    """innet under each HyStart rule (`--set hystart=`) and seed on the trimmed trace fig5 made;
    one process per (seed, rule), seeds outermost so the rules interleave in time."""
    import statistics

    d = Path(a.out) / f"fig5_{a.workload}_{a.trace_ms:g}ms"
    trace = d / f"{a.workload}_{a.trace_ms:g}ms.csv"
    if not trace.exists():
        sys.exit(f"switchv2p_compare: {trace} is missing; run fig5 with this --out first")
    rules, seeds = a.rules.split(","), [int(x) for x in a.seeds.split(",")]
    runs = {}
    for seed in seeds:
        for rule in rules:
            sets = {"trace_file": str(trace), "trace_transport": "tcp", "ecmp": a.ecmp, "cache_index": a.cache_index,
                    "schemes": a.schemes, "cache_fractions": a.sizes, "hystart": rule, "seed": seed}
            tag = ("" if a.ecmp == "correlated" else f"_{a.ecmp}") + ("" if a.cache_index == "vip" else f"_idx{a.cache_index}")
            r = run_innet("switchv2p.cachesize", sets, d / "innet_hystart" / f"{rule}{tag}_s{seed}")
            print(f"innet hystart={rule} seed={seed}: {r['wall_s']} s wall, {r['cpu_s']} s CPU", file=sys.stderr)
            runs[(rule, seed)] = r
    art = {}
    for f in (d / "artifact").glob("*.point.json"):
        scheme, p = f.name[: -len(".point.json")].rsplit("_", 1)
        art[(scheme, float(p))] = json.loads(f.read_text())["results"]
    base = next((v for (s, _), v in art.items() if s == "nocache"), None)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    print("| scheme | p | artifact FCT× / FPL× | " + " | ".join(f"innet {r} FCT× / FPL× (hit)" for r in rules) + " |")
    print("|---|---|---|" + "---|" * len(rules))
    for scheme, p in fig5_points(a):
        r = art.get((scheme, p))
        a_cell = (f"{float(base['avg_fct']) / float(r['avg_fct']):.3f} / {float(base['avg_fpl']) / float(r['avg_fpl']):.3f}"
                  if r and base else "—")
        cells = []
        for rule in rules:
            rows = [innet_row(runs[(rule, s)], scheme, p) for s in seeds]
            v = lambda k: med([float(o[k]) for o in rows if o.get(k, "") != ""])
            cells.append(f"{v('fct_improvement'):.3f} / {v('fpl_improvement'):.3f} ({v('hit_rate'):.4f})")
        print(f"| {scheme} | {p:g} | {a_cell} | " + " | ".join(cells) + " |")
    print("\nNoCache means (µs), median over seeds: " + "; ".join(
        f"{rule}: FCT {med([float(innet_row(runs[(rule, s)], 'nocache', 0)['fct_mean_us']) for s in seeds]):.1f}, "
        f"FPL {med([float(innet_row(runs[(rule, s)], 'nocache', 0)['first_packet_latency_mean_us']) for s in seeds]):.2f}"
        for rule in rules))


def cmd_table4_ecmp(a) -> None:
    """Table 4 over N variants per side, to tell a mechanism's difference from one draw's luck.
    `--vary ecmp`: N ECMP hash functions and random streams. The artifact's flow hash (Murmur3 of
    "src dst proto sport dport", ipv4-global-routing.cc) has no seed; the instrumented build
    appends $V2P_ECMP_SALT to that text, so salts s1..sN are N other functions of the same family,
    and variant i also runs ns-3's random stream i (RngRun: the learning packets' draws); innet
    runs `ecmp=correlated` with `seed=i` (its one network-wide ECMP seed and its random stream).
    `--vary rng`: the same paths on both sides (the artifact's own hash; innet `ecmp=artifact`)
    and only the random streams vary. The instrumented build also starts the misdelivery counter
    at 0 (the shipped one reads it uninitialised), so its JSON counts per event."""
    import random
    import statistics

    ns3 = Path(a.ns3)
    lib = next(iter((ns3 / "build/lib").glob("libns3*-internet-*.so")), None)
    if lib is None or b"V2P_ECMP_SALT" not in lib.read_bytes():
        sys.exit(f"switchv2p_compare: {ns3}'s internet module does not read V2P_ECMP_SALT; table4-ecmp needs "
                 "the locally instrumented build described in docs/results/artifacts.md (Table 4, ECMP)")
    data = ns3 / "scratch/switchv2p/datasets"
    out = Path(a.out) / f"table4_{a.vary}"
    env_base = {"NS_ATTRIBUTE_DEFAULT": f"ClientApp::PacketSize={a.payload}"} if a.payload else {}
    innet_sets = {**TABLE4_ARTIFACT_SETS, "ecmp": "correlated" if a.vary == "ecmp" else "artifact"}
    art: dict[str, list[dict]] = {m: [] for m, _ in TABLE4}
    ours: dict[str, list[dict]] = {s: [] for _, s in TABLE4}
    for i in range(1, a.variants + 1):
        env = {**env_base, "NS_GLOBAL_VALUE": f"RngRun={i}"}
        if a.vary == "ecmp":
            env["V2P_ECMP_SALT"] = f"s{i}"
        for mode, _ in TABLE4:
            if mode == "ondemand":
                continue
            f = out / "artifact" / f"{mode}_s{i}.json"
            art[mode].append(run_artifact(ns3, table4_args(mode, data / "placement_n128_v80.json", data / "incast.csv", f), f,
                                          env=env)["results"])
        p = run_innet("switchv2p.migration", {**innet_sets, "seed": i}, out / f"innet_s{i}")
        for _, scheme in TABLE4:
            ours[scheme].append(p["summary"]["schemes"][scheme])
        print(f"variant {i} of {a.variants}", file=sys.stderr)
    cells = [("misdelivered packets", "total_misdelivered_packets", "misdelivered_packets"),
             ("invalidation packets", "total_invalidation_packets", "invalidation_packets"),
             ("gateway packets", "total_gw_packets", "gateway_packets"),
             ("avg packet latency (µs)", "avg_packet_latency", "avg_packet_latency_us")]
    rng = random.Random(1)

    def median_diff_ci(x: list[float], y: list[float]) -> tuple[float, float]:
        ds = sorted(statistics.median(rng.choices(y, k=len(y))) - statistics.median(rng.choices(x, k=len(x)))
                    for _ in range(4000))
        return ds[100], ds[3899]

    varied = "ECMP hash function and random stream" if a.vary == "ecmp" else "random stream, the artifact's paths on both sides"
    print(f"{a.variants} variants ({varied}) per side; artifact payload {a.payload or 64} B. "
          "Cells: median [min-max]; the last column is innet's median minus the artifact's, 95 % bootstrap interval.\n")
    print("| row | cell | artifact | innet | innet − artifact |")
    print("|---|---|---|---|---|")
    for mode, scheme in TABLE4:
        if mode == "ondemand":
            continue
        for label, ak, ik in cells:
            x = [float(r[ak]) / (1000.0 if ak == "avg_packet_latency" else 1.0) for r in art[mode]]
            y = [float(r[ik]) for r in ours[scheme]]
            lo, hi = median_diff_ci(x, y)
            show = lambda v: fmt(round(v, 2))
            print(f"| {scheme} | {label} | {show(statistics.median(x))} [{show(min(x))}-{show(max(x))}] | "
                  f"{show(statistics.median(y))} [{show(min(y))}-{show(max(y))}] | "
                  f"{show(statistics.median(y) - statistics.median(x))} [{show(lo)}, {show(hi)}] |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t4 = sub.add_parser("table4", help="Table 4: the artifact's migration test, both sides")
    f5 = sub.add_parser("fig5", help="Fig. 5 points on the first milliseconds of an artifact trace")
    rp = sub.add_parser("report", help="markdown tables of what --out holds")
    hs = sub.add_parser("hystart", help="innet per CUBIC HyStart rule and seed on fig5's trace, beside the artifact")
    te = sub.add_parser("table4-ecmp", help="Table 4 under N ECMP hash functions on each side (instrumented artifact build)")
    for p in (t4, f5, rp, hs, te):
        p.add_argument("--out", required=True)
    te.add_argument("--variants", type=int, default=24)
    te.add_argument("--vary", choices=("ecmp", "rng"), default="ecmp",
                    help="ecmp: hash functions and random streams; rng: random streams on the artifact's paths")
    te.add_argument("--payload", type=int, default=0,
                    help="the artifact's UDP payload in bytes (ClientApp::PacketSize; 92 gives innet's 150 B frames; 0 = its 64)")
    for p in (t4, f5, te):
        p.add_argument("--ns3", required=True, help="NS3_HOME printed by bench/artifacts/switchv2p.sh")
    for p in (f5, hs):
        p.add_argument("--workload", default="hadoop")
        p.add_argument("--trace-ms", type=float, default=1.0)
        p.add_argument("--sizes", default="0.01,0.5,1500")
        p.add_argument("--schemes", default="nocache,locallearning,gwcache,switchv2p")
    f5.add_argument("--jobs", type=int, default=2)
    hs.add_argument("--rules", default="ns3,rfc9406", help="hystart values to run (off, rfc9406, ns3)")
    hs.add_argument("--seeds", default="1,2,3")
    hs.add_argument("--ecmp", default="correlated", choices=("correlated", "artifact", "independent"),
                    help="innet's ecmp: correlated (the artifact's correlation on innet's hash) or artifact (its own hash)")
    hs.add_argument("--cache-index", default="vip", choices=("vip", "artifact"),
                    help="innet's cache_index: vip (innet's) or artifact (the artifact's P4Cache index of its VM numbers)")
    a = ap.parse_args()
    if a.cmd in ("table4", "fig5", "table4-ecmp") and not (Path(a.ns3) / "ns3").exists():
        sys.exit(f"switchv2p_compare: {a.ns3} is not an ns-3 tree (no ns3 script); run bench/artifacts/switchv2p.sh first")
    {"table4": cmd_table4, "fig5": cmd_fig5, "report": cmd_report, "hystart": cmd_hystart,
     "table4-ecmp": cmd_table4_ecmp}[a.cmd](a)


if __name__ == "__main__":
    main()
