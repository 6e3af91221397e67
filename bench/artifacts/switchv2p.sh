#!/usr/bin/env bash
# Build the SwitchV2P authors' ns-3 artifact (acsl-technion/SwitchV2P) from copies the user fetched,
# outside this repository, so it can run beside innet on the same inputs (docs/results/artifacts.md).
#
#   bench/artifacts/switchv2p.sh SWITCHV2P_REPO NS3_REPO [BUILD_DIR]
#
# SWITCHV2P_REPO  a checkout or bare git directory of acsl-technion/SwitchV2P
# NS3_REPO        a checkout or bare git directory of nsnam/ns-3-dev-git holding the tag ns-3.36.1
# BUILD_DIR       where the patched ns-3 tree is laid out and built
#                 (default ~/.cache/innet/artifacts/switchv2p)
#
# What it does, as the artifact's own build.sh does but without network access or sudo prompts:
# installs libz3-dev and libboost-dev (Debian), lays out ns-3.36.1 in BUILD_DIR/ns3, copies the
# artifact's switchv2p/ program into scratch/ with its datasets unpacked, applies the artifact's
# ns-3 patch, and builds ns-3 `optimized` with only the modules the artifact names. Idempotent: a
# second run rebuilds only what changed. Nothing of the artifact is written into this repository.
# On success the last line is the path of the built `sim` program's ns-3 tree (NS3_HOME).
set -euo pipefail

die() { echo "switchv2p.sh: $*" >&2; exit 2; }
log() { printf '== %s\n' "$*" >&2; }

[ $# -ge 2 ] || die "usage: $0 SWITCHV2P_REPO NS3_REPO [BUILD_DIR] (paths of copies you fetched: acsl-technion/SwitchV2P and nsnam/ns-3-dev-git)"
v2p_repo=$(readlink -m "$1")
ns3_repo=$(readlink -m "$2")
build_dir=$(readlink -m "${3:-$HOME/.cache/innet/artifacts/switchv2p}")
ns3_tag=ns-3.36.1

# A path is usable when git can read a commit from it (a bare git directory or a checkout).
git_dir_of() { git -C "$1" rev-parse --git-dir >/dev/null 2>&1 || die "$1 is not a git checkout or git directory"; }
[ -e "$v2p_repo" ] || die "SwitchV2P repository not found: $1"
[ -e "$ns3_repo" ] || die "ns-3 repository not found: $2"
git_dir_of "$v2p_repo"
git_dir_of "$ns3_repo"
v2p_rev=$(git -C "$v2p_repo" rev-parse HEAD)
git -C "$v2p_repo" cat-file -e "HEAD:ns3-3.36.1.patch" 2>/dev/null \
    || die "$v2p_repo at $v2p_rev has no ns3-3.36.1.patch: is it acsl-technion/SwitchV2P?"
git -C "$v2p_repo" cat-file -e "HEAD:switchv2p/sim.cc" 2>/dev/null \
    || die "$v2p_repo at $v2p_rev has no switchv2p/sim.cc: is it acsl-technion/SwitchV2P?"
git -C "$ns3_repo" rev-parse -q --verify "refs/tags/$ns3_tag^{commit}" >/dev/null \
    || die "$ns3_repo has no tag $ns3_tag (fetch nsnam/ns-3-dev-git with its tags)"

# Debian packages the artifact's README names (Z3 for the ILP Controller, Boost), plus the
# toolchain ns-3 3.36's CMake build needs.
apt_packages=(libz3-dev libboost-dev cmake g++ python3 pkg-config)
missing=()
for p in "${apt_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "could not install ${missing[*]} (apt-get failed; install them and run again)"
fi

mkdir -p "$build_dir"
ns3_dir="$build_dir/ns3"
stamp="$build_dir/.laid-out"
want="$ns3_tag $(git -C "$ns3_repo" rev-parse "$ns3_tag^{commit}") switchv2p $v2p_rev"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "laying out $ns3_tag + SwitchV2P $v2p_rev in $ns3_dir"
    rm -rf "$ns3_dir" "$build_dir/switchv2p-src"
    mkdir -p "$ns3_dir" "$build_dir/switchv2p-src"
    # A size-limited mirror may lack large blobs (ns-3's LTE fading traces): those are fine as
    # long as none belongs to a module the artifact builds.
    here=$(dirname "$(readlink -f "$0")")
    python3 "$here/git_export.py" "$ns3_repo" "$ns3_tag" "$ns3_dir" 2>"$build_dir/missing-ns3.txt" \
        || [ $? -eq 3 ] || die "could not export $ns3_tag from $ns3_repo"
    if grep -E 'not in this copy: (src/(core|network|point-to-point|virtual-net-device|applications|internet|csma)/|[^/]*$|build-support/|scratch/)' \
            "$build_dir/missing-ns3.txt" >&2; then
        die "files the artifact's build needs are missing from $ns3_repo (above)"
    fi
    python3 "$here/git_export.py" "$v2p_repo" HEAD "$build_dir/switchv2p-src" 2>"$build_dir/missing-switchv2p.txt" \
        || [ $? -eq 3 ] || die "could not export HEAD from $v2p_repo"
    # Name what the copy lacks (the public repository stores no blob for the alibaba and
    # microburst datasets): runs that need those files will fail.
    sed 's/^git_export: /switchv2p.sh: /' "$build_dir/missing-switchv2p.txt" >&2
    # Datasets whose blobs the public copy lacks (alibaba, microburst) arrive as pointers or not
    # at all: unpack what is a real gzip file and say which are not usable.
    for gz in "$build_dir/switchv2p-src/switchv2p/datasets/"*.gz; do
        if gzip -t "$gz" 2>/dev/null; then gunzip -f "$gz"
        else echo "switchv2p.sh: $(basename "$gz") is not in this copy (the public repository lacks its blob); runs that need it will fail" >&2
             rm -f "$gz"
        fi
    done
    cp -r "$build_dir/switchv2p-src/switchv2p" "$ns3_dir/scratch/"
    (cd "$ns3_dir" && git apply "$build_dir/switchv2p-src/ns3-3.36.1.patch") \
        || die "the artifact's ns3-3.36.1.patch did not apply to $ns3_tag"
    echo "$want" > "$stamp"
fi

log "configure + build ns-3 (optimized; modules the artifact names)"
cd "$ns3_dir"
if [ ! -f cmake-cache/CMakeCache.txt ] || ! grep -q 'CMAKE_BUILD_TYPE:STRING=release' cmake-cache/CMakeCache.txt 2>/dev/null; then
    ./ns3 configure -d optimized \
        --enable-modules core,network,point-to-point,virtual-net-device,applications,internet,csma \
        >"$build_dir/configure.log" 2>&1 || die "ns-3 configure failed; see $build_dir/configure.log"
fi
./ns3 build -j "${JOBS:-$(nproc)}" >"$build_dir/build.log" 2>&1 \
    || { tail -30 "$build_dir/build.log" >&2; die "ns-3 build failed; see $build_dir/build.log"; }
sim=$(find build/scratch/switchv2p -maxdepth 1 -type f -name '*sim*' -perm -u+x 2>/dev/null | head -1)
[ -n "$sim" ] || die "build finished but no sim program under $ns3_dir/build/scratch/switchv2p"
log "built: $ns3_dir/$sim"
echo "$ns3_dir"
