#!/usr/bin/env bash
# The standard tier of all five papers, its page and docs/REPRODUCED.md, in one go:
#
#   bash scripts/reproduce.sh [OUT]        # OUT defaults to reproduced/ (git-ignored)
#
# 1. refuses a work tree with uncommitted changes (every result would be "+dirty", i.e. stale);
# 2. `innet reproduce all --tier standard --out OUT`: says the expected time first, prints a line
#    per finished figure, and resumes where it stopped: run the script again after an
#    interruption (finished points are kept; only missing ones run). Resume on the same commit:
#    points made by another commit are marked STALE on the page (remove OUT/standard to start over);
# 3. `innet report OUT --tier standard -o OUT/report.html --markdown docs/REPRODUCED.md`, which
#    also writes docs/figures/reproduced/*.png and fails if an entry lacks its row or image;
# 4. a headless-Chromium screenshot of the page (OUT/report.png, up to 60,000 px tall) to look at;
# 5. prints the git command that commits the page, naming the commit it was made from.
# INNET_TIER=full runs the papers at their own size (hours; `--dry-run` tells how many) and writes
# docs/REPRODUCED-full.md with its figures in docs/figures/reproduced-full/, beside the standard
# tier's page. INNET_TIER=smoke runs the same steps on the smoke tier (minutes; no verdicts; its
# Markdown page goes to OUT/REPRODUCED.md, never into docs/); INNET_PAPERS=switchvm
# (a paper or PAPER/ENTRY) runs only that part (the page still lists every entry).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-reproduced}
tier=${INNET_TIER:-standard}
papers=${INNET_PAPERS:-all}
# The project's venv (scripts/setup.sh makes it) comes first: an `innet` elsewhere on PATH (e.g. a
# stale user-wide install) may not import this checkout's package.
if [ -z "${VIRTUAL_ENV:-}" ] && [ -f .venv/bin/activate ]; then
    # shellcheck disable=SC1091
    . .venv/bin/activate
fi
if ! python3 -c 'import innet' 2>/dev/null; then
    echo "reproduce.sh: python3 cannot import innet; run scripts/setup.sh first (it creates .venv)" >&2
    exit 1
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "reproduce.sh: the work tree has uncommitted changes; commit them first (results name the commit)" >&2
    exit 1
fi
# Transparent huge pages for every process the run starts (the Dask workers too): glibc 2.35+
# `madvise`s its heap, which makes the simulator's memory-bound runs faster (FT16: about a quarter
# less CPU) for about 3 % more peak memory; no answer changes (docs/results/engine.md). Older
# glibcs ignore the variable.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"
commit=$(git rev-parse --short=12 HEAD)
echo "== innet reproduce $papers --tier $tier --out $out   (commit $commit, $(uptime | sed 's/.*load/load/'))"
innet reproduce "$papers" --tier "$tier" --out "$out"
echo "== innet report"
# docs/REPRODUCED.md is the standard tier's page, docs/REPRODUCED-full.md the full tier's; the smoke
# tier's (no verdicts) goes beside its results.
case "$tier" in
    standard) md=docs/REPRODUCED.md; figs=docs/figures/reproduced ;;
    full) md=docs/REPRODUCED-full.md; figs=docs/figures/reproduced-full ;;
    *) md="$out/REPRODUCED.md"; figs= ;;
esac
innet report "$out" --tier "$tier" -o "$out/report.html" --markdown "$md"
if command -v chromium >/dev/null; then
    abs=$(realpath -m "$out")
    rm -f "$abs/report.png"
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,60000 \
        --screenshot="$abs/report.png" "file://$abs/report.html" >/dev/null 2>&1 || true
    if [ -s "$abs/report.png" ]; then
        echo "screenshot: $out/report.png (up to 60,000 px of the page; look at it)"
    else
        echo "reproduce.sh: chromium made no screenshot of $out/report.html" >&2
    fi
fi
if [ -n "$figs" ]; then
    echo "== done: $md is the $tier tier of $commit. Commit it with:"
    echo "   git add $md $figs && git commit -m '$md from the $tier tier of $commit'"
else
    echo "== done: $md is the $tier tier of $commit (docs/, the other tiers' pages, is left as it is)"
fi
