#!/usr/bin/env bash
# Broker memory against pending delayed messages (the target: memory does not grow with pending
# delayed messages; RSS at 0 and at 10,000,000 pending).
#
# Starts uringmq-broker (SYNC_FLUSH) on a fresh store, sends plain messages for a warm-up, reads
# its VmRSS/RssAnon/RssFile at 0 pending, then fills it with delayed messages (level 18 = 2 h, so
# none falls due) through uringmq-net-bench over loopback, reading the pending count from
# GET_BROKER_RUNTIME_INFO (uringmq-ctl stats) and the broker's memory from /proc at each step,
# until TARGET pending. The broker is a separate process: the load generator's memory is not in
# the figures. Also prints the delayed vs plain intake of the same broker (network, durable).
#
#   BUILD=build-bench TARGET=10000000 DATA=/tmp/umq-pending bench/pending_rss.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build-bench}
TARGET=${TARGET:-10000000}
DATA=${DATA:-/tmp/umq-pending}
SHARDS=${SHARDS:-2}
CHUNK_SECONDS=${CHUNK_SECONDS:-20}
PORT=${PORT:-23911}
NSPORT=$((PORT + 1))
OUT=${OUT:-bench/results/pending_rss.md}

broker=$BUILD/tools/uringmq-broker
bench=$BUILD/bench/uringmq-net-bench
ctl=$BUILD/tools/uringmq-ctl
for b in "$broker" "$bench" "$ctl"; do
  [[ -x $b ]] || {
    echo "missing $b (cmake --build $BUILD --target uringmq-broker uringmq-net-bench" \
      "uringmq-ctl)" >&2
    exit 1
  }
done

rm -rf "$DATA"
mkdir -p "$DATA"
cat > "$DATA/broker.conf" <<EOF
storePathRootDir=$DATA/store
listenPort=$PORT
namesrvListenPort=$NSPORT
shardCount=$SHARDS
flushDiskType=SYNC_FLUSH
defaultTopicQueueNums=8
logLevel=warn
EOF
"$broker" -c "$DATA/broker.conf" 2> "$DATA/broker.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  grep -q ready "$DATA/broker.log" && break
  kill -0 $pid || { cat "$DATA/broker.log"; exit 1; }
  sleep 0.1
done

mem() {  # VmRSS RssAnon RssFile in KiB
  awk '/^VmRSS|^RssAnon|^RssFile/ {printf "%s ", $2}' /proc/$pid/status
}
pending() {
  "$ctl" stats --addr 127.0.0.1:$PORT |
    awk '$1 ~ /^delayLevel\.[0-9]+\.pending$/ {s += $2} END {print s + 0}'
}
rate() {  # msgs/s from one net-bench run
  "$bench" --protocol remoting --port $PORT --seconds "$1" --warmup-seconds 1 "${@:2}" |
    sed -n 's/.*: \([0-9]*\) msgs\/s.*/\1/p'
}

plain=$(rate 10)
read -r rss0 anon0 file0 <<< "$(mem)"
p0=$(pending)
delayed=$(rate 10 --delay-level 18)
{
  echo "# Broker memory against pending delayed messages ($(date -u +%FT%TZ))"
  echo
  echo "shards=$SHARDS, SYNC_FLUSH, 128 B bodies, 16 connections x 32 pipelined over loopback"
  echo "intake (10 s each): plain $plain msgs/s, delayed (level 18) $delayed msgs/s"
  echo
  echo "| pending | VmRSS KiB | RssAnon KiB | RssFile KiB |"
  echo "|---|---|---|---|"
  echo "| $p0 | $rss0 | $anon0 | $file0 |"
} | tee "$OUT"
while :; do
  n=$(pending)
  [[ $n -ge $TARGET ]] && break
  rate "$CHUNK_SECONDS" --delay-level 18 > /dev/null
  n=$(pending)
  read -r rss anon file <<< "$(mem)"
  echo "| $n | $rss | $anon | $file |" | tee -a "$OUT"
done
kill -TERM $pid
wait $pid
trap - EXIT
echo "stopped cleanly; store $(du -sh "$DATA/store" | cut -f1)" | tee -a "$OUT"
