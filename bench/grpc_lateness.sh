#!/usr/bin/env bash
# bench/grpc_lateness.sh: timer lateness at a RocketMQ 5 gRPC SimpleConsumer, and how late an
# unacked message comes back after its invisible time, with the official Node.js client
# (bench/grpc_lateness.js: rocketmq-client-nodejs 1.0.8 from tests/grpc/node_modules).
#
# Each round: a fresh broker and store (bench/peer_lib.sh; 1 shard, FLUSH, grpcServerPort),
# topic BenchTimer (8 queues, message.type DELAY), then grpc_lateness.js: RECEIVES receives in
# flight long polling while MESSAGES messages are sent with deliveryTimestamp spread over
# SPREAD_MS from 1 s ahead; each arrival against its due time (delay); then the same messages,
# received with a 30 s invisible time and not acked, come back and are acked (expiry). Both
# also broker-side, to tell the broker's time from the client's: the time the broker answered
# the receive (the answer's delivery_timestamp) and the pop time in each receipt handle (when
# the receive that handed it out last began to look) against the due time. Lateness = arrival -
# due, ms; early = negative; and the broker's own part (answered - pop time), whatever the
# client did. Medians over ROUNDS rounds.
# Targets: delay p99 at most 5 ms, never early; expiry p99 at most 5 ms late.
# Rows to bench/results/grpc_lateness.dat (one JSON line a round); the summary to
# bench/results/grpc_lateness.md, printed too.
# Usage: bench/grpc_lateness.sh [BUILD_DIR]   (default ./build: tools/uringmq-broker,
#          tools/uringmq-ctl)
# Env: ROUNDS (3), MESSAGES (1000), SPREAD_MS (3000), RECEIVES (16: with 4, a message due while
#      all four carried answers back waited for one, not a long poll waiting), FLUSH
#      (SYNC_FLUSH, the broker's default), DATA (./bench-data).
set -euo pipefail
me=bench/grpc_lateness.sh
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
ROUNDS=${ROUNDS:-3} MESSAGES=${MESSAGES:-1000} SPREAD_MS=${SPREAD_MS:-3000}
RECEIVES=${RECEIVES:-16} FLUSH=${FLUSH:-SYNC_FLUSH}
base=$(mkdir -p "${DATA:-$repo/bench-data}" && cd "${DATA:-$repo/bench-data}" && pwd)
work=$base/grpc_lateness
results=$repo/bench/results
pidfiles=()
for bin in tools/uringmq-broker tools/uringmq-ctl; do
  [ -x "$build/$bin" ] || { echo "$me: $build/$bin is missing (build it)"; exit 2; }
done
command -v node >/dev/null || { echo "$me: node is missing (tools/install-deps.sh)"; exit 2; }
[ -d "$repo/tests/grpc/node_modules/rocketmq-client-nodejs" ] ||
  { echo "$me: tests/grpc/node_modules is missing (cd tests/grpc && npm ci)"; exit 2; }
# shellcheck source=bench/peer_lib.sh
source "$repo/bench/peer_lib.sh"  # free_port, start_uringmq_broker, stop_broker
rm -rf "$work" && mkdir -p "$work" "$results"
trap 'for f in "${pidfiles[@]}"; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done;
      rm -rf "$work/store"' EXIT

dat=$work/grpc_lateness.dat
: >"$dat"
for round in $(seq 1 "$ROUNDS"); do
  gport=$(free_port)
  UMQ_CONF="grpcServerPort=$gport
shardCount=1" start_uringmq_broker "$FLUSH"
  "$build/tools/uringmq-ctl" topic create --addr "127.0.0.1:$bport" -t BenchTimer -r 8 -w 8 \
    -a +message.type=DELAY >/dev/null
  echo "round $round: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  RECEIVES=$RECEIVES node "$repo/bench/grpc_lateness.js" "127.0.0.1:$gport" "$MESSAGES" \
    "$SPREAD_MS" | tail -1 >>"$dat"
  stop_broker
done
cp "$dat" "$results/grpc_lateness.dat"
python3 - "$dat" "$results/grpc_lateness.md" "$MESSAGES" "$SPREAD_MS" "$RECEIVES" "$FLUSH" <<'PY'
import json, statistics, sys
dat, md, messages, spread, receives, flush = sys.argv[1:]
runs = [json.loads(line) for line in open(dat) if line.strip()]
med = lambda part, key: statistics.median(r[part][key] for r in runs)
each = lambda part, key: ", ".join(f"{r[part][key]:g}" for r in runs)
cols = {"delay": ["p50", "p99", "p999", "max"], "expiry": ["p50", "p99", "max"]}
out = [f"# Timer lateness at a gRPC SimpleConsumer (bench/grpc_lateness.sh; {messages} "
       f"messages due over {spread} ms, {receives} receives long polling, {flush}; medians "
       f"of {len(runs)} rounds, ms)", "",
       "| lateness | where | n | p50 | p99 | p99.9 | max | early |",
       "|---|---|---|---|---|---|---|---|"]
for part in ("delay", "expiry"):
    for where, key in (("client", part), ("broker answered", part + "_answer"),
                       ("broker handed out", part + "_broker"),
                       ("broker's own (answered - handed out)", part + "_spent")):
        row = [f"{med(key, c):g}" if c in cols[part] else "-"
               for c in ("p50", "p99", "p999", "max")]
        out.append(f"| {part} | {where} | {med(key, 'n'):g} | " + " | ".join(row) +
                   f" | {med(key, 'early'):g} |")
never_early = all(r["delay"]["early"] == 0 for r in runs)
delay_met = med("delay", "p99") <= 5 and never_early
out += ["", "each round, client p99: delay " + each("delay", "p99") + "; expiry " +
        each("expiry", "p99"),
        f"targets: delay p99 at most 5 ms, never early: {'met' if delay_met else 'not met'}"
        f"; expiry p99 at most 5 ms late: {'met' if med('expiry', 'p99') <= 5 else 'not met'}"]
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
echo "$me: bench/results/grpc_lateness.md, grpc_lateness.dat"
