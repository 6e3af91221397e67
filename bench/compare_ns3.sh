#!/usr/bin/env bash
# Side-by-side benchmark: the same htsim flow list through ns-3 3.37 and through innet.
#   bench/compare_ns3.sh [k=8] [udp|tcp]
# Builds bench/ns3/fattree_bench when missing or older than its source, runs both, and prints
# both wall times, the ratio, both delivered-packet counts and their relative difference, then
# one JSON line with the same numbers. Flow lists: bench/flows/ft{4,8}_udp.htsim
# (`cargo run -p innet-workloads --example gen_bench_flows` writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
k="${1:-8}"
transport="${2:-udp}"
case "$transport" in udp|tcp) ;; *) echo "compare_ns3: transport must be udp or tcp, got '$transport'" >&2; exit 2 ;; esac
flows="bench/flows/ft${k}_udp.htsim"
[ -f "$flows" ] || { echo "compare_ns3: $flows missing (cargo run -p innet-workloads --example gen_bench_flows)" >&2; exit 2; }
if ! [ -x bench/ns3/fattree_bench ] || [ bench/ns3/fattree_bench.cc -nt bench/ns3/fattree_bench ]; then
    bash bench/ns3/build.sh >&2
fi
if command -v innet >/dev/null; then innet=(innet); else innet=(python3 -m innet); fi

echo "running ns-3 ($flows, k=$k, $transport) ..." >&2
ns3_json=$(bench/ns3/fattree_bench --flows="$flows" --k="$k" --transport="$transport")
echo "running innet ..." >&2
innet_json=$("${innet[@]}" bench sim --flows "$flows" --topology fattree --k "$k" --transport "$transport" --json)
python3 - "$ns3_json" "$innet_json" <<'PY'
import json, sys
ns3, ours = (json.loads(a) for a in sys.argv[1:3])
ratio = ns3["wall_s"] / ours["wall_s"]
diff = (ours["delivered_packets"] - ns3["delivered_packets"]) / max(ns3["delivered_packets"], 1)
print(f"scenario           k={ns3['k']} {ns3['transport']}, {ns3['flows']} flows, {ns3['sent_packets']:,} data packets")
print(f"ns-3.37 wall       {ns3['wall_s']:10.2f} s   delivered {ns3['delivered_packets']:>12,}   events {ns3['events']:>12,}")
print(f"innet wall         {ours['wall_s']:10.2f} s   delivered {ours['delivered_packets']:>12,}   events {ours.get('events', 0):>12,}")
print(f"speed-up           {ratio:10.1f} x  (ns-3 wall / innet wall)")
print(f"delivered differ   {100 * diff:+10.3f} %  (innet vs ns-3)")
print(json.dumps({"k": ns3["k"], "transport": ns3["transport"], "ns3_wall_s": ns3["wall_s"], "innet_wall_s": ours["wall_s"],
                  "speedup": round(ratio, 2), "ns3_delivered": ns3["delivered_packets"],
                  "innet_delivered": ours["delivered_packets"], "delivered_diff_pct": round(100 * diff, 4)}))
PY
