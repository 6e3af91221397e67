#!/usr/bin/env bash
# A real Redis (Debian's redis-server) for the application switch's tests.
#   scripts/redis.sh start DIR ADDRESS PORT [NETNS]   # returns when it answers PING (prints the pid)
#   scripts/redis.sh stop DIR
set -euo pipefail
die() { echo "redis.sh: $*" >&2; exit 1; }

case "${1:-}" in
    start)
        [ $# -ge 4 ] || die "usage: start DIR ADDRESS PORT [NETNS]"
        dir="$(mkdir -p "$2" && cd "$2" && pwd)"; addr="$3"; port="$4"; netns="${5:-}"
        command -v redis-server >/dev/null || die "redis-server not found; run scripts/setup.sh"
        run=(); [ -n "$netns" ] && run=(ip netns exec "$netns")
        "${run[@]}" redis-server --bind "$addr" --port "$port" --save '' --appendonly no --protected-mode no \
            --daemonize yes --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
        for _ in $(seq 100); do
            if "${run[@]}" redis-cli -h "$addr" -p "$port" ping 2>/dev/null | grep -q PONG; then
                cat "$dir/redis.pid"; exit 0
            fi
            sleep 0.1
        done
        die "redis on $addr:$port did not answer PING (log: $dir/redis.log)"
        ;;
    stop)
        [ $# -ge 2 ] || die "usage: stop DIR"
        [ -f "$2/redis.pid" ] || exit 0
        pid=$(cat "$2/redis.pid"); kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        rm -f "$2/redis.pid"
        ;;
    *) die "usage: $0 start DIR ADDRESS PORT [NETNS] | stop DIR" ;;
esac
