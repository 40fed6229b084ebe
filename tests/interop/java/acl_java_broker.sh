#!/usr/bin/env bash
# AclCheck (tests/interop/java/AclCheck.java) against the Java RocketMQ 4.9.8 NameServer and
# broker with aclEnable=true and the same rules (AclCheck.plain_acl.yml as
# $ROCKETMQ_HOME/conf/plain_acl.yml): the codes and remarks AclCheck expects from uringmq-broker
# are the ones the Java broker answers. A changed file may take up to 10 s there (the Java broker
# checks it every 5 s).
# Usage: tests/interop/java/acl_java_broker.sh <work dir>
# The Java pieces come from a RocketMQ 4.9.8 distribution (tools/find-rocketmq-java.sh); without
# it, or without javac, the test prints a skip line and exits 77 (Skipped).
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
# shellcheck source=../../support/java_lib.sh
source "$repo/tests/support/java_lib.sh"
java_or_skip acl_java_broker
rm -rf "$work" && mkdir -p "$work/classes" "$work/home/conf"
cp "$("$rmq_java" conf)"/logback_*.xml "$work/home/conf/"
cp "$here/AclCheck.plain_acl.yml" "$work/home/conf/plain_acl.yml"
export ROCKETMQ_HOME=$work/home  # where the Java broker reads conf/plain_acl.yml
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$here/AclCheck.java"

read -r jns jb < <("$repo/tools/free-ports.sh" 2)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
cat > "$work/broker.conf" <<CONF
brokerClusterName=TestCluster
brokerName=broker-j
brokerId=0
brokerRole=ASYNC_MASTER
brokerIP1=127.0.0.1
listenPort=$jb
namesrvAddr=127.0.0.1:$jns
storePathRootDir=$work/store
storePathCommitLog=$work/store/commitlog
mappedFileSizeCommitLog=67108864
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
aclEnable=true
CONF
NAMESRV_HEAP="-Xms128m -Xmx128m -Xmn64m" "$rmq_java" namesrv "$jns" "$work/ns" \
  > "$work/namesrv.log" 2>&1 &
pids+=($!)
BROKER_HEAP="-Xms256m -Xmx256m" BROKER_DIRECT=256m BROKER_PRETOUCH=0 \
  "$rmq_java" broker "$work/broker.conf" "$work/run" > "$work/broker.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  grep -q "boot success" "$work/broker.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "boot success" "$work/broker.log" || { echo "the Java broker did not start"; \
  tail -30 "$work/broker.log"; exit 1; }

status=0
timeout 150 "$JAVA" -cp "$RMQ_CP:$work/classes" -Drocketmq.client.logUseSlf4j=false \
  AclCheck "127.0.0.1:$jns" "$work/home/conf" 10000 > "$work/java.log" 2>&1 || status=$?
grep -E '^(FAIL|JAVA-CHECK|CHECK) ' "$work/java.log" || true
if [ "$status" -ne 0 ] || ! grep -q "JAVA-CHECK OK" "$work/java.log"; then
  echo "acl_java_broker: FAILED (exit $status)"
  exit 1
fi
echo "acl_java_broker: passed"
