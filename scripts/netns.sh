#!/usr/bin/env bash
# Client/switch/server network namespaces for the real-packet switch:
#   scripts/netns.sh up [--tag T] [--client-netem 'loss 1%'] [--server-netem ...]
#   scripts/netns.sh down [--tag T]
# (python/innet/netns.py does the work; tests use it directly.) Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m innet.netns "$@"
