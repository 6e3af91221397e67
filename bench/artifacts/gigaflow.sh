#!/usr/bin/env bash
# Builds the Gigaflow authors' artifact (gigaflow-vswitch/gvs, branch asplos-25: Open vSwitch with
# Gigaflow inside the userspace datapath) out of tree, for bench/artifacts/gvs_run.py.
#   bench/artifacts/gigaflow.sh GVS_REPO [BUILD_DIR]
# GVS_REPO: the user's fetched gvs (a bare git directory or a checkout; e.g.
#   git clone --bare https://github.com/gigaflow-vswitch/gvs). It must hold the branch asplos-25.
# BUILD_DIR: default ~/.cache/innet/artifacts/gvs. The sources of asplos-25 are exported there
#   (git archive; nothing is written into GVS_REPO or into this repository), then
#   ./boot.sh && ./configure && make (no DPDK: the dummy netdev is all the runner needs).
# Installs OVS's Debian build dependencies (debian/control's Build-Depends that the build uses)
# when missing. Idempotent: a second run re-exports only when the branch moved and then only
# re-runs make. Prints the paths of the daemons and tools on success, one per line as NAME=PATH.
# GVS_JOBS (default 2) sets make -j; the build runs under nice -n 10.
set -euo pipefail

die() { echo "gigaflow.sh: $*" >&2; exit 2; }
log() { printf '== %s\n' "$*" >&2; }

branch=asplos-25
repo="${1:-}"
build="${2:-$HOME/.cache/innet/artifacts/gvs}"
jobs="${GVS_JOBS:-2}"

[ -n "$repo" ] || die "no gvs repository given. Usage: bench/artifacts/gigaflow.sh GVS_REPO [BUILD_DIR]
  fetch it first, e.g.: git clone --bare https://github.com/gigaflow-vswitch/gvs gvs.git"
[ -e "$repo" ] || die "'$repo' does not exist (expected a bare git directory or a checkout of gigaflow-vswitch/gvs)"
git --git-dir="$repo" rev-parse --git-dir >/dev/null 2>&1 || git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 \
    || die "'$repo' is not a git repository (expected a bare git directory or a checkout of gigaflow-vswitch/gvs)"
if git --git-dir="$repo" rev-parse --is-bare-repository >/dev/null 2>&1 && \
   [ "$(git --git-dir="$repo" rev-parse --is-bare-repository)" = true ]; then
    g=(git --git-dir="$repo")
else
    g=(git -C "$repo")
fi
commit=$("${g[@]}" rev-parse --verify -q "refs/heads/$branch^{commit}" 2>/dev/null \
         || "${g[@]}" rev-parse --verify -q "refs/remotes/origin/$branch^{commit}" 2>/dev/null) \
    || die "branch '$branch' is absent from '$repo' (fetch it: git -C REPO fetch origin $branch:$branch)"
# A gvs tree has the Gigaflow mapper next to OVS's userspace datapath.
"${g[@]}" cat-file -e "$commit:lib/mapper.c" 2>/dev/null && "${g[@]}" cat-file -e "$commit:lib/dpif-netdev.c" 2>/dev/null \
    || die "'$repo' branch $branch has no lib/mapper.c + lib/dpif-netdev.c: not a gvs (Gigaflow Open vSwitch) repository"

# Debian build dependencies: OVS's debian/control Build-Depends that ./boot.sh, ./configure and make
# use (autotools, libtool, OpenSSL, Python 3), plus libcap-ng and libunbound, which configure links
# when present. Sphinx/graphviz/twisted are for the docs and packaging, not for the binaries.
apt_packages=(autoconf automake libtool build-essential pkg-config libssl-dev openssl python3 libcap-ng-dev libunbound-dev)
missing=()
for p in "${apt_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); else sudo=(); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq || die "apt-get update failed (needed for: ${missing[*]})"
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install failed for: ${missing[*]}"
fi

src="$build/src"
mkdir -p "$build"
stamp="$build/commit"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$commit" ] || [ ! -f "$src/boot.sh" ]; then
    log "exporting $branch ($commit) into $src"
    rm -rf "$src"
    mkdir -p "$src"
    "${g[@]}" archive --format=tar "$commit" | tar -x -C "$src" || die "git archive of $branch failed"
    echo "$commit" > "$stamp"
fi

cd "$src"
# Without DPDK asplos-25 does not compile: lib/netdev.c and lib/netdev-offload.c register the
# P4-SDNet (FPGA) offload provider `netdev_offload_dpdk_p4sdnet`, which exists only in DPDK builds
# (lib/netdev-offload-provider.h declares it under #ifdef DPDK_NETDEV). In the exported copy (never
# in the user's repository or ours) those two registrations are put under the same #ifdef; the
# provider is only used with other_config:hw-offload-p4sdnet, which needs DPDK anyway.
for f in lib/netdev.c lib/netdev-offload.c; do
    if ! grep -q 'innet: DPDK-only provider' "$f"; then
        sed -i 's|^\([[:space:]]*\)netdev_register_flow_api_provider(&netdev_offload_dpdk_p4sdnet);|#ifdef DPDK_NETDEV /* innet: DPDK-only provider */\n\1netdev_register_flow_api_provider(\&netdev_offload_dpdk_p4sdnet);\n#endif|' "$f"
        grep -q 'innet: DPDK-only provider' "$f" || die "could not guard the P4-SDNet provider in $f (has asplos-25 changed?)"
    fi
done
if [ ! -x configure ]; then
    log "./boot.sh"
    nice -n 10 ./boot.sh > "$build/boot.log" 2>&1 || die "build step ./boot.sh failed; see $build/boot.log"
fi
if [ ! -f Makefile ]; then
    log "./configure"
    nice -n 10 ./configure --enable-silent-rules > "$build/configure.log" 2>&1 \
        || die "build step ./configure failed; see $build/configure.log (last lines: $(tail -3 "$build/configure.log" | tr '\n' ' '))"
fi
# Only the programs the runner uses: asplos-25's last two commits delete .ci/ while the Makefile
# still lists .ci/linux-build.sh among its distributed files, so a plain `make` (all-am) stops.
targets=(vswitchd/ovs-vswitchd ovsdb/ovsdb-server ovsdb/ovsdb-tool utilities/ovs-vsctl utilities/ovs-appctl utilities/ovs-ofctl vswitchd/vswitch.ovsschema)
log "make -j$jobs ${targets[*]} (log: $build/make.log)"
nice -n 10 make -j"$jobs" "${targets[@]}" > "$build/make.log" 2>&1 \
    || die "build step make failed; see $build/make.log (last lines: $(tail -5 "$build/make.log" | tr '\n' ' '))"

ok=1
for bin in vswitchd/ovs-vswitchd ovsdb/ovsdb-server ovsdb/ovsdb-tool utilities/ovs-vsctl utilities/ovs-appctl utilities/ovs-ofctl; do
    name=$(basename "$bin")
    if [ -x "$src/$bin" ]; then echo "$name=$src/$bin"; else echo "gigaflow.sh: $name missing after make ($src/$bin)" >&2; ok=0; fi
done
echo "schema=$src/vswitchd/vswitch.ovsschema"
echo "commit=$commit"
[ "$ok" = 1 ] || exit 2
