#!/usr/bin/env python3
"""Side by side: the Gigaflow authors' gvs and innet on the packets of gigaflow.e2e.

    bench/artifacts/gigaflow_compare.py OUTDIR [--pipelines OFD,PSC,OLS,ANT,OTL] [--localities high,low]
        [--mf 960] [--gf 4x240] [--gvs BUILD/src] [k=v ...]

For every (pipeline, locality): writes the inputs (export_e2e_inputs, gigaflow.e2e's k=v
parameters, default the --quick sizes rules=1000 flows=3000), replays them through gvs
(bench/artifacts/gvs_run.py: MF = a 1-table Gigaflow of --mf entries, GF = --gf) unless
OUTDIR/gvs-P-L-{mf,gf}.json already exists, and through innet (the gvs_compare example): innet as
gigaflow.e2e runs it (`mf`: its Megaflow cache; `gf`: its Gigaflow) and innet in the artifact's
configuration (`gvs`: e2e's artifact_ltm=true partitioning=dp-artifact align=false max_masks=64
host_entries=200000). Prints a Markdown table and writes OUTDIR/compare.json.
Needs: cargo build --release -p innet-gigaflow --example export_e2e_inputs --example gvs_compare.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "target/release/examples"


def run(cmd: list[str]) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"gigaflow_compare: {' '.join(cmd[:4])}...: {r.stderr.strip()}")
    return r.stdout


def innet(p: str, l: str, cache: str, sets: list[str], shape: list[str]) -> dict:
    t0 = time.monotonic()
    d = json.loads(run([str(EX / "gvs_compare"), p, l, cache, *sets, *shape]))
    d["wall_s"] = time.monotonic() - t0
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--pipelines", default="OFD,PSC,OLS,ANT,OTL")
    ap.add_argument("--localities", default="high,low")
    ap.add_argument("--mf", type=int, default=960)
    ap.add_argument("--gf", default="4x240")
    ap.add_argument("--gvs", default=str(Path.home() / ".cache/innet/artifacts/gvs/src"))
    ap.add_argument("sets", nargs="*", help="gigaflow.e2e parameters k=v (default rules=1000 flows=3000)")
    a = ap.parse_args()
    sets = a.sets or ["rules=1000", "flows=3000"]
    k, n = (int(x) for x in a.gf.split("x"))
    for ex in ("export_e2e_inputs", "gvs_compare"):
        if not (EX / ex).exists():
            sys.exit(f"gigaflow_compare: {EX / ex} missing: cargo build --release -p innet-gigaflow --example {ex}")
    a.outdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for p in a.pipelines.split(","):
        for l in a.localities.split(","):
            stem = a.outdir / f"{p}-{l}"
            if not stem.with_suffix(".pcap").exists():
                run([str(EX / "export_e2e_inputs"), p, l, str(a.outdir), *sets])
            g = {}
            for scheme, tables, entries in (("mf", 1, a.mf), ("gf", k, n)):
                out = a.outdir / f"gvs-{p}-{l}-{scheme}.json"
                if not out.exists():
                    t0 = time.monotonic()
                    text = run([sys.executable, str(ROOT / "bench/artifacts/gvs_run.py"), "--gvs", a.gvs, "--flows", str(stem.with_suffix(".flows")),
                                "--pcap", str(stem.with_suffix(".pcap")), "--in-ports", str(stem.with_suffix(".inport")),
                                "--tables", str(tables), "--entries", str(entries)])
                    d = json.loads(text)
                    d["wall_s"] = time.monotonic() - t0
                    out.write_text(json.dumps(d, indent=1))
                g[scheme] = json.loads(out.read_text())
            ours = {
                "mf": innet(p, l, "mf", sets, [f"entries={a.mf}"]),
                "gf": innet(p, l, "gf", sets, [f"tables={k}", f"entries={n}"]),
                "art_mf": innet(p, l, "gvs", sets, ["tables=1", f"entries={a.mf}"]),
                "art_gf": innet(p, l, "gvs", sets, [f"tables={k}", f"entries={n}"]),
            }
            rows.append({"pipeline": p, "locality": l, "gvs": g, "innet": ours})
    (a.outdir / "compare.json").write_text(json.dumps(rows, indent=1))
    print("| pipeline | locality | cache | gvs GF hits | gvs dpcls hits | gvs upcalls | gvs entries/table | gvs recycled/table | innet (artifact cfg) GF hits | dpcls hits | upcalls | entries/table | recycled/table | innet e2e hits | innet e2e upcalls | innet e2e entries | gvs wall s | innet wall s |")
    print("|" + "---|" * 19)
    for r in rows:
        for scheme in ("mf", "gf"):
            g = r["gvs"][scheme]
            s = g["stats"]
            art = r["innet"]["art_" + scheme]
            e2e = r["innet"][scheme]
            print(f"| {r['pipeline']} | {r['locality']} | {scheme.upper()} | {s['gigaflow_hits']:,} | {s['megaflow_hits']:,} | {s['upcalls']:,} | "
                  f"{'/'.join(str(t['entries']) for t in s['tables'])} | {'/'.join(str(t['recycled']) for t in s['tables'])} | "
                  f"{art['gigaflow_hits']:,} | {art['megaflow_hits']:,} | {art['upcalls']:,} | {'/'.join(map(str, art['entries']))} | {'/'.join(map(str, art['recycled']))} | "
                  f"{e2e['gigaflow_hits']:,} | {e2e['upcalls']:,} | {sum(e2e['entries']):,} | {g['replay_s']:.1f} | {art['replay_s']:.2f} |")


if __name__ == "__main__":
    main()
