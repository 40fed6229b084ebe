#!/usr/bin/env bash
# uringmq-ctl's admin commands against the real thing: a RocketMQ 4.9.8 Java NameServer and
# broker (the distribution tools/find-rocketmq-java.sh finds). Proves the requests ctl sends
# are the ones a Java broker answers and that ctl reads its fastjson answers: topic create,
# list, route, status; produce; message by key and by id; group reset by offset and lag;
# broker status and config get/set. Skipped (exit 77, with a line saying why) without the
# distribution or java. Usage: ctl_java_test.sh <uringmq-ctl>
set -euo pipefail
ctl=$1
rmq_java=$(cd "$(dirname "$0")" && pwd)/rocketmq-java.sh
why=$("$(dirname "$0")/find-rocketmq-java.sh" -v 2>&1 >/dev/null) || { echo "SKIP: $why"; exit 77; }
command -v java > /dev/null || { echo "SKIP: no java"; exit 77; }
# The Java broker's disk thresholds raised as in every test that runs one (java_disk_ratios).
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../tests/support/java_lib.sh
source "$repo/tests/support/java_lib.sh"
export JAVA_OPT_EXT="${JAVA_OPT_EXT:-} $java_disk_ratios"
dir=$(mktemp -d)
pids=()
fail() { echo "FAIL: $*" >&2; tail -n 5 "$dir"/*.out >&2 || true; exit 1; }
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT

# Free ports: the NameServer's, and the broker's with its neighbours (VIP port - 2, HA + 1).
read -r ns port < <("$(dirname "$0")/free-ports.sh" 2)
cat > "$dir/broker.conf" <<CONF
brokerClusterName=CtlCluster
brokerName=broker-j
brokerId=0
brokerIP1=127.0.0.1
listenPort=$port
namesrvAddr=127.0.0.1:$ns
storePathRootDir=$dir/store
storePathCommitLog=$dir/store/commitlog
mappedFileSizeCommitLog=16777216
mappedFileSizeConsumeQueue=60000
autoCreateTopicEnable=true
CONF
"$rmq_java" namesrv "$ns" "$dir/ns" > "$dir/ns.out" 2>&1 &
pids+=($!)
BROKER_HEAP="-Xms256m -Xmx256m" BROKER_DIRECT=256m BROKER_PRETOUCH=0 \
  "$rmq_java" broker "$dir/broker.conf" "$dir/b" > "$dir/broker.out" 2>&1 &
pids+=($!)
A=(--addr "127.0.0.1:$port" -n "127.0.0.1:$ns")
for _ in $(seq 1 120); do
  "$ctl" topic route "${A[@]}" -t TBW102 > /dev/null 2>&1 && break
  sleep 1
done
"$ctl" topic route "${A[@]}" -t TBW102 > /dev/null || fail "the Java broker did not register"

"$ctl" topic create "${A[@]}" -t CJ -r 2 -w 2 > /dev/null
"$ctl" topic list "${A[@]}" | grep -qx CJ || fail "topic list lacks CJ"
out=$("$ctl" topic route "${A[@]}" -t CJ)
grep -Eq "^broker-j +2 +2 +6 +127.0.0.1:$port$" <<< "$out" || fail "topic route: $out"
id=$("$ctl" produce --addr "127.0.0.1:$port" --topic CJ --queue 1 --keys jk one |
  sed 's/msgId=\([^ ]*\).*/\1/')
"$ctl" produce --addr "127.0.0.1:$port" --topic CJ --queue 1 two > /dev/null
out=$("$ctl" topic status "${A[@]}" -t CJ)
grep -Eq "^broker-j +1 +0 +2 " <<< "$out" || fail "topic status: $out"
"$ctl" message id "${A[@]}" "$id" | grep "keys=jk .*body=one" > /dev/null || fail "message id $id"
for _ in $(seq 1 20); do  # the Java broker indexes keys asynchronously
  "$ctl" message key "${A[@]}" -t CJ jk 2> /dev/null | grep "body=one" > /dev/null && break
  sleep 0.5
done
"$ctl" message key "${A[@]}" -t CJ jk | grep "body=one" > /dev/null || fail "message key"

"$ctl" group reset "${A[@]}" -g CG -t CJ --offset 1 --queue 1 > /dev/null
out=$("$ctl" group lag "${A[@]}" -g CG -t CJ)
grep -Eq "^CJ +broker-j +1 +2 +1 +1$" <<< "$out" || fail "group lag: $out"
# The Java broker answers its runtime info with NoSuchElementException (code 1) until its store
# statistics took their first sample, a second or so after boot: asked again meanwhile.
for _ in $(seq 1 20); do
  "$ctl" broker status "${A[@]}" 2> /dev/null | grep -E "^brokerVersionDesc +V4_9_8$" > /dev/null &&
    break
  sleep 0.5
done
"$ctl" broker status "${A[@]}" | grep -E "^brokerVersionDesc +V4_9_8$" > /dev/null ||
  fail "broker status"
out=$("$ctl" broker config get "${A[@]}")
grep -qx "listenPort=$port" <<< "$out" || fail "broker config get: $(grep -i port <<< "$out")"
"$ctl" broker config set "${A[@]}" flushIntervalCommitLog=700 > /dev/null
"$ctl" broker config get "${A[@]}" | grep -x "flushIntervalCommitLog=700" > /dev/null ||
  fail "broker config set"
echo "1 passed, 0 failed"
