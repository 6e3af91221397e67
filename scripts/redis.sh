#!/usr/bin/env bash
# A real Redis (Debian's redis-server) for the application switch's tests.
#   scripts/redis.sh start DIR ADDRESS PORT [NETNS]   # returns when it answers PING (prints the pid)
#   scripts/redis.sh stop DIR
set -euo pipefail
die() { echo "redis.sh: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/daemon.sh"

case "${1:-}" in
    start)
        [ $# -ge 4 ] || die "usage: start DIR ADDRESS PORT [NETNS]"
        dir="$(mkdir -p "$2" && cd "$2" && pwd)"; addr="$3"; port="$4"; netns="${5:-}"
        command -v redis-server >/dev/null || die "redis-server not found; run scripts/setup.sh"
        run=(); [ -n "$netns" ] && run=(ip netns exec "$netns")
        "${run[@]}" redis-server --bind "$addr" --port "$port" --save '' --appendonly no --protected-mode no \
            --daemonize yes --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
        wait_ready "redis on $addr:$port" "$dir/redis.log" \
            bash -c "${run[*]} redis-cli -h $addr -p $port ping | grep -q PONG" || die "redis did not start"
        # The pid file appears once the daemon is up.
        cat "$dir/redis.pid"
        ;;
    stop)
        [ $# -ge 2 ] || die "usage: stop DIR"
        stop_pidfile "$2/redis.pid"
        ;;
    *) die "usage: $0 start DIR ADDRESS PORT [NETNS] | stop DIR" ;;
esac
