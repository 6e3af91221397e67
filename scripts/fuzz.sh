#!/usr/bin/env bash
# Bounded fuzzing of every innet-wire parser: `scripts/fuzz.sh [SECONDS_PER_TARGET]` (default 20).
# Installs cargo-fuzz if missing and runs each target in fuzz/ for that long under libFuzzer with
# AddressSanitizer; exits non-zero on the first crash (the input is left in fuzz/artifacts/).
#
# There is no nightly toolchain here: RUSTC_BOOTSTRAP=1 lets stable rustc accept the -Z flags
# cargo-fuzz passes (sanitizer, coverage instrumentation).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
case "$seconds" in
    '' | *[!0-9]*)
        echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, got '$seconds'" >&2
        exit 2
        ;;
esac
targets=(ethernet ipv4 udp tcp geneve frame pcap)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== cargo install cargo-fuzz" >&2
    cargo install --locked cargo-fuzz
fi

export RUSTC_BOOTSTRAP=1
start=$(date +%s)
cd fuzz
echo "== cargo fuzz build (${#targets[@]} targets)" >&2
cargo fuzz build --release
built=$(date +%s)

for t in "${targets[@]}"; do
    echo "== fuzz $t for ${seconds}s" >&2
    mkdir -p "corpus/$t"
    # corpus/<t> collects what libFuzzer finds (not in git); seeds/<t> are the committed
    # starting inputs, written by `cargo run --example make_seeds`.
    seed_dir=()
    if [ -d "seeds/$t" ]; then seed_dir=("seeds/$t"); fi
    if ! cargo fuzz run --release "$t" "corpus/$t" "${seed_dir[@]}" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2> "corpus/$t.log"; then
        tail -n 60 "corpus/$t.log" >&2
        echo "fuzz.sh: target '$t' failed; reproduce with: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $t fuzz/artifacts/$t/<crash file>" >&2
        exit 1
    fi
    grep -E '^stat::number_of_executed_units|^Done' "corpus/$t.log" >&2 || true
done
end=$(date +%s)
echo "fuzz.sh: all ${#targets[@]} targets clean; build $((built - start))s, total $((end - start))s" >&2
