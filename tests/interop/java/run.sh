#!/usr/bin/env bash
# The official RocketMQ 4.9.8 Java client against uringmq-broker: runs one check class of
# tests/interop/java/ (default DeliveredPropertiesCheck) against a fresh broker; the class gets
# the NameServer address and the work dir as its arguments and passes by printing "JAVA-CHECK OK".
# Usage: tests/interop/java/run.sh <uringmq-broker binary> <work dir>
#          [class [broker.conf line | -Dname=value ...]]
# A -D argument is a JVM option of the check (-Dtls.enable=true); @WORK@ in either is the work
# dir, where self-signed test certificates and keys (server.pem, server.key, client.pem,
# client.key) are made when a line sets tls.server.*.
# The client comes from a RocketMQ 4.9.8 Java distribution (tools/find-rocketmq-java.sh: Apache's
# binary distribution named by $URINGMQ_ROCKETMQ_JAVA, or a rocketmq-java folder beside the
# checkout). Without it, or without javac, the test prints a skip line and exits 77 (Skipped).
set -euo pipefail
broker_bin=$1
work=$2
check=${3:-DeliveredPropertiesCheck}
extra_conf=("${@:4}")
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../support/java_lib.sh
source "$repo/tests/support/java_lib.sh"
java_or_skip "$check"

rm -rf "$work" && mkdir -p "$work/classes"
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$repo"/tests/interop/java/*.java

# Two shards: two presented brokers on port and port + 10, each with its VIP port 2 below.
read -r port namesrv < <("$repo/tools/free-ports.sh" 2 2)
cat > "$work/broker.conf" <<CONF
storePathRootDir=$work/store
listenPort=$port
namesrvListenPort=$namesrv
bindAddress=127.0.0.1
messageDelayLevel=500ms 1s 2s
defaultTopicQueueNums=4
shardCount=2
mappedFileSizeCommitLog=67108864
diskSpaceWarningLevelRatio=100
CONF
jvm_opts=()
for line in "${extra_conf[@]}"; do
  if [[ $line == -D* ]]; then jvm_opts+=("${line//@WORK@/$work}"); continue; fi
  echo "${line//@WORK@/$work}" >> "$work/broker.conf"
done
# A check's ACL rules (<Check>.plain_acl.yml) go beside broker.conf, where aclEnable reads them.
if [ -f "$repo/tests/interop/java/$check.plain_acl.yml" ]; then
  cp "$repo/tests/interop/java/$check.plain_acl.yml" "$work/plain_acl.yml"
fi
if grep -q '^tls\.server\.' "$work/broker.conf"; then
  for who in server client; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -keyout "$work/$who.key" -out "$work/$who.pem" -subj "/CN=uringmq-test-$who" 2> /dev/null
  done
fi
"$broker_bin" -c "$work/broker.conf" > "$work/broker.log" 2>&1 &
broker_pid=$!
trap 'kill -TERM $broker_pid 2>/dev/null; wait $broker_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  grep -q "uringmq-broker ready" "$work/broker.log" && break
  kill -0 $broker_pid 2>/dev/null || { cat "$work/broker.log"; exit 1; }
  sleep 0.1
done
grep -q "uringmq-broker ready" "$work/broker.log" || { echo "broker not ready"; exit 1; }

status=0
timeout 120 "$JAVA" -cp "$RMQ_CP:$work/classes" -Drocketmq.client.logUseSlf4j=false \
  ${jvm_opts[@]+"${jvm_opts[@]}"} \
  "$check" "127.0.0.1:$namesrv" "$work" > "$work/java.log" 2>&1 || status=$?
grep -E '^(FAIL|JAVA-CHECK|CHECK|plain|delayed|timed) ' "$work/java.log" || true
if [ "$status" -ne 0 ] || ! grep -q "JAVA-CHECK OK" "$work/java.log"; then
  echo "$check: FAILED (exit $status); client output:"
  tail -40 "$work/java.log"
  exit 1
fi
echo "$check: passed"
