#!/usr/bin/env bash
# Batch produce against single sends, over loopback, SYNC_FLUSH: uringmq-net-bench against a
# fresh uringmq-broker for each measurement, single sends (SEND_MESSAGE_V2, CONNS x PIPELINE in
# flight) and batches (SEND_BATCH_MESSAGE of BATCH messages, CONNS x BATCH_PIPELINE in flight)
# interleaved, RUNS of each; prints every run's JSON and the medians (messages/s).
# Usage: bench/batch_produce.sh [build dir]   (needs uringmq-broker and uringmq-net-bench built)
# CONNS (16), PIPELINE (32), BATCH (32), BATCH_PIPELINE (8), BYTES (128), RUNS (3),
# SECONDS_ (10), WARMUP (2), DATA (./bench-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
CONNS=${CONNS:-16} PIPELINE=${PIPELINE:-32} BATCH=${BATCH:-32}
BATCH_PIPELINE=${BATCH_PIPELINE:-8} BYTES=${BYTES:-128} RUNS=${RUNS:-3}
SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-2}
data=$(mkdir -p "${DATA:-$root/bench-data}" && cd "${DATA:-$root/bench-data}" && pwd)/batch
pid=""
stop() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  pid=""
}
trap 'stop; rm -rf "$data"' EXIT
one() {  # one MODE RUN: a fresh broker, one load, its JSON on stdout
  rm -rf "$data" && mkdir -p "$data"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0))
print(s.getsockname()[1])')
  printf 'storePathRootDir=%s\nlistenPort=%s\nnamesrvListenPort=0\nflushDiskType=SYNC_FLUSH\n%s\n' \
    "$data/store" "$port" "mappedFileSizeCommitLog=1073741824
defaultTopicQueueNums=8
logLevel=warn" >"$data/broker.conf"
  "$build/tools/uringmq-broker" -c "$data/broker.conf" 2>"$data/broker.log" &
  pid=$!
  for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  local extra=(--pipeline "$PIPELINE")
  [ "$1" = batch ] && extra=(--pipeline "$BATCH_PIPELINE" --batch "$BATCH")
  "$build/bench/uringmq-net-bench" --protocol remoting --port "$port" --connections "$CONNS" \
    --message-bytes "$BYTES" --seconds "$SECONDS_" --warmup-seconds "$WARMUP" --json "${extra[@]}"
  stop
}
out=$(mktemp)
for run in $(seq 1 "$RUNS"); do
  for mode in single batch; do
    echo "run $run $mode: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    printf '%s %s ' "$mode" "$run" >>"$out"
    one "$mode" >>"$out"
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, run, js = line.split(" ", 2)
    rows.setdefault(mode, []).append(json.loads(js))
key = "msgs_per_s"
med = {m: statistics.median(r[key] for r in v) for m, v in rows.items()}
for m, v in rows.items():
    runs = "; ".join(
        f"{r[key]:,.0f} (p50 {r['p50_us'] / 1000:.1f} / p99 {r['p99_us'] / 1000:.1f} ms)"
        for r in v)
    print(f"{m}: median {med[m]:,.0f} msgs/s; runs {runs}")
print(f"batch / single: {med['batch'] / med['single']:.2f}")
PY
rm -f "$out"
