#!/usr/bin/env bash
# bench/grpc_send.sh: the broker's CPU per message for sends over gRPC (RocketMQ 5's
# MessagingService/SendMessage, one message a call) against sends over remoting
# (SEND_MESSAGE_V2), same build, same store settings, interleaved rounds: each round runs both
# loads, remoting first in odd rounds and gRPC first in even ones, each on a fresh broker and
# store (bench/peer_lib.sh). The target: gRPC at most 1.5 x remoting's CPU per message.
#
# Loads: SYNC_FLUSH (FLUSH), 128 B bodies, BenchTopic with 8 queues, CONNS connections x
# PIPELINE requests in flight on each, one shard (shardCount=1: a remoting producer connected to
# one presented broker and a gRPC producer, whose sends the broker spreads over all of them,
# then load the same CommitLog):
#   remoting  uringmq-net-bench --protocol remoting
#   grpc      uringmq-grpc-bench send (one thread on nghttp2, about 3 us a call: grpc++'s client
#             spent tens and capped the rate, so the broker was measured at a rate too low to
#             batch its flushes)
# Broker CPU is user + system of every thread of the broker process over the window
# (/proc/<pid>/stat), per message stored. Both load generators run on the same machine.
# Rows go to bench/results/grpc_send.dat ("load round msgs/s cpu_us_per_msg rss_mib"); the
# medians and the ratio to bench/results/grpc_send.md, printed too.
# Usage: bench/grpc_send.sh [BUILD_DIR]   (default ./build: tools/uringmq-broker,
#          tools/uringmq-ctl, bench/uringmq-net-bench, bench/uringmq-grpc-bench)
# Env: ROUNDS (3), SECONDS_ (10), WARMUP (3), CONNS (4), PIPELINE (32), FLUSH (SYNC_FLUSH),
#      DATA (./bench-data).
set -euo pipefail
me=bench/grpc_send.sh
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
ROUNDS=${ROUNDS:-3} SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-3} CONNS=${CONNS:-4}
PIPELINE=${PIPELINE:-32} FLUSH=${FLUSH:-SYNC_FLUSH}
base=$(mkdir -p "${DATA:-$repo/bench-data}" && cd "${DATA:-$repo/bench-data}" && pwd)
work=$base/grpc_send
results=$repo/bench/results
pidfiles=()
load_bin=$build/bench/uringmq-grpc-bench
for bin in tools/uringmq-broker tools/uringmq-ctl bench/uringmq-net-bench \
  bench/uringmq-grpc-bench; do
  [ -x "$build/$bin" ] || { echo "$me: $build/$bin is missing (build it)"; exit 2; }
done
# shellcheck source=bench/peer_lib.sh
source "$repo/bench/peer_lib.sh"  # start_uringmq_broker, bench_topic, measure, stop_broker
rm -rf "$work" && mkdir -p "$work" "$results"
trap 'for f in "${pidfiles[@]}"; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done;
      rm -rf "$work/store"' EXIT

# grpc_measure: uringmq-grpc-load against the broker started last; prints
# "msgs_per_s cpu_us_per_msg rss_mib".
grpc_measure() {
  local line
  line=$("$load_bin" send --target "127.0.0.1:$gport" --connections "$CONNS" --streams "$PIPELINE" \
    --seconds "$SECONDS_" --warmup "$WARMUP" --body-bytes 128 --server-pid "$bpid")
  python3 - "$line" <<'PY'
import sys
f = dict(kv.split("=") for kv in sys.argv[1].split())
if int(f["errors"]):
    print(f"grpc load: {f['errors']} errors", file=sys.stderr)
print(f"{float(f['calls_per_s']):.0f} {float(f['cpu_us_per_call']):.3f} "
      f"{int(f['rss_kib']) / 1024:.0f}")
PY
}

dat=$work/grpc_send.dat
: >"$dat"
for round in $(seq 1 "$ROUNDS"); do
  order="remoting grpc"
  [ $((round % 2)) -eq 0 ] && order="grpc remoting"
  for load in $order; do
    echo "round $round $load: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    gport=$(free_port)
    UMQ_CONF="grpcServerPort=$gport
shardCount=1" start_uringmq_broker "$FLUSH"
    bench_topic
    if [ "$load" = remoting ]; then
      row=$(measure netbench)
      # measure: msgs/s p50 p99 p999 cpu_us_per_msg cpu_pct rss_mib
      row=$(echo "$row" | awk '{print $1, $5, $7}')
    else
      row=$(grpc_measure)
    fi
    stop_broker
    echo "$load $round $row" >>"$dat"
  done
done
cp "$dat" "$results/grpc_send.dat"

python3 - "$dat" "$results/grpc_send.md" "$FLUSH" "$CONNS" "$PIPELINE" "$SECONDS_" <<'PY'
import statistics, sys
dat, md, flush, conns, pipeline, seconds = sys.argv[1:]
runs = {}
for line in open(dat):
    f = line.split()
    runs.setdefault(f[0], {})[int(f[1])] = [float(v) for v in f[2:]]
med = lambda load, i: statistics.median(r[i] for r in runs[load].values())
r, g = runs["remoting"], runs["grpc"]
each = ", ".join(f"{g[k][1] / r[k][1]:.2f}" for k in sorted(r) if k in g and r[k][1] > 0)
ratio = med("grpc", 1) / med("remoting", 1)
out = [f"# Broker CPU per message, gRPC SendMessage / remoting SEND_MESSAGE_V2 "
       f"(bench/grpc_send.sh; {flush}, 128 B, {conns} x {pipeline} in flight, {seconds} s "
       f"windows; medians of {len(r)} rounds)", "",
       "| load | msgs/s | broker CPU us/msg | broker RSS MiB |", "|---|---|---|---|"]
for load in ("remoting", "grpc"):
    out.append(f"| {load} | {med(load, 0):,.0f} | {med(load, 1):.2f} | {med(load, 2):.0f} |")
out += ["", f"gRPC / remoting CPU per message: {ratio:.2f} (each round: {each}); "
        f"target at most 1.5: {'met' if ratio <= 1.5 else 'not met'}"]
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
echo "$me: bench/results/grpc_send.md, grpc_send.dat"
