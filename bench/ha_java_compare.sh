#!/usr/bin/env bash
# SYNC_MASTER + SLAVE pairs side by side, in the same run: a Java 4.9.8 SYNC_MASTER with a Java
# 4.9.8 SLAVE, and a uringmq SYNC_MASTER with a uringmq SLAVE (1 shard each, SYNC_FLUSH on all
# four, 1 GiB segments, every store on the same disk). Both pairs are started once and stay up;
# uringmq-net-bench loads each master in turn (the same SEND_MESSAGE_V2 workload, SECONDS_ each
# after WARMUP, 4 queues: the Java broker creates the topic with the 4 queues the client's send
# header asks for), RUNS rounds, and the medians of msgs/s, p50 and p99 are printed per pair.
# The Java slave acknowledges what it received (page cache), the uringmq slave its durable
# offset (fdatasync'd): the uringmq pair gives the stronger guarantee.
# Usage: bench/ha_java_compare.sh [build dir]   (needs uringmq-broker and uringmq-net-bench;
# the Java distribution from $URINGMQ_ROCKETMQ_JAVA or tools/find-rocketmq-java.sh, else a skip
# line). CONNS (16), PIPELINE (32), BYTES (128), RUNS (3), SECONDS_ (10), WARMUP (2),
# DATA (./bench-data).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build-bench}
broker_bin=$build/tools/uringmq-broker
CONNS=${CONNS:-16} PIPELINE=${PIPELINE:-32} BYTES=${BYTES:-128} RUNS=${RUNS:-3}
SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-2}
base=$(mkdir -p "${DATA:-$repo/bench-data}" && cd "${DATA:-$repo/bench-data}" && pwd)
work=$base/ha-java
# shellcheck source=tests/cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"
# shellcheck source=bench/broker_load.sh
source "$repo/bench/broker_load.sh"  # summarize_runs
java_or_skip ha_java_compare
rm -rf "$work" && mkdir -p "$work"
pidfiles=("$work/um.pid" "$work/us.pid")
trap 'cluster_kill_all; rm -rf "$work"' EXIT
read -r ns jm js um us < <("$repo/tools/free-ports.sh" 5)

start_java_namesrvs "$ns"
java_conf() {  # java_conf NAME ID ROLE PORT
  mkdir -p "$work/$1"
  printf '%s\n' "brokerClusterName=Bench" "brokerName=broker-j" "brokerId=$2" "brokerRole=$3" \
    "brokerIP1=127.0.0.1" "listenPort=$4" "namesrvAddr=127.0.0.1:$ns" \
    "storePathRootDir=$work/$1/store" "storePathCommitLog=$work/$1/store/commitlog" \
    "flushDiskType=SYNC_FLUSH" "autoCreateTopicEnable=true" "defaultTopicQueueNums=8" \
    "mappedFileSizeCommitLog=1073741824" >"$work/$1/broker.conf"
}
java_conf jm 0 SYNC_MASTER "$jm"
java_conf js 1 SLAVE "$js"
start_java_broker_conf jm "$work/jm/broker.conf"
wait_java_boot jm
start_java_broker_conf js "$work/js/broker.conf"
wait_java_boot js

uringmq_conf() {  # uringmq_conf NAME ID ROLE PORT [more lines]
  local name=$1 id=$2 role=$3 port=$4
  shift 4
  printf '%s\n' "brokerName=broker-u" "brokerId=$id" "brokerRole=$role" "listenPort=$port" \
    "namesrvListenPort=0" "shardCount=1" "storePathRootDir=$work/$name/store" \
    "flushDiskType=SYNC_FLUSH" "defaultTopicQueueNums=8" "mappedFileSizeCommitLog=1073741824" \
    "logLevel=info" "$@" >"$work/$name.conf"
}
uringmq_conf um 0 SYNC_MASTER "$um"
uringmq_conf us 1 SLAVE "$us" "haMasterAddress=127.0.0.1:$((um + 1))"
start_uringmq um "$work/um.conf" 1
start_uringmq us "$work/us.conf" 1
for _ in $(seq 1 300); do
  grep -q "connected to master" "$work/us.log" && break
  sleep 0.1
done
sleep 3 # the Java slave's first report, and HA connections settled

out=$(mktemp)
for run in $(seq 1 "$RUNS"); do
  for pair in java:"$jm" uringmq:"$um"; do
    echo "run $run ${pair%%:*}: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    printf '%s %s ' "${pair%%:*}" "$run" >>"$out"
    "$build/bench/uringmq-net-bench" --protocol remoting --port "${pair#*:}" \
      --connections "$CONNS" --pipeline "$PIPELINE" --message-bytes "$BYTES" --queues 4 \
      --seconds "$SECONDS_" --warmup-seconds "$WARMUP" --json >>"$out"
  done
done
summarize_runs "$out" <<'PY'
for p, v in rows.items():
    runs = "; ".join(f"{r['msgs_per_s']:,.0f} (p99 {r['p99_us'] / 1000:.2f} ms)" for r in v)
    print(f"{p}: {medians(v)}, errors {sum(r['errors'] for r in v)}; runs {runs}")
    errors = {r.get("first_error", "") for r in v} - {""}
    if errors:
        print(f"  {p} first errors: {'; '.join(sorted(errors))}")
java = med(rows["java"])
print(f"uringmq / java: {med(rows['uringmq']) / java:.2f}" if java else
      "uringmq / java: no ratio (no Java send succeeded)")
PY
rm -f "$out"
