#!/usr/bin/env bash
# A real memcached (Debian's package) for the application switch's tests.
#   scripts/memcached.sh start DIR ADDRESS PORT [NETNS]   # returns when it answers `version` (prints the pid)
#   scripts/memcached.sh stop DIR
set -euo pipefail
die() { echo "memcached.sh: $*" >&2; exit 1; }

case "${1:-}" in
    start)
        [ $# -ge 4 ] || die "usage: start DIR ADDRESS PORT [NETNS]"
        dir="$(mkdir -p "$2" && cd "$2" && pwd)"; addr="$3"; port="$4"; netns="${5:-}"
        command -v memcached >/dev/null || die "memcached not found; run scripts/setup.sh"
        run=(); [ -n "$netns" ] && run=(ip netns exec "$netns")
        # TCP only (-U 0), 64 MB, run as root inside the test's namespace, daemonized with a pid file.
        "${run[@]}" memcached -l "$addr" -p "$port" -U 0 -m 64 -u root -d -P "$dir/memcached.pid" \
            >"$dir/memcached.log" 2>&1
        for _ in $(seq 100); do
            if "${run[@]}" python3 -c "import socket,sys; s=socket.create_connection(('$addr',$port),1); s.sendall(b'version\r\n'); sys.exit(0 if s.recv(64).startswith(b'VERSION') else 1)" 2>/dev/null; then
                cat "$dir/memcached.pid"; exit 0
            fi
            sleep 0.1
        done
        die "memcached on $addr:$port did not answer (log: $dir/memcached.log)"
        ;;
    stop)
        [ $# -ge 2 ] || die "usage: stop DIR"
        [ -f "$2/memcached.pid" ] || exit 0
        pid=$(cat "$2/memcached.pid"); kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        rm -f "$2/memcached.pid"
        ;;
    *) die "usage: $0 start DIR ADDRESS PORT [NETNS] | stop DIR" ;;
esac
