#!/usr/bin/env bash
# Side-by-side benchmark: the same flow list through ns-3 3.37 and through innet.
#   bench/compare_ns3.sh [k=8] [udp|tcp]
# Prints both wall times, the speed ratio, and both delivered-packet counts.
set -euo pipefail
cd "$(dirname "$0")/.."
k="${1:-8}"
transport="${2:-udp}"
flows="bench/flows/ft${k}_udp.htsim"
[ -f "$flows" ] || { echo "compare_ns3: $flows missing (cargo run -p innet-workloads --example gen_bench_flows)" >&2; exit 2; }
[ -x bench/ns3/fattree_bench ] || bash bench/ns3/build.sh
command -v innet >/dev/null || { echo "compare_ns3: 'innet' not on PATH; run scripts/setup.sh" >&2; exit 2; }

ns3_json=$(bench/ns3/fattree_bench --flows="$flows" --k="$k" --transport="$transport")
innet_json=$(innet bench sim --flows "$flows" --topology fattree --k "$k" --transport "$transport" --json)
python3 - "$ns3_json" "$innet_json" <<'PY'
import json, sys
ns3, ours = (json.loads(a) for a in sys.argv[1:3])
ratio = ns3["wall_s"] / ours["wall_s"]
diff = (ours["delivered_packets"] - ns3["delivered_packets"]) / max(ns3["delivered_packets"], 1)
print(f"scenario           k={ours['k']} {ours['transport']}, {ours['flows']} flows")
print(f"ns-3.37 wall       {ns3['wall_s']:10.2f} s   delivered {ns3['delivered_packets']:>10,}")
print(f"innet wall         {ours['wall_s']:10.2f} s   delivered {ours['delivered_packets']:>10,}")
print(f"speed-up           {ratio:10.1f} x")
print(f"delivered differ   {100 * diff:+10.3f} %")
print(json.dumps({"k": ours["k"], "transport": ours["transport"], "ns3_wall_s": ns3["wall_s"], "innet_wall_s": ours["wall_s"],
                  "speedup": round(ratio, 2), "ns3_delivered": ns3["delivered_packets"],
                  "innet_delivered": ours["delivered_packets"], "delivered_diff_pct": round(100 * diff, 4)}))
PY
