#!/usr/bin/env bash
# Bounded fuzzing of every innet-wire parser (and the gigaflow flow-file parser): `scripts/fuzz.sh [SECONDS_PER_TARGET]` (default 20).
# Installs cargo-fuzz if missing, builds the targets in fuzz/ once, runs each for that long, and
# exits non-zero on the first crash, printing the path of the crashing input.
#
# There is no nightly toolchain here: RUSTC_BOOTSTRAP=1 lets stable rustc accept the -Z flags
# cargo-fuzz passes (coverage instrumentation). No sanitizer: innet-wire has no `unsafe`, so
# the bugs to find are panics and oracle failures, and ASan would halve the executions.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
case "$seconds" in
    '' | *[!0-9]* | 0)
        echo "fuzz.sh: SECONDS_PER_TARGET must be a positive whole number, got '$seconds'" >&2
        exit 2
        ;;
esac
targets=(ethernet ipv4 udp tcp geneve frame pcap switchv2p orbitcache switchvm switchvm_sandbox switchvm_asm gigaflow_flows real_frame cql cql_compression resp memcache)

start=$(date +%s)
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== cargo install --locked cargo-fuzz" >&2
    cargo install --locked cargo-fuzz
fi
installed=$(date +%s)

# One run at a time: concurrent runs would share fuzz/target, corpus/ and artifacts/.
mkdir -p fuzz/target
exec 9>fuzz/target/.fuzz.lock
if ! flock -n 9; then
    echo "fuzz.sh: another fuzz.sh is running; waiting for it" >&2
    flock 9
fi

export RUSTC_BOOTSTRAP=1
# The same flags for build and run, or `cargo fuzz run` rebuilds; an explicit target dir so a
# CARGO_TARGET_DIR meant for the workspace does not get instrumented artifacts mixed in.
flags=(--release --debug-assertions --sanitizer none --target-dir fuzz/target)
echo "== cargo fuzz build (${#targets[@]} targets)" >&2
cargo fuzz build "${flags[@]}"
built=$(date +%s)

mkdir -p fuzz/corpus fuzz/artifacts
for t in "${targets[@]}"; do
    echo "== fuzz $t for ${seconds}s" >&2
    # corpus/<t> collects what libFuzzer finds (gitignored); seeds/<t> are the committed
    # starting inputs, written by `cargo run --example make_seeds` in fuzz/.
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    log="fuzz/corpus/$t.log"
    if ! cargo fuzz run "${flags[@]}" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$log" 2>&1; then
        grep -E -A12 "panicked at|ERROR: libFuzzer" "$log" | head -n 40 >&2 || tail -n 40 "$log" >&2
        crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        echo "fuzz.sh: target '$t' FAILED (log: $log)" >&2
        if [ -n "$crash" ]; then
            echo "fuzz.sh: crashing input: $crash" >&2
            echo "fuzz.sh: reproduce: RUSTC_BOOTSTRAP=1 cargo fuzz run ${flags[*]} $t $crash" >&2
        fi
        exit 1
    fi
    grep -E '^stat::number_of_executed_units' "$log" | sed "s/^/  $t: /" >&2 || true
done
end=$(date +%s)
echo "fuzz.sh: all ${#targets[@]} targets clean; install $((installed - start))s, build $((built - installed))s, total $((end - start))s" >&2
