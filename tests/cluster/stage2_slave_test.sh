#!/usr/bin/env bash
# Cluster stage 2, Java master -> uringmq slave (tests/cluster/README.md): one Java 4.9.8
# NameServer, a Java 4.9.8 SYNC_MASTER (broker-a, brokerId 0, 1 MiB segments) and a uringmq SLAVE
# (broker-a, brokerId 1, 1 shard, the same segment sizes and delay levels) that finds its
# master's HA address in the NameServer's answer. SlaveCheck.java (the official client) sends;
# the script compares the logs and queues byte for byte.
#   1. 5,000 sends over at least five segment rolls, every 10th with delay level 1 or 2: all
#      SEND_OK (a SYNC_MASTER answers SEND_OK only once the slave acknowledged the bytes).
#   2. kill -9 of the slave while 1,500 more are sent, and a restart: it resumes at its durable
#      offset (the master logs no offset error) and catches up.
#   3. The slave's CommitLog bytes equal the master's up to the master's end; every ConsumeQueue
#      file of the master equals the slave's.
#   4. kill -9 of the master: every acknowledged message is read from the slave (route id 1).
#   5. SlaveSynchronize copies the topic table and delayOffset.json within 15 s.
#   6. The stopped slave's store passes `uringmq-ctl verify --replica`.
#   7. Promotion: the slave's store restarted as the master (brokerId 0) passes verify without
#      --replica, serves every acknowledged message and takes 100 sends, all SEND_OK.
# Usage: tests/cluster/stage2_slave_test.sh <uringmq-broker> <uringmq-ctl> <work dir>
# Without a RocketMQ Java distribution ($URINGMQ_ROCKETMQ_JAVA, tools/find-rocketmq-java.sh) or
# javac it prints a skip line and exits 77 (Skipped).
set -euo pipefail
broker_bin=$(realpath "$1")
ctl_bin=$(realpath "$2")
work=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
label=java_ha_slave
# shellcheck source=tests/cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"
java_or_skip "$label"
rm -rf "$work" && mkdir -p "$work/classes"
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$repo/tests/cluster/SlaveCheck.java"

pidfiles=("$work/broker-s.pid" "$work/m.pid")
trap cluster_kill_all EXIT
read -r ns pm ps < <("$repo/tools/free-ports.sh" 3)
namesrv="127.0.0.1:$ns"
topic=SlaveTopic
seg=1048576
slave_store=$work/broker-s/store/shard-0
failed() {
  echo "$label: FAILED: $1"
  for f in broker-s.log m.out; do echo "--- $f"; tail -20 "$work/$f" 2>/dev/null || true; done
  exit 1
}
java_check() { timeout 300 "$JAVA" -cp "$RMQ_CP:$work/classes" SlaveCheck "$@"; }

start_java_namesrvs "$ns"

mkdir -p "$work/m"
cat > "$work/m/broker.conf" <<CONF
brokerClusterName=TestCluster
brokerName=broker-a
brokerId=0
brokerRole=SYNC_MASTER
brokerIP1=127.0.0.1
listenPort=$pm
namesrvAddr=$namesrv
storePathRootDir=$work/m/store
storePathCommitLog=$work/m/store/commitlog
mappedFileSizeCommitLog=$seg
mappedFileSizeConsumeQueue=60000
maxMessageSize=262144
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
defaultTopicQueueNums=4
CONF
start_java_broker_conf m "$work/m/broker.conf"
wait_java_boot m

cat > "$work/s.conf" <<CONF
brokerClusterName=TestCluster
brokerName=broker-a
brokerId=1
brokerRole=SLAVE
storePathRootDir=$work/broker-s/store
listenPort=$ps
bindAddress=127.0.0.1
namesrvAddr=$namesrv
namesrvListenPort=0
shardCount=1
defaultTopicQueueNums=4
mappedFileSizeCommitLog=$seg
mappedFileSizeConsumeQueue=60000
maxMessageSize=262144
diskSpaceWarningLevelRatio=100
CONF
wait_connected() {  # the slave's $1-th connection to its master
  for _ in $(seq 1 600); do
    [ "$(grep -c "HA: broker broker-a connected to master" "$work/broker-s.log")" -ge "$1" ] &&
      return 0
    sleep 0.1
  done
  failed "the slave did not connect to its master"
}
start_uringmq broker-s "$work/s.conf" 1
wait_connected 1
grep "HA: broker" "$work/broker-s.log" | sed 's/^/slave: /'

# 1. 5,000 sends, all SEND_OK.
started=$(date +%s%3N)
java_check send "$namesrv" "$topic" 5000 "$work/ledger1" strict > "$work/send1.log" 2>&1 ||
  failed "$(grep -E 'FAIL|Exception' "$work/send1.log" | head -3)"
echo "send: $(grep JAVA-CHECK "$work/send1.log") in $(($(date +%s%3N) - started)) ms"

# SlaveSynchronize: within 15 s the slave holds the master's topic (GET_ALL_TOPIC_CONFIG, every
# 10 s) and its delayOffset.json text (GET_ALL_DELAY_OFFSET).
synced() {
  grep -q "\"$topic\"" "$work/broker-s/store/config/topics.json" 2>/dev/null &&
    grep -q offsetTable "$work/broker-s/store/config/delayOffset.json" 2>/dev/null
}
for _ in $(seq 1 150); do synced && break; sleep 0.1; done
synced || failed "the slave did not copy the master's topics and delay offsets within 15 s"
echo "SlaveSynchronize: the slave holds $topic and delayOffset.json"

# 2. kill -9 of the slave mid-stream, then a restart.
java_check send "$namesrv" "$topic" 1500 "$work/ledger2" lenient > "$work/send2.log" 2>&1 &
sender=$!
sleep 2
kill -9 "$(cat "$work/broker-s.pid")"
sleep 1
start_uringmq broker-s "$work/s.conf" 2
wait_connected 2
wait "$sender" || failed "$(grep -E 'FAIL|Exception' "$work/send2.log" | head -3)"
echo "send during the kill: $(grep JAVA-CHECK "$work/send2.log")"
grep "HA: broker" "$work/broker-s.log" | tail -2 | sed 's/^/slave: /'
sleep 7  # the delayed messages (levels 1 and 2: 1 s, 5 s) are delivered by the master

# 3. The same bytes: the master's end from GET_BROKER_RUNTIME_INFO, then the slave's segments
# (they fill as it catches up) and every ConsumeQueue file.
master_end() {
  "$rmq_java" mqadmin brokerStatus -n "$namesrv" -b "127.0.0.1:$pm" 2>/dev/null |
    awk '$1 == "commitLogMaxOffset" { print $3 }'
}
logs_equal() {
  local end=$1 base name len
  for ((base = 0; base < end; base += seg)); do
    name=$(printf '%020d' "$base")
    len=$((end - base < seg ? end - base : seg))
    cmp -s -n "$len" "$work/m/store/commitlog/$name" "$slave_store/commitlog/$name" ||
      return 1
  done
}
end=$(master_end)
[ -n "$end" ] || failed "mqadmin brokerStatus gave no commitLogMaxOffset"
for _ in $(seq 1 300); do logs_equal "$end" && break; sleep 0.1; done
logs_equal "$end" || failed "the slave's CommitLog differs from the master's below $end"
[ "$end" -ge $((5 * seg)) ] || failed "only $end bytes: fewer than five segment rolls"
echo "CommitLog: the slave's bytes equal the master's up to $end ($((end / seg)) segment rolls)"
sleep 2  # the slave's ConsumeQueue units are written within its 1 s flush interval
queues=0
while IFS= read -r f; do
  rel=${f#"$work/m/store/consumequeue/"}
  if [ -f "$slave_store/consumequeue/$rel" ]; then
    cmp -s "$f" "$slave_store/consumequeue/$rel" ||
      failed "ConsumeQueue $rel differs: $(cmp "$f" "$slave_store/consumequeue/$rel")"
  else
    cmp -s -n 60000 "$f" /dev/zero || failed "ConsumeQueue $rel is missing on the slave"
  fi
  queues=$((queues + 1))
done < <(find "$work/m/store/consumequeue" -type f)
echo "ConsumeQueue: $queues files of the master equal the slave's"
offset_errors="greater than local commitLog offset|slave fall behind"
if grep -hE "$offset_errors" "$work"/m/logs/rocketmqlogs/*.log; then
  failed "the Java master logged an offset error"
fi

# 4. kill -9 of the master: every acknowledged message is read from the slave.
kill -9 "$(cat "$work/m.pid")"
sleep 3  # the NameServer drops the master when its connection closes
java_check consume "$namesrv" "$topic" "$work/ledger1" "$work/ledger2" > "$work/consume.log" 2>&1 ||
  failed "$(grep -E 'FAIL|missing|Exception' "$work/consume.log" | head -5)"
echo "consume: $(grep JAVA-CHECK "$work/consume.log")"

# 5. The slave's store, stopped, passes verify.
kill -TERM "$(cat "$work/broker-s.pid")"
for _ in $(seq 1 200); do
  kill -0 "$(cat "$work/broker-s.pid")" 2>/dev/null || break
  sleep 0.1
done
"$ctl_bin" verify --dir "$work/broker-s/store" --replica --no-progress > "$work/verify.log" 2>&1 ||
  failed "uringmq-ctl verify: $(tail -5 "$work/verify.log")"
echo "verify: $(tail -1 "$work/verify.log")"

# 7. Promotion (docs/cluster.md, "Failover"): the slave of the Java master restarted as broker-a's
#    master keeps the Java records: verify passes without --replica (the store's
#    foreign_records marker), every acknowledged message is read from it, sends are SEND_OK.
"$ctl_bin" verify --dir "$work/broker-s/store" --no-progress > "$work/verify2.log" 2>&1 ||
  failed "uringmq-ctl verify of the promoted store: $(tail -5 "$work/verify2.log")"
sed -e 's/^brokerId=.*/brokerId=0/' -e 's/^brokerRole=.*/brokerRole=ASYNC_MASTER/' \
  "$work/s.conf" > "$work/s-promoted.conf"
start_uringmq broker-s "$work/s-promoted.conf" 3
sleep 2  # its REGISTER_BROKER as id 0 reaches the NameServer
java_check consume "$namesrv" "$topic" "$work/ledger1" "$work/ledger2" > "$work/consume2.log" \
  2>&1 || failed "promoted: $(grep -E 'FAIL|missing|Exception' "$work/consume2.log" | head -5)"
echo "promoted, consume: $(grep JAVA-CHECK "$work/consume2.log")"
java_check send "$namesrv" "$topic" 100 "$work/ledger3" strict > "$work/send3.log" 2>&1 ||
  failed "promoted, send: $(grep -E 'FAIL|Exception' "$work/send3.log" | head -3)"
echo "promoted, send: $(grep JAVA-CHECK "$work/send3.log")"
echo "$label: passed"
