#!/usr/bin/env bash
# Checks the ns-3 benchmark program on flow lists small enough to count by hand: every UDP
# datagram arrives, TCP delivers every byte, the JSON has the fields compare_ns3.sh reads, and a
# malformed list fails with file:line. Needs libns3-dev (see build.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$here/fattree_bench" ] && [ "$here/fattree_bench" -nt "$here/fattree_bench.cc" ] || bash "$here/build.sh" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'Nodes 16\nConnections 2\n0->15 id 1 start 0 size 10000\n3->4 id 2 start 1000 size 2500\n' > "$tmp/two.htsim"
fail=0
check() {  # name, json, python condition on j
    if python3 -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if ($3) else 1)" "$2"; then
        echo "ok   $1"
    else
        echo "FAIL $1: $2"; fail=$((fail + 1))
    fi
}
udp=$("$here/fattree_bench" --flows="$tmp/two.htsim" --k=4 --transport=udp)
# 10 + 3 datagrams; 0->15 crosses pods: 6 links of 1 us, so the last one lands after 6 us.
check "udp: all 13 datagrams delivered" "$udp" 'j["delivered_packets"] == 13 and j["sent_packets"] == 13 and j["dropped_packets"] == 0'
check "udp: last delivery after 6 hops" "$udp" '6e-6 < j["sim_time_s"] < 8e-6 and j["events"] > 0 and j["wall_s"] > 0'
tcp=$("$here/fattree_bench" --flows="$tmp/two.htsim" --k=4 --transport=tcp)
check "tcp: every byte, data packets plus ACKs" "$tcp" 'j["sink_bytes"] == 12500 and j["delivered_data_packets"] >= 13 and j["delivered_packets"] > j["delivered_data_packets"]'
printf 'Nodes 16\n0->1 id 1 start 0 size 5\n2->x id 2 start 0 size 5\n' > "$tmp/bad.htsim"
if err=$("$here/fattree_bench" --flows="$tmp/bad.htsim" --k=4 2>&1); then
    echo "FAIL malformed list accepted"; fail=$((fail + 1))
elif [[ "$err" == "$tmp/bad.htsim:3: expected"* ]]; then
    echo "ok   malformed list names file:line"
else
    echo "FAIL malformed list message: $err"; fail=$((fail + 1))
fi
printf 'Nodes 128\n0->1 id 1 start 0 size 5\n' > "$tmp/k8.htsim"
if "$here/fattree_bench" --flows="$tmp/k8.htsim" --k=4 >/dev/null 2>&1; then
    echo "FAIL a 128-node list ran on a k=4 tree"; fail=$((fail + 1))
else
    echo "ok   node count must match the tree"
fi
echo "$((5 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
