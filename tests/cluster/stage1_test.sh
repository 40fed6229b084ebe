#!/usr/bin/env bash
# Cluster stage 1: uringmq brokers as members of a RocketMQ cluster (tests/cluster/README.md).
# Mode "java": two Java 4.9.8 NameServers, uringmq processes A (broker-a) and B (broker-b)
# registering with both (namesrvAddr), and one Java 4.9.8 broker (broker-j). Mode "builtin":
# A is also the NameServer (namesrvListenPort); B and the Java broker register with it.
# ClusterCheck.java (the official client and admin) checks listings, the spread of a new topic,
# consumption, kill -9 and restart of B, and SIGTERM (A in mode java, B in mode builtin).
# Usage: tests/cluster/stage1_test.sh <uringmq-broker binary> <work dir> [java|builtin]
# Without a RocketMQ Java distribution ($URINGMQ_ROCKETMQ_JAVA, tools/find-rocketmq-java.sh) or
# javac it prints a skip line and exits 77 (Skipped).
set -euo pipefail
broker_bin=$(realpath "$1")
work=$2
mode=${3:-java}
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"
java_or_skip "cluster_stage1 ($mode)"
rm -rf "$work" && mkdir -p "$work/classes"
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$repo/tests/cluster/ClusterCheck.java"

pidfiles=()
trap cluster_kill_all EXIT
read -r ns1 ns2 pa pb pj < <("$repo/tools/free-ports.sh" 5 2)  # room for A's 2 shards

uringmq_conf() {  # name port extra-lines... (SHARDS: the shard count, default 1)
  local name=$1 port=$2
  shift 2
  cat <<CONF
brokerClusterName=TestCluster
brokerName=$name
storePathRootDir=$work/$name/store
listenPort=$port
bindAddress=127.0.0.1
shardCount=${SHARDS:-1}
defaultTopicQueueNums=4
mappedFileSizeCommitLog=16777216
diskSpaceWarningLevelRatio=100
CONF
  printf '%s\n' "$@"
}

# A Java 4.9.8 broker (broker-j) registering with $1; waits until it booted.
start_java_broker() {
  mkdir -p "$work/j"
  cat > "$work/j/broker.conf" <<CONF
brokerClusterName=TestCluster
brokerName=broker-j
brokerId=0
brokerRole=ASYNC_MASTER
brokerIP1=127.0.0.1
listenPort=$pj
namesrvAddr=$1
storePathRootDir=$work/j/store
storePathCommitLog=$work/j/store/commitlog
mappedFileSizeCommitLog=16777216
mappedFileSizeConsumeQueue=60000
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
defaultTopicQueueNums=4
CONF
  start_java_broker_conf j "$work/j/broker.conf"
}

pidfiles+=("$work/broker-a.pid" "$work/broker-b.pid")
# A runs 2 shards: 2 brokers (broker-a-0, broker-a-1) on pa and pa + 10.
groups=broker-a-0,broker-a-1,broker-b,broker-j
if [ "$mode" = java ]; then
  namesrv="127.0.0.1:$ns1;127.0.0.1:$ns2"
  start_java_namesrvs "$ns1" "$ns2"  # they listen before the brokers start
  start_java_broker "$namesrv"
  SHARDS=2 uringmq_conf broker-a "$pa" "namesrvListenPort=0" "namesrvAddr=$namesrv" \
    > "$work/a.conf"
  uringmq_conf broker-b "$pb" "namesrvListenPort=0" "namesrvAddr=$namesrv" > "$work/b.conf"
  start_uringmq broker-a "$work/a.conf" 1
  start_uringmq broker-b "$work/b.conf" 1
  stopped=broker-a
else  # A is the NameServer: it starts first (a Java broker registers at start, then every 30 s)
  namesrv="127.0.0.1:$ns1"
  SHARDS=2 uringmq_conf broker-a "$pa" "namesrvListenPort=$ns1" > "$work/a.conf"
  uringmq_conf broker-b "$pb" "namesrvListenPort=0" "namesrvAddr=$namesrv" > "$work/b.conf"
  start_uringmq broker-a "$work/a.conf" 1
  start_java_broker "$namesrv"
  start_uringmq broker-b "$work/b.conf" 1
  stopped=broker-b
fi
wait_java_boot j
# mqadmin clusterList shows every broker of the mixed cluster with its runtime figures
# (GET_BROKER_RUNTIME_INFO's keys: a broker it cannot read is left out or shows an error).
"$rmq_java" mqadmin clusterList -n "127.0.0.1:$ns1" > "$work/clusterList.txt" 2>&1 || true
for g in ${groups//,/ }; do
  if ! grep -E "^TestCluster +$g +0 " "$work/clusterList.txt" > /dev/null; then
    echo "cluster_stage1 ($mode): FAILED: mqadmin clusterList does not list $g:"
    cat "$work/clusterList.txt"
    exit 1
  fi
done
grep -E "Cluster|broker-" "$work/clusterList.txt" | sed 's/^/clusterList: /'
# What ClusterCheck runs to restart B after its kill -9.
cat > "$work/restart-b.sh" <<SH
set -e
$(declare -f start_uringmq)
broker_bin=$broker_bin work=$work
start_uringmq broker-b "$work/b.conf" 2
cp "$work/broker-b.ready" "$work/restart-b.sh.ready"
SH

status=0
timeout 240 "$JAVA" -cp "$RMQ_CP:$work/classes" -Drocketmq.client.logUseSlf4j=false \
  ClusterCheck "$namesrv" "$groups" broker-b "$work/restart-b.sh" "$work/broker-b.pid" \
  "$stopped" "$work/$stopped.pid" > "$work/java.log" 2>&1 || status=$?
grep -E '^(FAIL|JAVA-CHECK|CHECK) ' "$work/java.log" || true
if [ "$status" -ne 0 ] || ! grep -q "JAVA-CHECK OK" "$work/java.log"; then
  echo "cluster_stage1 ($mode): FAILED (exit $status); client output:"
  tail -30 "$work/java.log"
  for f in broker-a broker-b; do echo "--- $f"; tail -15 "$work/$f.log"; done
  exit 1
fi
echo "cluster_stage1 ($mode): passed"
