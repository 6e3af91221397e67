#!/usr/bin/env bash
# A real memcached (Debian's package) for the application switch's tests.
#   scripts/memcached.sh start DIR ADDRESS PORT [NETNS]   # returns when it answers `version` (prints the pid)
#   scripts/memcached.sh stop DIR
set -euo pipefail
die() { echo "memcached.sh: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/daemon.sh"

answers() {  # ADDRESS PORT: does memcached answer `version`?
    python3 -c "import socket,sys; s=socket.create_connection(('$1',$2),1); s.sendall(b'version\r\n'); sys.exit(0 if s.recv(64).startswith(b'VERSION') else 1)"
}

case "${1:-}" in
    start)
        [ $# -ge 4 ] || die "usage: start DIR ADDRESS PORT [NETNS]"
        dir="$(mkdir -p "$2" && cd "$2" && pwd)"; addr="$3"; port="$4"; netns="${5:-}"
        command -v memcached >/dev/null || die "memcached not found; run scripts/setup.sh"
        run=(); [ -n "$netns" ] && run=(ip netns exec "$netns")
        # TCP only (-U 0), 64 MB, run as root inside the test's namespace, daemonized with a pid file.
        "${run[@]}" memcached -l "$addr" -p "$port" -U 0 -m 64 -u root -d -P "$dir/memcached.pid" \
            >"$dir/memcached.log" 2>&1
        export -f answers
        wait_ready "memcached on $addr:$port" "$dir/memcached.log" "${run[@]}" bash -c "answers $addr $port" \
            || die "memcached did not start"
        cat "$dir/memcached.pid"
        ;;
    stop)
        [ $# -ge 2 ] || die "usage: stop DIR"
        stop_pidfile "$2/memcached.pid"
        ;;
    *) die "usage: $0 start DIR ADDRESS PORT [NETNS] | stop DIR" ;;
esac
