#!/usr/bin/env bash
# Build the ns-3 benchmark against Debian's ns-3 3.37 (libns3-dev). Its pkg-config files are
# broken, so the libraries are named explicitly.
set -euo pipefail
cd "$(dirname "$0")"
if ! [ -e /usr/include/ns3/core-module.h ]; then
    echo "build.sh: ns-3 headers missing; install them: apt-get install -y libns3-dev" >&2
    exit 2
fi
libs=(core network internet point-to-point applications traffic-control bridge stats)
g++ -O2 -std=c++17 -o fattree_bench fattree_bench.cc -I/usr/include $(printf -- '-lns3-%s ' "${libs[@]}")
echo "built bench/ns3/fattree_bench"
