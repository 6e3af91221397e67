#!/usr/bin/env bash
# Set up a fresh Debian machine for innet: system packages the tests use, Python dependencies,
# and the innet package itself (Rust simulator built in release mode behind `innet`).
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*" >&2; }

# openvswitch-switch: real OVS, the oracle of the gigaflow slow-path tests (daemons are started by the tests).
apt_packages=(tshark pkg-config chromium openvswitch-switch)
# The real-packet switch's netns tests: ip/tc (netem), ping, ethtool (offload inspection).
apt_packages+=(iproute2 iputils-ping ethtool)
# redis-server, memcached, maven, openjdk-17: the application switch's real Redis, memcached and Cassandra (Maven Central jars).
apt_packages+=(redis-server redis-tools memcached maven openjdk-17-jre-headless)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture; answer no without a prompt.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust (rustup) first" >&2
    exit 1
fi

log "python dependencies"
python3 -m pip install -q --disable-pip-version-check \
    "maturin>=1.5,<2" numpy pandas pyarrow matplotlib click rich pytest hypothesis highsbox "dask[distributed]" cassandra-driver redis pymemcache lz4 python-snappy

log "build and install innet (release)"
python3 -m pip install -q --disable-pip-version-check --no-build-isolation -e .

# pyenv and similar shims need a rehash before a new console script is on PATH.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash; fi
command -v innet >/dev/null || { echo "setup: 'innet' is not on PATH after install" >&2; exit 1; }
log "ready: $(command -v innet)"
