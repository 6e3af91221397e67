# Helpers for the scripts that run a test server as a daemon with a pid file (sourced).
#   wait_ready WHAT LOG CMD...   run CMD every 0.1 s until it succeeds (10 s), else fail naming LOG
#   stop_pidfile PIDFILE         kill the daemon named in PIDFILE, wait up to 5 s, remove the file
wait_ready() {
    local what="$1" log="$2"; shift 2
    for _ in $(seq 100); do
        if "$@" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "$what did not answer (log: $log)" >&2
    return 1
}

stop_pidfile() {
    [ -f "$1" ] || return 0
    local pid; pid=$(cat "$1"); kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$1"
}
