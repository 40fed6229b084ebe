#!/usr/bin/env bash
# bench/pop_drain.sh: POP consumption over gRPC against remoting pulls, same backlog, same run,
# and the broker memory messages in flight cost.
#
# One broker (1 shard, flushDiskType FLUSH, BenchTopic with 8 queues, grpcServerPort), a backlog
# of 128 B messages sent by uringmq-net-bench for PRELOAD_SECONDS; then ROUNDS rounds, each
# reading the whole backlog once with remoting pulls (uringmq-pull-drain: PULL_MESSAGE, BATCH a
# pull, THREADS connections) and once with POP over gRPC (uringmq-grpc-bench pop-drain: on each of
# THREADS connections one ReceiveMessage of BATCH at a time, each followed by one AckMessage of
# what it got, sent without waiting, as a consumer acks while it receives the next batch), each
# under a group of its own, the order alternating. Target: receive + ack at least 0.5 x the
# pull rate.
# Then memory: a fresh group receives INFLIGHT messages and acks none (invisible 600 s); the
# broker's RSS before and after, per message in flight. Target: 1,000,000 in flight cost at most
# 64 MiB.
# Each side's broker CPU per message, by thread kind (reactor, shard, io-wq workers, others; user
# + system ticks from /proc over the side's drain), to bench/results/pop_drain_threads.dat.
# Rows to bench/results/pop_drain.dat; the summary to bench/results/pop_drain.md, printed too.
# Usage: bench/pop_drain.sh [BUILD_DIR]   (default ./build)
# Env: ROUNDS (3), PRELOAD_SECONDS (10), BATCH (32), THREADS (4), INFLIGHT (1000000; 0: skip),
#      FLUSH (SYNC_FLUSH or ASYNC_FLUSH), DATA (./bench-data).
set -euo pipefail
me=bench/pop_drain.sh
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
ROUNDS=${ROUNDS:-3} PRELOAD_SECONDS=${PRELOAD_SECONDS:-10} BATCH=${BATCH:-32} THREADS=${THREADS:-4}
INFLIGHT=${INFLIGHT:-1000000} FLUSH=${FLUSH:-SYNC_FLUSH}
base=$(mkdir -p "${DATA:-$repo/bench-data}" && cd "${DATA:-$repo/bench-data}" && pwd)
work=$base/pop_drain
results=$repo/bench/results
pidfiles=()
pull=$build/bench/uringmq-pull-drain
pop=$build/bench/uringmq-grpc-bench
for bin in tools/uringmq-broker tools/uringmq-ctl bench/uringmq-net-bench \
  bench/uringmq-pull-drain bench/uringmq-grpc-bench; do
  [ -x "$build/$bin" ] || { echo "$me: $build/$bin is missing (build it)"; exit 2; }
done
# shellcheck source=bench/peer_lib.sh
source "$repo/bench/peer_lib.sh"  # free_port, start_uringmq_broker, bench_topic, stop_broker
rm -rf "$work" && mkdir -p "$work" "$results"
: >"$work/threads.dat"
trap 'for f in "${pidfiles[@]}"; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done;
      rm -rf "$work/store"' EXIT
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
# The broker's threads' user + system ticks, summed by kind: "reactor shard iowq other" (the
# reactor is the main thread). io-wq workers come and go: theirs is the process's total (which
# keeps the time of threads that exited) less every other thread's.
thread_ticks() {
  local t ticks comm r=0 s=0 o=0 all
  all=$(sed 's/.*) //' "/proc/$bpid/stat" | awk '{print $12 + $13}')
  for t in /proc/"$bpid"/task/*; do
    comm=$(cat "$t/comm" 2>/dev/null) || continue
    ticks=$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{print $12 + $13}') || continue
    [ -n "$ticks" ] || continue
    if [ "${t##*/}" = "$bpid" ]; then r=$((r + ticks))
    elif [[ $comm == umq-shard-* ]]; then s=$((s + ticks))
    elif [[ $comm != iou-wrk-* ]]; then o=$((o + ticks)); fi
  done
  echo "$r $s $((all - r - s - o)) $o"
}

gport=$(free_port)
UMQ_CONF="grpcServerPort=$gport
shardCount=1" start_uringmq_broker "$FLUSH"
bench_topic
"$build/bench/uringmq-net-bench" --protocol remoting --port "$bport" --connections 16 \
  --pipeline 32 --seconds "$PRELOAD_SECONDS" --warmup-seconds 0 --queues 8 >"$work/preload.out" 2>&1
dat=$work/pop_drain.dat
: >"$dat"
for round in $(seq 1 "$ROUNDS"); do
  order="pull pop"
  [ $((round % 2)) -eq 0 ] && order="pop pull"
  for side in $order; do
    echo "round $round $side: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    read -r r0 s0 w0 o0 < <(thread_ticks)
    if [ "$side" = pull ]; then
      line=$("$pull" --port "$bport" --group "PullDrain$round" --batch "$BATCH" \
        --threads "$THREADS")
    else
      line=$("$pop" pop-drain --target "127.0.0.1:$gport" --group "PopDrain$round" \
        --batch "$BATCH" --connections "$THREADS" --streams 1)
    fi
    echo "$side $round $(field "$line" messages) $(field "$line" msgs_per_s)" >>"$dat"
    read -r r1 s1 w1 o1 < <(thread_ticks)
    n=$(field "$line" messages)
    awk -v side="$side" -v rnd="$round" -v n="$n" -v hz="$(getconf CLK_TCK)" \
      -v r=$((r1 - r0)) -v s=$((s1 - s0)) -v w=$((w1 - w0)) -v o=$((o1 - o0)) \
      'BEGIN { u = 1e6 / hz / (n > 0 ? n : 1);
        printf "%s %d reactor %.2f shard %.2f iowq %.2f other %.2f\n",
          side, rnd, r*u, s*u, w*u, o*u }' \
      | tee -a "$work/threads.dat" >&2
  done
done
rss0=0 rss1=0 held=0
if [ "$INFLIGHT" -gt 0 ]; then
  rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$bpid/status")
  line=$("$pop" pop-drain --target "127.0.0.1:$gport" --group PopHold --batch 32 \
    --connections "$THREADS" --streams 1 --no-ack 1 --limit "$INFLIGHT")
  held=$(field "$line" messages)
  sleep 2  # jemalloc's background purge
  rss1=$(awk '/^VmRSS:/ {print $2}' "/proc/$bpid/status")
fi
stop_broker
cp "$dat" "$results/pop_drain.dat"
cp "$work/threads.dat" "$results/pop_drain_threads.dat"
python3 - "$dat" "$results/pop_drain.md" "$BATCH" "$THREADS" "$rss0" "$rss1" "$held" "$FLUSH" \
  <<'PY'
import statistics, sys
dat, md, batch, threads, rss0, rss1, held, flush = sys.argv[1:]
runs = {}
for line in open(dat):
    side, rnd, n, rate = line.split()
    runs.setdefault(side, {})[int(rnd)] = (int(n), float(rate))
med = lambda side: statistics.median(r[1] for r in runs[side].values())
each = ", ".join(f"{runs['pop'][k][1] / runs['pull'][k][1]:.2f}"
                 for k in sorted(runs["pull"]) if k in runs["pop"])
ratio = med("pop") / med("pull")
out = [f"# POP over gRPC / remoting pulls (bench/pop_drain.sh; 128 B backlog of "
       f"{runs['pull'][1][0]:,} messages; {flush}; batch {batch}; {threads} connections; "
       f"medians of "
       f"{len(runs['pull'])} rounds)", "",
       "| read | msgs/s |", "|---|---|",
       f"| remoting pulls | {med('pull'):,.0f} |",
       f"| gRPC receive + ack | {med('pop'):,.0f} |", "",
       f"receive + ack / pull: {ratio:.2f} (each round: {each}); target at least 0.5: "
       f"{'met' if ratio >= 0.5 else 'not met'}"]
held = int(held)
if held > 0:
    delta = (int(rss1) - int(rss0)) / 1024
    per = (int(rss1) - int(rss0)) * 1024 / held
    at_million = per * 1_000_000 / 2**20
    out += ["", f"in flight: {held:,} messages received, none acked: broker RSS "
            f"{int(rss0) / 1024:.0f} -> {int(rss1) / 1024:.0f} MiB (+{delta:.1f} MiB, "
            f"{per:.1f} B a message; {at_million:.1f} MiB at 1,000,000; target at most 64 MiB: "
            f"{'met' if at_million <= 64 else 'not met'})"]
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
echo "$me: bench/results/pop_drain.md, pop_drain.dat"
