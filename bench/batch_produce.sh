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
source "$root/bench/broker_load.sh"
trap 'server_stop; rm -rf "$data"' EXIT
one() {  # one MODE: a fresh broker, one load of MODE, its JSON on stdout
  local extra=(--pipeline "$PIPELINE")
  [ "$1" = batch ] && extra=(--pipeline "$BATCH_PIPELINE" --batch "$BATCH")
  one_load 1073741824 "${extra[@]}"
}
out=$(mktemp)
run_modes "$out" single batch
summarize_runs "$out" <<'PY'
for m, v in rows.items():
    summary(m, v)
print(f"batch / single: {med(rows['batch']) / med(rows['single']):.2f}")
PY
rm -f "$out"
