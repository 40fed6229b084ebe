#!/usr/bin/env bash
# The official mqadmin (RocketMQ 4.9.8) against uringmq-broker and against a Java NameServer +
# broker, side by side: the same clients (mqadmin/MqadminWorkload.java: a producer, a push
# consumer group that consumed everything) on both, then each mqadmin command of the list below
# on both (all in one JVM, mqadmin/MqadminRunner.java), and the printed outputs compared after
# normalising what must differ (addresses, broker names, timestamps, msgIds, client ids, TPS).
# Then mqadmin/RouteCheck.java (the admin API and client on topic routes: none for a topic no
# one created, the producer's auto-creation, deletion) on both. Passes when every command
# printed the same, the reset reached the online consumer (it consumes again) on both and
# RouteCheck printed the same facts on both; prints each difference otherwise.
# Usage: tests/interop/mqadmin_test.sh <uringmq-broker binary> <work dir>
# The Java pieces come from a RocketMQ 4.9.8 distribution (tools/find-rocketmq-java.sh); without
# it, or without javac, the test prints a skip line and exits 77 (Skipped).
set -euo pipefail
broker_bin=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../support/java_lib.sh
source "$repo/tests/support/java_lib.sh"
java_or_skip mqadmin_test
rm -rf "$work" && mkdir -p "$work/classes" "$work/j" "$work/u"
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$here"/mqadmin/*.java &
javac_pid=$!

# Free ports (the Java broker also listens on its port - 2 and + 1).
read -r jns jb uport uns < <("$repo/tools/free-ports.sh" 4)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

cat > "$work/j/broker.conf" <<CONF
brokerClusterName=TestCluster
brokerName=broker-j
brokerId=0
brokerRole=ASYNC_MASTER
brokerIP1=127.0.0.1
listenPort=$jb
namesrvAddr=127.0.0.1:$jns
storePathRootDir=$work/j/store
storePathCommitLog=$work/j/store/commitlog
mappedFileSizeCommitLog=67108864
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
CONF
cat > "$work/u/broker.conf" <<CONF
brokerClusterName=TestCluster
brokerName=broker-u
storePathRootDir=$work/u/store
listenPort=$uport
namesrvListenPort=$uns
bindAddress=127.0.0.1
# One shard: one presented broker, compared one to one with the one Java broker (with N
# shards uringmq presents N brokers, brokerName-i; the Java check ShardBrokersCheck covers that).
shardCount=1
mappedFileSizeCommitLog=67108864
diskSpaceWarningLevelRatio=100
CONF
NAMESRV_HEAP="-Xms128m -Xmx128m -Xmn64m" "$rmq_java" namesrv "$jns" "$work/j/ns" \
  > "$work/j/namesrv.log" 2>&1 &
pids+=($!)
BROKER_HEAP="-Xms256m -Xmx256m" BROKER_DIRECT=256m BROKER_PRETOUCH=0 \
  "$rmq_java" broker "$work/j/broker.conf" "$work/j/run" > "$work/j/broker.log" 2>&1 &
pids+=($!)
"$broker_bin" -c "$work/u/broker.conf" > "$work/u/broker.log" 2>&1 &
pids+=($!)
wait "$javac_pid"

wait_for() {  # file pattern seconds what
  for _ in $(seq 1 $(($3 * 10))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "mqadmin_test: FAILED ($4 did not start); its log:"
  tail -30 "$1"
  exit 1
}
wait_for "$work/u/broker.log" "uringmq-broker ready" 30 "uringmq-broker"
wait_for "$work/j/broker.log" "boot success" 60 "the Java broker"

jbroker=127.0.0.1:$jb
ubroker=127.0.0.1:$uport
java_run() {  # class args...
  timeout 120 "$JAVA" -cp "$RMQ_CP:$work/classes" -Drocketmq.client.logUseSlf4j=false "$@"
}
# Phase 1: the topic, on both.
cat > "$work/setup.txt" <<CMDS
updateTopic -n 127.0.0.1:$jns -b $jbroker -t MqaTopic -r 4 -w 4
updateTopic -n 127.0.0.1:$uns -b $ubroker -t MqaTopic -r 4 -w 4
CMDS
java_run MqadminRunner "$work/setup.txt" "$work/setup" > "$work/setup.log" 2>&1
# The clients, on both; they stay online (stdin held open) until the end.
for side in j u; do
  ns=$([ $side = j ] && echo "$jns" || echo "$uns")
  mkfifo "$work/$side/hold"
  java_run MqadminWorkload "127.0.0.1:$ns" MqaTopic MqaGroup < "$work/$side/hold" \
    > "$work/$side/workload.log" 2>&1 &
  pids+=($!)
  sleep 1000 > "$work/$side/hold" &
  pids+=($!)
done
wait_for "$work/j/workload.log" "WORKLOAD READY" 60 "the workload on the Java broker"
wait_for "$work/u/workload.log" "WORKLOAD READY" 60 "the workload on uringmq-broker"

# Phase 2: every command on both (J and U lines alternate; {NS} {BROKER} {MSGID} substituted).
commands=(
  "clusterList"
  "topicList"
  "topicRoute -t MqaTopic"
  "topicStatus -t MqaTopic"
  "consumerProgress -g MqaGroup"
  "consumerProgress"
  "consumerConnection -g MqaGroup"
  "producerConnection -g MqaGroup_producer -t MqaTopic"
  "queryMsgById -i {MSGID}"
  "queryMsgByKey -t MqaTopic -k key-0"
  "getBrokerConfig -b {BROKER}"
  "updateBrokerConfig -b {BROKER} -k autoCreateTopicEnable -v false"
  "getBrokerConfig -b {BROKER}"
  "updateBrokerConfig -b {BROKER} -k autoCreateTopicEnable -v true"
  "updateSubGroup -b {BROKER} -g MqaSub -r 3"
  "deleteSubGroup -b {BROKER} -g MqaSub"
  "resetOffsetByTime -g MqaGroup -t MqaTopic -s 0"
  "resetOffsetByTime -g OfflineGroup -t MqaTopic -s 0"
  "updateTopic -b {BROKER} -t MqaTmp -r 2 -w 2"
  "topicList"
  "deleteTopic -c TestCluster -t MqaTmp"
  "topicList"
  "brokerStatus -b {BROKER}"
)
# uringmq-broker only: where it answers differently from Java on purpose (command|what it
# must print). Java's broker takes any key at run time (a new brokerName included).
uringmq_only=(
  "updateBrokerConfig -b {BROKER} -k brokerName -v other|key 'brokerName' cannot change while"
  "updateBrokerConfig -b {BROKER} -k noSuchKey -v 1|unknown key 'noSuchKey'"
)
jid=$(sed -n 's/.*WORKLOAD msgId=\([0-9A-F]*\).*/\1/p' "$work/j/workload.log")
uid=$(sed -n 's/.*WORKLOAD msgId=\([0-9A-F]*\).*/\1/p' "$work/u/workload.log")
: > "$work/commands.txt"
for c in "${commands[@]}"; do
  echo "${c//\{BROKER\}/$jbroker} -n 127.0.0.1:$jns" | sed "s/{MSGID}/$jid/" >> "$work/commands.txt"
  echo "${c//\{BROKER\}/$ubroker} -n 127.0.0.1:$uns" | sed "s/{MSGID}/$uid/" >> "$work/commands.txt"
done
for c in "${uringmq_only[@]}"; do
  c=${c%%|*}
  echo "${c//\{BROKER\}/$ubroker} -n 127.0.0.1:$uns" >> "$work/commands.txt"
done
java_run MqadminRunner "$work/commands.txt" "$work/out" > "$work/runner.log" 2>&1

# Normalising: what differs between two brokers by nature. getBrokerConfig and brokerStatus:
# keys both brokers have (each has many of its own).
config_keys="autoCreateTopicEnable|defaultTopicQueueNums|brokerClusterName|maxMessageSize"
config_keys+="|syncFlushTimeout|notifyConsumerIdsChangedEnable"
status_keys="brokerVersionDesc|msgPutTotalTodayNow|msgGetTotalTodayNow|putTps|getTransferedTps"
status_keys+="|commitLogDiskRatio"
normalise() {  # command file
  local cmd=$1
  sed -E -e "s/127\.0\.0\.1:($jb|$uport|$jns|$uns)\b/BROKER_ADDR/g" \
    -e 's/127\.0\.0\.1:[0-9]+/CLIENT_ADDR/g' -e 's/broker-[ju]\b/BROKER/g' \
    -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(,[0-9]{3})?/TIME/g' \
    -e 's/\b[0-9A-F]{32}\b|\b[0-9A-F]{56}\b/MSGID/g' -e 's/[^ ]+@[0-9]+#[0-9]+/CLIENT_ID/g' \
    -e 's/[ \t]+$//' "$2" | case "$cmd" in
    clusterList) sed -E 's/V4_9_8|uringmq [0-9.]+/VERSION/; s/[0-9]+\.[0-9]+/N/g; s/ +/ /g' ;;
    topicList) grep -E '^(MqaTopic|MqaTmp|%RETRY%MqaGroup)$' | sort ;;
    consumerProgress) grep -E '^(#Group|MqaGroup|#Topic|MqaTopic|Diff)' |
      awk '$1 == "MqaGroup" {$6 = "TPS"} {print}' ;;
    queryMsgById) grep -Ev '^(Queue ID|CommitLog Offset|Properties|Message Body Path):' |
      sed -E 's/^(Queue Offset: +)[0-9]+/\1N/' ;;
    queryMsgByKey) awk '{print $1, NF}' ;;
    getBrokerConfig) grep -E "^(====|($config_keys) )" | sort ;;
    updateBrokerConfig) grep -Eo '^(update broker config success|CODE: [0-9]+)' ;;
    resetOffsetByTime) grep -Eo '^(rollback.*|BROKER +[0-9]+ +[0-9]+|.*CODE: [0-9]+)' | sort ;;
    brokerStatus) grep -Eo "^($status_keys) +:" | sort ;;
    *) cat ;;
  esac
}
failed=0
n=0
for c in "${commands[@]}"; do
  n=$((n + 2))
  name=${c%% *}
  jout=$(printf '%s/out/%03d.out' "$work" $((n - 1)))
  uout=$(printf '%s/out/%03d.out' "$work" $n)
  normalise "$name" "$jout" > "$jout.norm" || true
  normalise "$name" "$uout" > "$uout.norm" || true
  if ! [ -s "$jout.norm" ]; then
    echo "mqadmin $c: the Java broker's output normalised to nothing:"
    cat "$jout"
    failed=1
  elif diff -u "$jout.norm" "$uout.norm" > "$uout.diff"; then
    echo "mqadmin $c: same"
  else
    echo "mqadmin $c: DIFFERENT (- Java broker, + uringmq-broker):"
    cat "$uout.diff"
    echo "  uringmq-broker printed:"
    sed 's/^/    /' "$uout" | head -30
    failed=1
  fi
done
for c in "${uringmq_only[@]}"; do
  n=$((n + 1))
  uout=$(printf '%s/out/%03d.out' "$work" $n)
  if grep -qF "${c#*|}" "$uout"; then
    echo "mqadmin ${c%%|*} (uringmq-broker only): refused as it should be"
  else
    echo "mqadmin ${c%%|*} (uringmq-broker only): FAILED, wanted \"${c#*|}\"; it printed:"
    sed 's/^/    /' "$uout" | head -20
    failed=1
  fi
done
# resetOffsetByTime -s 0 reached the online consumer (RESET_CONSUMER_CLIENT_OFFSET): it consumes
# the 8 messages again (the 4.9 client waits 10 s after dropping its queues, then rebalances).
for _ in $(seq 1 450); do
  grep -q "WORKLOAD consumed=16" "$work/j/workload.log" &&
    grep -q "WORKLOAD consumed=16" "$work/u/workload.log" && break
  sleep 0.1
done
for side in j u; do
  if grep -q "WORKLOAD consumed=16" "$work/$side/workload.log"; then
    echo "resetOffsetByTime reached the online consumer on the $side broker: consumed again"
  else
    echo "mqadmin: after resetOffsetByTime the consumer on the $side broker did not consume" \
      "again; its log:"
    tail -5 "$work/$side/workload.log"
    failed=1
  fi
done
if [ "$(ls "$work/u/store/config")" = "" ] || ! grep -q '^autoCreateTopicEnable=true$' \
    "$work/u/store/config/broker.properties"; then
  echo "mqadmin: uringmq-broker did not persist updateBrokerConfig in config/broker.properties"
  failed=1
fi
# Routes as the NameServer answers them (mqadmin/RouteCheck.java): the same facts on both.
for side in j u; do
  ns=$([ $side = j ] && echo "$jns" || echo "$uns")
  java_run RouteCheck "127.0.0.1:$ns" Route > "$work/$side/route.log" 2>&1 || true
  grep -E '^[a-zA-Z %]+: ' "$work/$side/route.log" > "$work/$side/route.facts" || true
done
if ! grep -q "ROUTE-CHECK DONE" "$work/j/route.log" ||
   ! grep -q "ROUTE-CHECK DONE" "$work/u/route.log"; then
  echo "mqadmin RouteCheck: did not finish on both; its logs:"
  tail -20 "$work/j/route.log" "$work/u/route.log"
  failed=1
elif diff -u "$work/j/route.facts" "$work/u/route.facts"; then
  echo "mqadmin RouteCheck: same routes on both:"
  sed 's/^/    /' "$work/u/route.facts"
else
  echo "mqadmin RouteCheck: DIFFERENT routes (- Java NameServer, + uringmq-broker)"
  failed=1
fi
if [ $failed -ne 0 ]; then
  echo "mqadmin_test: FAILED"
  exit 1
fi
echo "mqadmin_test: passed (${#commands[@]} commands)"
