#!/usr/bin/env bash
# Builds bench/ns3/fattree_bench against Debian's ns-3 3.37 (apt-get install -y libns3-dev ns3).
# Its pkg-config files are broken, so each ns-3 library is found in the multiarch directory
# (named libns3.37-NAME.so or libns3-NAME.so depending on the packaging) and linked by path.
set -euo pipefail
cd "$(dirname "$0")"
libdir=${NS3_LIBDIR:-/usr/lib/x86_64-linux-gnu}
if ! [ -e /usr/include/ns3/core-module.h ]; then
    echo "build.sh: ns-3 headers missing; install them: apt-get update && apt-get install -y libns3-dev ns3" >&2
    exit 2
fi
link=()
for name in core network internet point-to-point applications traffic-control bridge stats; do
    lib=""
    for cand in "$libdir/libns3.37-$name.so" "$libdir/libns3-$name.so" "$libdir/libns3-$name.so.37"; do
        if [ -e "$cand" ]; then lib=$cand; break; fi
    done
    if [ -z "$lib" ]; then
        echo "build.sh: no libns3 '$name' library in $libdir (expected libns3.37-$name.so or libns3-$name.so)" >&2
        exit 2
    fi
    link+=("$lib")
done
g++ -O2 -std=c++17 -o fattree_bench fattree_bench.cc "${link[@]}" -Wl,-rpath,"$libdir"
echo "built bench/ns3/fattree_bench"
