#!/usr/bin/env bash
# Shard threads pinned (pinShardThreads=true, shard i on the i-th CPU) against unpinned, with a
# CPU-heavy neighbour or without: uringmq-net-bench against a fresh uringmq-broker per
# measurement (SYNC_FLUSH, or FLUSH), the two modes interleaved, RUNS of each; prints every run's
# JSON summary, the medians (messages/s, p50 and p99) and the ratio unpinned / pinned.
# NEIGHBOUR=1 (the default) keeps one core busy during every load: a process spinning in user
# space, as a build or a JVM next to the broker does.
# Usage: bench/pinning.sh [build dir]   (needs uringmq-broker and uringmq-net-bench built)
# CONNS (16), PIPELINE (32), BYTES (128), RUNS (3), SECONDS_ (10), WARMUP (2), NEIGHBOUR (1),
# DATA (./bench-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
CONNS=${CONNS:-16} PIPELINE=${PIPELINE:-32} BYTES=${BYTES:-128} RUNS=${RUNS:-3}
SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-2} NEIGHBOUR=${NEIGHBOUR:-1}
base=$(mkdir -p "${DATA:-$root/bench-data}" && cd "${DATA:-$root/bench-data}" && pwd)
data=$base/pinning
source "$root/bench/broker_load.sh"
neighbour_pid=""
trap 'server_stop; [ -n "$neighbour_pid" ] && kill "$neighbour_pid" 2>/dev/null; rm -rf "$data"' \
  EXIT
if [ "$NEIGHBOUR" = 1 ]; then
  python3 -c 'while True: pass' &
  neighbour_pid=$!
fi
one() {  # one MODE: a fresh broker, one load of MODE, its JSON on stdout
  EXTRA_CONF="pinShardThreads=$([ "$1" = pinned ] && echo true || echo false)"
  one_load 1073741824 --pipeline "$PIPELINE"
}
out=$(mktemp)
run_modes "$out" pinned unpinned
summarize_runs "$out" "$NEIGHBOUR" <<'PY'
for m, v in rows.items():
    summary(m, v)
print(f"neighbour spinning on a core: {'yes' if sys.argv[2] == '1' else 'no'}")
print(f"unpinned / pinned: {med(rows['unpinned']) / med(rows['pinned']):.2f}")
PY
rm -f "$out"
