#!/usr/bin/env bash
# bench/broker_ab.sh: the broker's CPU cost per message, build B against build A of uringmq (a
# refactor of the broker should cost no more than 5% more CPU per message: B/A <= 1.05),
# interleaved: each round runs every workload on A and on B (A first in odd rounds, B first in
# even ones), each run a fresh broker on a fresh store (bench/peer_lib.sh, the pieces
# bench/peer.sh uses for its uringmq side; no Java broker here).
#
# Workloads, FLUSH (SYNC_FLUSH), 128 B messages, topic BenchTopic with 8 queues:
#   netbench  uringmq-net-bench (CONNS connections x PIPELINE sends in flight): cheaper per
#             message than the broker, so the broker is the bottleneck.
#   java      RocketMQ 4.9.8's own benchmark Producer (THREADS threads, synchronous sends)
#             through the broker's NameServer. Its window is its own 10 s periods after its
#             first (warm-up) period: SECONDS_ rounded up to 10 s; WARMUP does not apply.
#   consume   netbench, plus a long-polling consumer connection per queue (--consume 1,
#             PULL_MESSAGE, 32 a pull): every message sent is pulled too; CPU per message is
#             per message sent (its send and its pull).
# Figures per run: msgs/s; broker CPU (user + system of every thread of the broker process,
# io_uring workers included, from /proc/<pid>/stat over the window) per message and as % of a
# core; reply latency (netbench, consume: p50/p99/p99.9 ms; java: RT average/max ms); RSS.
# Every run goes to bench/results/broker_ab.dat ("workload build round msgs/s p50 p99 p999
# cpu_us_per_msg cpu_pct rss_mib"); bench/results/broker_ab.md has the medians per build and
# workload, B/A of the median CPU per message and each round's B/A; the table is printed.
# The machine's other load moves the figures: compare the rounds' B/A, not one run.
# Usage: bench/broker_ab.sh BUILD_A BUILD_B   (build dirs with tools/uringmq-broker,
#          tools/uringmq-ctl and bench/uringmq-net-bench; the same dir twice: the noise floor)
# Env: ROUNDS (3), SECONDS_ (10), WARMUP (3), CONNS (16), PIPELINE (32), THREADS (64),
#      WORKLOADS ("netbench java consume"), FLUSH (SYNC_FLUSH), DATA (./bench-data),
#      UMQ_CONF (extra broker.conf lines for both builds, newline-separated; empty by default).
# Without the Java distribution (tools/find-rocketmq-java.sh) or javac the java workload is
# skipped, with a line saying so, and the others run.
set -euo pipefail
me=bench/broker_ab.sh
repo=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { sed -n '/^# Usage:/,/^# Env:/p' "$0" | sed '$d; s/^# //'; exit 2; }
build_a=$(cd "$1" && pwd) build_b=$(cd "$2" && pwd)
ROUNDS=${ROUNDS:-3} SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-3} CONNS=${CONNS:-16}
PIPELINE=${PIPELINE:-32} THREADS=${THREADS:-64} FLUSH=${FLUSH:-SYNC_FLUSH}
WORKLOADS=${WORKLOADS-"netbench java consume"}
base=$(mkdir -p "${DATA:-$repo/bench-data}" && cd "${DATA:-$repo/bench-data}" && pwd)
work=$base/broker_ab
results=$repo/bench/results
pidfiles=()
# shellcheck source=tests/cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"  # java_or_skip, cluster_kill_all
# shellcheck source=bench/peer_lib.sh
source "$repo/bench/peer_lib.sh"  # start_uringmq_broker, bench_topic, measure, stop_broker
for build in "$build_a" "$build_b"; do
  for bin in tools/uringmq-broker tools/uringmq-ctl bench/uringmq-net-bench; do
    [ -x "$build/$bin" ] || { echo "$me: $build/$bin is missing (build it)"; exit 2; }
  done
done
skipped=""
if [[ " $WORKLOADS " == *" java "* ]]; then
  rc=0
  why=$(java_or_skip "$me: the java workload") || rc=$?
  if [ "$rc" = 0 ]; then
    java_or_skip "$me"  # here: rmq_java and the rest
  elif [ "$rc" = 77 ]; then
    echo "$why"
    skipped=$why
    WORKLOADS=$(for w in $WORKLOADS; do [ "$w" = java ] || printf '%s ' "$w"; done)
  else
    echo "$why"
    exit "$rc"
  fi
fi
rm -rf "$work" && mkdir -p "$work" "$results"
trap 'cluster_kill_all; rm -rf "$work/store"' EXIT

dat=$work/broker_ab.dat
: >"$dat"
for round in $(seq 1 "$ROUNDS"); do
  # Odd rounds run A first, even rounds B first: a warm page cache or a neighbour's burst does
  # not always favour the same build.
  order="A B"
  [ $((round % 2)) -eq 0 ] && order="B A"
  for workload in $WORKLOADS; do
    for side in $order; do
      build=$build_a
      [ "$side" = B ] && build=$build_b
      echo "round $round $workload $side: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      start_uringmq_broker "$FLUSH"
      bench_topic
      case $workload in
        netbench) row=$(measure netbench) ;;
        consume) row=$(measure netbench --consume 1) ;;
        java) row=$(measure java) ;;
        *) echo "$me: unknown workload $workload (netbench, java, consume)" >&2; exit 2 ;;
      esac
      stop_broker
      echo "$workload $side $round $row" >>"$dat"
    done
  done
done
cp "$dat" "$results/broker_ab.dat"

python3 - "$dat" "$results/broker_ab.md" "$build_a" "$build_b" "$FLUSH" "$CONNS" "$PIPELINE" \
  "$THREADS" "$SECONDS_" "$skipped" <<'PY'
import statistics, sys
dat, md, build_a, build_b, flush, conns, pipeline, threads, seconds, skipped = sys.argv[1:]
runs = {}  # (workload, build) -> {round: [msgs/s, p50, p99, p999, cpu us/msg, cpu %, rss]}
order = []
for line in open(dat):
    f = line.split()
    if f[0] not in order:
        order.append(f[0])
    runs.setdefault((f[0], f[1]), {})[int(f[2])] = [float(v) for v in f[3:]]
med = lambda rows, i: statistics.median(r[i] for r in rows.values())
out = [f"# Broker CPU per message, build B / build A (bench/broker_ab.sh; medians of the rounds; "
       f"{flush}, 128 B, 8 queues; netbench and consume {conns} x {pipeline} in flight, java "
       f"Producer {threads} threads; {seconds} s windows)", "",
       f"A: `{build_a}`  ", f"B: `{build_b}`", "",
       "| workload | msgs/s A | msgs/s B | broker CPU us/msg A | broker CPU us/msg B | "
       "CPU/msg B / A | each round's B / A | broker CPU % of a core A / B | B / A <= 1.05 |",
       "|---|---|---|---|---|---|---|---|---|"]
for w in order:
    a, b = runs.get((w, "A"), {}), runs.get((w, "B"), {})
    if not a or not b:
        continue
    ratio = med(b, 4) / med(a, 4)
    each = ", ".join(f"{b[r][4] / a[r][4]:.3f}" for r in sorted(a) if r in b and a[r][4] > 0)
    out.append(f"| {w} | {med(a, 0):,.0f} | {med(b, 0):,.0f} | {med(a, 4):.2f} | "
               f"{med(b, 4):.2f} | {ratio:.3f} | {each} | {med(a, 5):.0f} / {med(b, 5):.0f} | "
               f"{'yes' if ratio <= 1.05 else 'no'} |")
if skipped:
    out += ["", skipped]
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
echo "$me: bench/results/broker_ab.md, broker_ab.dat"
