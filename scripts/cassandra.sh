#!/usr/bin/env bash
# A real Cassandra node for the application switch's tests, assembled from Maven Central jars
# (no tarball; docs/appswitch.md "Tests against the real servers").
#
#   scripts/cassandra.sh fetch                       # jars into $INNET_CASSANDRA_CACHE (once)
#   scripts/cassandra.sh start DIR ADDRESS [NETNS]   # config + data in DIR, listen on ADDRESS:9042,
#                                                    # inside network namespace NETNS if given;
#                                                    # returns when CQL is ready (prints the pid)
#   scripts/cassandra.sh stop DIR                    # SIGTERM, wait for exit
#
# Needs Java 17 and Maven (scripts/setup.sh installs both). 1 GB heap; ~10 s to ready.
# A second node joins the first one's cluster with INNET_CASSANDRA_SEEDS=FIRST_ADDRESS (start
# the nodes one after the other: Cassandra bootstraps one node at a time); INNET_CASSANDRA_HEAP
# sets the heap (default 1G; the two-node Fig. 22 uses 512M per node). INNET_CASSANDRA_AUTH=1
# turns on PasswordAuthenticator + CassandraAuthorizer (superuser cassandra/cassandra) with the
# role and permission caches off, so a GRANT or REVOKE takes effect on the next request.
set -euo pipefail

version="${INNET_CASSANDRA_VERSION:-5.0.9}"
cache="${INNET_CASSANDRA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/innet/cassandra-$version}"
ready_timeout_s="${INNET_CASSANDRA_READY_S:-180}"
heap="${INNET_CASSANDRA_HEAP:-1G}"
[[ "$heap" =~ ^[0-9]+[MG]$ ]] || { echo "cassandra.sh: INNET_CASSANDRA_HEAP=$heap: expected a size like 512M or 1G" >&2; exit 1; }

die() { echo "cassandra.sh: $*" >&2; exit 1; }

fetch() {
    if [ -f "$cache/lib/.complete" ]; then return; fi
    command -v mvn >/dev/null || die "maven (mvn) not found; run scripts/setup.sh"
    mkdir -p "$cache"
    cat > "$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>innet</groupId><artifactId>cassandra-node</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
    echo "cassandra.sh: fetching cassandra-all $version and its dependencies from Maven Central" >&2
    (cd "$cache" && timeout 900 mvn -B -q -Dmaven.repo.local="$cache/m2" dependency:copy-dependencies \
        -DoutputDirectory=lib -DincludeScope=runtime) || die "mvn dependency:copy-dependencies failed"
    ls "$cache"/lib/cassandra-all-*.jar >/dev/null 2>&1 || die "no cassandra-all jar in $cache/lib"
    touch "$cache/lib/.complete"
}

write_config() {
    local dir="$1" addr="$2" seeds="${INNET_CASSANDRA_SEEDS:-$2}"
    mkdir -p "$dir/conf" "$dir/data" "$dir/logs"
    cat > "$dir/conf/cassandra.yaml" <<YAML
cluster_name: innet
num_tokens: 16
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories: [$dir/data/data]
commitlog_directory: $dir/data/commitlog
saved_caches_directory: $dir/data/saved_caches
hints_directory: $dir/data/hints
cdc_raw_directory: $dir/data/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$seeds:7000"
listen_address: $addr
rpc_address: $addr
storage_port: 7000
native_transport_port: 9042
start_native_transport: true
endpoint_snitch: SimpleSnitch
# Off by default in 5.0; the application switch's tests use a view (issue 23, case 3).
materialized_views_enabled: true
YAML
    if [ "${INNET_CASSANDRA_AUTH:-0}" = 1 ]; then
        cat >> "$dir/conf/cassandra.yaml" <<YAML
authenticator: PasswordAuthenticator
authorizer: CassandraAuthorizer
role_manager: CassandraRoleManager
roles_validity: 0ms
permissions_validity: 0ms
credentials_validity: 0ms
YAML
    fi
    cat > "$dir/conf/logback.xml" <<XML
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$dir/logs/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML
}

start() {
    local dir="$1" addr="$2" netns="${3:-}"
    fetch
    dir="$(mkdir -p "$dir" && cd "$dir" && pwd)"
    write_config "$dir" "$addr"
    local jamm
    jamm=$(ls "$cache"/lib/jamm-*.jar | head -n 1)
    local -a run=()
    [ -n "$netns" ] && run=(ip netns exec "$netns")
    # JVM flags: the JPMS section of upstream conf/jvm17-server.options (5.0 exits without them).
    local -a opens=()
    for m in java.lang.module jdk.internal.loader jdk.internal.ref jdk.internal.reflect jdk.internal.math \
             jdk.internal.module jdk.internal.util.jar sun.nio.ch java.io java.lang.reflect java.lang java.util \
             java.nio java.util.concurrent java.util.concurrent.atomic java.math java.net; do
        opens+=(--add-opens "java.base/$m=ALL-UNNAMED")
    done
    setsid "${run[@]}" java "-Xms$heap" "-Xmx$heap" -Xss256k -XX:+UseG1GC -XX:+ParallelRefProcEnabled \
        -XX:MaxTenuringThreshold=1 -XX:G1HeapRegionSize=16m \
        -javaagent:"$jamm" -Djdk.attach.allowAttachSelf=true \
        --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
        --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED \
        --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED \
        --add-exports java.sql/java.sql=ALL-UNNAMED --add-exports java.base/java.lang.ref=ALL-UNNAMED \
        --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED \
        --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED \
        --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED \
        --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
        --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED \
        "${opens[@]}" \
        -Dio.netty.tryReflectionSetAccessible=true -Dio.netty.allocator.useCacheForAllThreads=true \
        -Dio.netty.allocator.maxOrder=11 -Dcassandra-foreground=yes \
        -Dcassandra.config="file://$dir/conf/cassandra.yaml" -Dlogback.configurationFile="$dir/conf/logback.xml" \
        -Dcassandra.logdir="$dir/logs" -Dcassandra.storagedir="$dir/data" \
        -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000 \
        -Dcassandra.superuser_setup_delay_ms=0 \
        -cp "$dir/conf:$cache/lib/*" org.apache.cassandra.service.CassandraDaemon \
        > "$dir/logs/stdout.log" 2>&1 < /dev/null &
    local pid=$!
    echo "$pid" > "$dir/cassandra.pid"
    local deadline=$(( $(date +%s) + ready_timeout_s ))
    until grep -q "Starting listening for CQL clients\|Startup complete" "$dir/logs/system.log" 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$dir/logs/stdout.log" >&2 || true
            die "Cassandra exited during startup (logs in $dir/logs)"
        fi
        [ "$(date +%s)" -lt "$deadline" ] || { kill "$pid" 2>/dev/null || true; die "not ready after ${ready_timeout_s}s (logs in $dir/logs)"; }
        sleep 0.5
    done
    echo "$pid"
}

stop() {
    local dir="$1"
    [ -f "$dir/cassandra.pid" ] || return 0
    local pid
    pid=$(cat "$dir/cassandra.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/cassandra.pid"
}

case "${1:-}" in
    fetch) fetch ;;
    start) [ $# -ge 3 ] || die "usage: start DIR ADDRESS [NETNS]"; start "$2" "$3" "${4:-}" ;;
    stop) [ $# -ge 2 ] || die "usage: stop DIR"; stop "$2" ;;
    *) die "usage: $0 fetch | start DIR ADDRESS [NETNS] | stop DIR" ;;
esac
