#!/usr/bin/env bash
# The whole test suite: set-up (idempotent), Rust tests, bounded fuzzing of every parser, and
# the Python tests of the CLI and API. Fails on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== cargo test --workspace"
cargo test --workspace --quiet

if [ -f scripts/fuzz.sh ]; then
    echo "== fuzzing (bounded)"
    bash scripts/fuzz.sh "${INNET_FUZZ_SECONDS:-10}"
fi

echo "== pytest"
set +e
python3 -m pytest -q python/tests
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure" >&2
    exit 1
fi
exit "$status"
