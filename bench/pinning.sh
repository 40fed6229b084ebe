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
python3 - "$out" "$NEIGHBOUR" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, run, js = line.split(" ", 2)
    rows.setdefault(mode, []).append(json.loads(js))
med = {m: statistics.median(r["msgs_per_s"] for r in v) for m, v in rows.items()}
for m, v in rows.items():
    runs = "; ".join(f"{r['msgs_per_s']:,.0f} (p50 {r['p50_us'] / 1000:.1f} / p99 "
                     f"{r['p99_us'] / 1000:.1f} ms)" for r in v)
    print(f"{m}: median {med[m]:,.0f} msgs/s; runs {runs}")
print(f"neighbour spinning on a core: {'yes' if sys.argv[2] == '1' else 'no'}")
print(f"unpinned / pinned: {med['unpinned'] / med['pinned']:.2f}")
PY
rm -f "$out"
