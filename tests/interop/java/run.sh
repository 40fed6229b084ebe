#!/usr/bin/env bash
# The official RocketMQ 4.9.8 Java client against uringmq-broker: runs one check class of
# tests/interop/java/ (default DeliveredPropertiesCheck) against a fresh broker; the class gets
# the NameServer address and the work dir as its arguments and passes by printing "JAVA-CHECK OK".
# Usage: tests/interop/java/run.sh <uringmq-broker binary> <work dir>
#          [class [broker.conf line ...]]
# The client comes from a RocketMQ 4.9.8 Java distribution (a folder with env.sh and lib/):
# $URINGMQ_ROCKETMQ_JAVA, else a folder named rocketmq-java one level beside the checkout
# (tools/find-rocketmq-java.sh). Without it, or without java/javac, the test prints a skip line
# and passes (a fresh clone elsewhere has no Java pieces).
set -euo pipefail
broker_bin=$1
work=$2
check=${3:-DeliveredPropertiesCheck}
extra_conf=("${@:4}")
repo=$(cd "$(dirname "$0")/../../.." && pwd)
rmq=$("$repo/tools/find-rocketmq-java.sh" || true)
if [ -z "$rmq" ] || [ ! -f "$rmq/env.sh" ] || ! command -v javac >/dev/null 2>&1; then
  echo "$check: SKIPPED (no RocketMQ Java distribution found (set" \
    "URINGMQ_ROCKETMQ_JAVA), or no javac)"
  exit 0
fi
# shellcheck source=/dev/null
source "$rmq/env.sh" || { echo "$check: SKIPPED (its env.sh failed)"; exit 0; }

rm -rf "$work" && mkdir -p "$work/classes"
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$repo"/tests/interop/java/*.java

read -r port namesrv < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
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
for line in "${extra_conf[@]}"; do echo "$line" >> "$work/broker.conf"; done
# A check's ACL rules (<Check>.plain_acl.yml) go beside broker.conf, where aclEnable reads them.
if [ -f "$repo/tests/interop/java/$check.plain_acl.yml" ]; then
  cp "$repo/tests/interop/java/$check.plain_acl.yml" "$work/plain_acl.yml"
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
  "$check" "127.0.0.1:$namesrv" "$work" > "$work/java.log" 2>&1 || status=$?
grep -E '^(FAIL|JAVA-CHECK|CHECK|plain|delayed|timed) ' "$work/java.log" || true
if [ "$status" -ne 0 ] || ! grep -q "JAVA-CHECK OK" "$work/java.log"; then
  echo "$check: FAILED (exit $status); client output:"
  tail -40 "$work/java.log"
  exit 1
fi
echo "$check: passed"
