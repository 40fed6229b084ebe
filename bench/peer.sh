#!/usr/bin/env bash
# bench/peer.sh: uringmq beside the real RocketMQ 4.9.8 broker (the Java NameServer and broker
# the shared RocketMQ Java distribution provides), driven by the same load generators in one
# script, interleaved: every run starts a fresh broker of each kind, one after the other.
#
# Workloads, for each FLUSHES mode (SYNC_FLUSH, ASYNC_FLUSH), 128 B messages, topic BenchTopic
# with 8 queues:
#   netbench  uringmq-net-bench (C++; CONNS connections x PIPELINE requests in flight): cheaper
#             per message than either broker, so the broker is the bottleneck.
#   java      RocketMQ's own benchmark Producer (THREADS threads, synchronous sends).
# and (LATENESS=1) delay levels 1 and 2 at a Java push consumer (bench/peer/DelayLateness.java:
# LATENESS_COUNT messages at LATENESS_RATE/s, SYNC_FLUSH).
# Figures per run: msgs/s; reply latency p50/p99/p99.9 (netbench) or RT average/max (java, as
# its Producer prints them); broker CPU (user + system of every thread of the broker process,
# io_uring workers and JVM threads included) per message and as % of a core over the window;
# broker RSS at the window's end. Medians over RUNS go to bench/results/peer.md (with the
# ratios), every run to peer.dat, and per-second throughput and p99 of each netbench run's
# window to peer-<flush>.png (gnuplot).
#
# The Java broker runs as upstream's runbroker.sh does, scaled to this machine: 1 GiB heap,
# pre-touched (RocketMQ's default), 1 GiB CommitLog files; uringmq runs its defaults (1 GiB
# segments). Both store under DATA.
# Usage: bench/peer.sh [build dir]   (needs uringmq-broker, uringmq-ctl and uringmq-net-bench)
# Env: RUNS (2), SECONDS_ (15), WARMUP (3), CONNS (16), PIPELINE (32), THREADS (64),
#      FLUSHES ("SYNC_FLUSH ASYNC_FLUSH"; empty: none), GENERATORS ("netbench java"; empty:
#      none), LATENESS (1),
#      LATENESS_COUNT (20000), LATENESS_RATE (2000), LATENESS_DUMP (a path: each message's
#      lateness to <path>-<kind>-<run>), DATA (./bench-data),
#      UMQ_CONF (extra broker.conf lines for uringmq, newline-separated; empty by default).
# Without the Java distribution (tools/find-rocketmq-java.sh) or javac it prints a skip line.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build-bench}" && pwd)
RUNS=${RUNS:-2} SECONDS_=${SECONDS_:-15} WARMUP=${WARMUP:-3} CONNS=${CONNS:-16}
PIPELINE=${PIPELINE:-32} THREADS=${THREADS:-64} LATENESS=${LATENESS:-1}
LATENESS_COUNT=${LATENESS_COUNT:-20000} LATENESS_RATE=${LATENESS_RATE:-2000}
FLUSHES=${FLUSHES-"SYNC_FLUSH ASYNC_FLUSH"} GENERATORS=${GENERATORS-"netbench java"}
base=$(mkdir -p "${DATA:-$repo/bench-data}" && cd "${DATA:-$repo/bench-data}" && pwd)
work=$base/peer
results=$repo/bench/results
pidfiles=()
# shellcheck source=tests/cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"
# shellcheck source=bench/peer_lib.sh
source "$repo/bench/peer_lib.sh"  # free_port, start_uringmq_broker, bench_topic, measure, ...
java_or_skip "bench/peer.sh"
for bin in tools/uringmq-broker tools/uringmq-ctl bench/uringmq-net-bench; do
  [ -x "$build/$bin" ] || { echo "bench/peer.sh: $build/$bin is missing (build it)"; exit 2; }
done
rm -rf "$work" && mkdir -p "$work/classes" "$results"
trap 'cluster_kill_all; rm -rf "$work/store"' EXIT
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$repo/bench/peer/DelayLateness.java"

java_ns=$(free_port)
start_java_namesrvs "$java_ns"

# start_broker KIND FLUSH: a fresh broker; sets bpid, bport, ns (the NameServer clients use).
start_broker() {
  local kind=$1 flush=$2
  if [ "$kind" = uringmq ]; then
    start_uringmq_broker "$flush"
    bench_topic
    return
  fi
  rm -rf "$work/store" && mkdir -p "$work/store"
  bport=$(free_port)
  cat >"$work/rmq.conf" <<EOF
brokerClusterName=PeerCluster
brokerName=broker-j
brokerId=0
brokerRole=ASYNC_MASTER
brokerIP1=127.0.0.1
listenPort=$bport
namesrvAddr=127.0.0.1:$java_ns
storePathRootDir=$work/store
storePathCommitLog=$work/store/commitlog
flushDiskType=$flush
autoCreateTopicEnable=true
defaultTopicQueueNums=8
EOF
  : >"$work/rmq.out"
  BROKER_HEAP="-Xms1g -Xmx1g" "$rmq_java" broker "$work/rmq.conf" "$work/rmq-run" \
    >>"$work/rmq.out" 2>&1 &
  echo $! >"$work/broker.pid"
  pidfiles+=("$work/broker.pid")
  wait_listen "$bport" "$work/broker.pid"
  for _ in $(seq 1 600); do grep -q "boot success" "$work/rmq.out" && break; sleep 0.1; done
  ns=127.0.0.1:$java_ns
  bpid=$(cat "$work/broker.pid")
  bench_topic
}

dat=$work/peer.dat
: >"$dat"
for run in $(seq 1 "$RUNS"); do
  for flush in $FLUSHES; do
    for gen in $GENERATORS; do
      for kind in rocketmq uringmq; do
        echo "run $run $flush $gen $kind: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
        start_broker "$kind" "$flush"
        row=$(measure "$gen")
        stop_broker
        echo "$flush $gen $kind $run $row" >>"$dat"
        [ "$gen" = netbench ] && cp "$work/timeline" "$work/timeline-$flush-$kind-$run"
      done
    done
  done
  if [ "$LATENESS" = 1 ]; then
    for kind in rocketmq uringmq; do
      echo "run $run lateness $kind: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      start_broker "$kind" SYNC_FLUSH
      json=$(LATENESS_DUMP=${LATENESS_DUMP:+$LATENESS_DUMP-$kind-$run} \
        RMQ_CP_PREFIX=$work/classes "$rmq_java" java \
        -Drocketmq.client.logRoot="$work/client-logs" DelayLateness "$ns" BenchTopic \
        "$LATENESS_COUNT" "$LATENESS_RATE" 2>>"$work/lateness.err" | grep '^{' | tail -1)
      stop_broker
      echo "lateness $kind $run $json" >>"$dat"
    done
  fi
done
cp "$dat" "$results/peer.dat"

python3 - "$dat" "$results/peer.md" "$CONNS" "$PIPELINE" "$THREADS" "$SECONDS_" <<'PY'
import json, statistics, sys
dat, md, conns, pipeline, threads, seconds = sys.argv[1:]
loads, late = {}, {}
for line in open(dat):
    f = line.split()
    if f[0] == "lateness":
        late.setdefault(f[1], []).append(json.loads(" ".join(f[3:])))
    else:
        loads.setdefault((f[0], f[1], f[2]), []).append([float(v) for v in f[4:]])
med = lambda rows, i: statistics.median(r[i] for r in rows)
out = [f"# uringmq beside RocketMQ 4.9.8 (bench/peer.sh; medians of the runs; 128 B; "
       f"netbench {conns} x {pipeline} in flight, java Producer {threads} threads, "
       f"{seconds} s windows)", "",
       "| flush | generator | broker | msgs/s | p50 / p99 / p99.9 ms (java: RT avg / max) | "
       "broker CPU us/msg | broker CPU % of a core | broker RSS MiB |",
       "|---|---|---|---|---|---|---|---|"]
for (flush, gen, kind), rows in sorted(loads.items()):
    lat = f"{med(rows, 1):.2f} / {med(rows, 2):.2f}" + (
        f" / {med(rows, 3):.2f}" if gen == "netbench" else "")
    out.append(f"| {flush} | {gen} | {kind} | {med(rows, 0):,.0f} | {lat} | {med(rows, 4):.1f} | "
               f"{med(rows, 5):.0f} | {med(rows, 6):.0f} |")
out += ["", "| flush | generator | msgs/s uringmq / RocketMQ | broker CPU per message RocketMQ / "
        "uringmq | RSS RocketMQ / uringmq |", "|---|---|---|---|---|"]
for (flush, gen, kind), rows in sorted(loads.items()):
    if kind != "uringmq" or (flush, gen, "rocketmq") not in loads:
        continue
    j = loads[(flush, gen, "rocketmq")]
    out.append(f"| {flush} | {gen} | {med(rows, 0) / med(j, 0):.2f} | "
               f"{med(j, 4) / med(rows, 4):.1f} | {med(j, 6) / med(rows, 6):.1f} |")
if late:
    out += ["", "Delay levels 1 and 2 at the Java push consumer (lateness = received - send "
            "begin - the level's delay; SYNC_FLUSH):", "",
            "| broker | runs | received / sent | early | p50 ms | p99 ms | max ms |",
            "|---|---|---|---|---|---|---|"]
    for kind, rows in sorted(late.items()):
        m = lambda k: statistics.median(r[k] for r in rows)
        out.append(f"| {kind} | {len(rows)} | {sum(r['received'] for r in rows)} / "
                   f"{sum(r['sent'] for r in rows)} | {sum(r['early'] for r in rows)} | "
                   f"{m('p50_ms'):.0f} | {m('p99_ms'):.0f} | {m('max_ms'):.0f} |")
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY

# Per-second throughput and p99 of the first run's netbench windows, one PNG per flush mode.
if command -v gnuplot >/dev/null && [[ " $GENERATORS " == *" netbench "* ]]; then
  for flush in $FLUSHES; do
    r=$work/timeline-$flush-rocketmq-1 u=$work/timeline-$flush-uringmq-1
    [ -s "$r" ] && [ -s "$u" ] || continue
    cp "$r" "$results/peer-$flush-rocketmq.timeline"
    cp "$u" "$results/peer-$flush-uringmq.timeline"
    gnuplot <<EOF
set terminal pngcairo size 1000,600 noenhanced font "sans,10"
set output "$results/peer-$flush.png"
set multiplot layout 2,1 title "$flush, 128 B, uringmq-net-bench $CONNS x $PIPELINE (run 1)"
set ylabel "msgs/s"
set xlabel "s"
set key outside right
plot "$r" using 1:2 with lines title "RocketMQ 4.9.8", "$u" using 1:2 with lines title "uringmq"
set ylabel "p99 reply ms"
set logscale y
plot "$r" using 1:(\$4/1000) with lines title "RocketMQ 4.9.8", \
     "$u" using 1:(\$4/1000) with lines title "uringmq"
unset multiplot
EOF
  done
fi
echo "bench/peer.sh: bench/results/peer.md, peer.dat, peer-<flush>.png"
