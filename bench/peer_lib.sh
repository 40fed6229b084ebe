# bench/peer_lib.sh: sourced by bench/peer.sh and bench/broker_ab.sh. A fresh uringmq broker
# (start_uringmq_broker), topic BenchTopic with 8 queues (bench_topic), one load against it
# with the broker's CPU (utime + stime from /proc) and RSS over the load's window (measure),
# and stopping it (stop_broker).
# The caller sets: repo (the checkout), build (the build dir whose tools/uringmq-broker,
# tools/uringmq-ctl and bench/uringmq-net-bench run), work (a scratch dir: the store goes to
# $work/store), pidfiles (an array: each broker's pid file is added, for an EXIT trap's
# cluster_kill_all), CONNS, PIPELINE, SECONDS_, WARMUP, THREADS; UMQ_CONF (optional: extra
# broker.conf lines, newline-separated); for measure's java generator rmq_java (java_or_skip).
# The functions set bpid, bport and ns (the NameServer address clients use).
# shellcheck shell=bash disable=SC2154
# (SC2154: repo, work, build and rmq_java are the caller's.)

free_port() {  # p with p - 2 and p + 1 free too (a Java broker binds all three), below the
  "$repo/tools/free-ports.sh" 1 2  # ephemeral range; 2: a uringmq broker's second shard too
}
wait_listen() {  # wait_listen PORT PIDFILE: up to 60 s
  for _ in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$(cat "$2")" 2>/dev/null || { echo "${0##*/}: the broker exited" >&2; return 1; }
    sleep 0.1
  done
  echo "${0##*/}: nothing listens on $1" >&2
  return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_mib() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

# start_uringmq_broker FLUSH: a fresh store and a uringmq broker on it (its defaults; 8 queues a
# topic; its own NameServer); sets bpid, bport, ns.
start_uringmq_broker() {
  local nsport
  rm -rf "$work/store" && mkdir -p "$work/store"
  bport=$(free_port)
  nsport=$(free_port)
  printf '%s\n' "storePathRootDir=$work/store" "listenPort=$bport" \
    "namesrvListenPort=$nsport" "flushDiskType=$1" "defaultTopicQueueNums=8" \
    "logLevel=warn" >"$work/umq.conf"
  [ -z "${UMQ_CONF:-}" ] || printf '%s\n' "$UMQ_CONF" >>"$work/umq.conf"
  "$build/tools/uringmq-broker" -c "$work/umq.conf" >"$work/umq.out" 2>&1 &
  echo $! >"$work/broker.pid"
  pidfiles+=("$work/broker.pid")
  wait_listen "$bport" "$work/broker.pid"
  wait_listen "$nsport" "$work/broker.pid"
  ns=127.0.0.1:$nsport
  bpid=$(cat "$work/broker.pid")
}
# bench_topic: BenchTopic, 8 read and write queues, on the broker started last.
bench_topic() {
  "$build/tools/uringmq-ctl" topic create --addr "127.0.0.1:$bport" -t BenchTopic -r 8 -w 8 \
    >/dev/null
  sleep 1  # the Java broker registers the topic with its NameServer on its next beat (or now)
}
stop_broker() {
  kill -TERM "$bpid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$bpid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$bpid" 2>/dev/null || true
  wait "$bpid" 2>/dev/null || true
  rm -f "$work/broker.pid"
}

# tps_lines FILE: how many "Send TPS" lines RocketMQ's Producer printed (one every 10 s).
tps_lines() { grep -c "Send TPS" "$1" || true; }

# measure GEN [NET_BENCH_ARG...]: one load against the broker started last, CPU and RSS over its
# window; prints "msgs_per_s p50 p99 p999 cpu_us_per_msg cpu_pct rss_mib" (p999 -1 where not
# measured; the java generator's p50/p99 are its RT average and max). GEN netbench:
# uringmq-net-bench, CONNS x PIPELINE sends in flight, with the further arguments given (its
# timeline to $work/timeline); the window is SECONDS_ after WARMUP. GEN java: RocketMQ's
# benchmark Producer, THREADS threads; its window starts when the Producer printed its first
# figures (10 s after its start: its warm-up) and ends with the line that closes SECONDS_
# rounded up to its 10 s period.
measure() {
  local gen=$1 out=$work/load.out load c0 t0 c1 t1 rss periods=0
  shift
  if [ "$gen" = netbench ]; then
    "$build/bench/uringmq-net-bench" --protocol remoting --port "$bport" --connections "$CONNS" \
      --pipeline "$PIPELINE" --seconds "$SECONDS_" --warmup-seconds "$WARMUP" --json \
      --timeline "$work/timeline" "$@" >"$out" 2>&1 &
    load=$!
    sleep "$WARMUP"
    c0=$(cpu_ticks "$bpid") t0=$(date +%s%N)
    sleep "$SECONDS_"
  else
    BENCH_LOG_DIR=$work/bench-logs "$rmq_java" benchmark Producer -n "$ns" -t BenchTopic \
      -w "$THREADS" -s 128 >"$out" 2>&1 &
    load=$!
    for _ in $(seq 1 400); do [ "$(tps_lines "$out")" -ge 1 ] && break; sleep 0.1; done
    c0=$(cpu_ticks "$bpid") t0=$(date +%s%N)
    periods=$(((SECONDS_ + 9) / 10))
    for _ in $(seq 1 $((periods * 100 + 100))); do
      [ "$(tps_lines "$out")" -ge $((periods + 1)) ] && break
      sleep 0.1
    done
  fi
  c1=$(cpu_ticks "$bpid") t1=$(date +%s%N) rss=$(rss_mib "$bpid")
  [ "$gen" = java ] && kill "$load" 2>/dev/null
  wait "$load" 2>/dev/null || true
  python3 - "$gen" "$out" "$c0" "$c1" "$t0" "$t1" "$rss" "$(getconf CLK_TCK)" "${0##*/}" <<'PY'
import json, re, sys
gen, out, c0, c1, t0, t1, rss, hz, me = sys.argv[1:]
window = (int(t1) - int(t0)) / 1e9
cpu_s = (int(c1) - int(c0)) / int(hz)
if gen == "netbench":
    lines = [l for l in open(out) if l.startswith("{")]
    if not lines:
        sys.exit(f"{me}: no JSON line from uringmq-net-bench:\n" + open(out).read()[-2000:])
    j = json.loads(lines[-1])
    if j["errors"]:
        print(f"{me}: {j['errors']} errors, the first: {j['first_error']}", file=sys.stderr)
    rate, p50, p99, p999 = j["msgs_per_s"], j["p50_us"] / 1e3, j["p99_us"] / 1e3, j["p999_us"] / 1e3
else:
    # "Send TPS: 1234 Max RT(ms): 56 Average RT(ms):  3.2 ...", each over the 10 s before it;
    # the first is the warm-up.
    text = open(out).read()
    pattern = r"Send TPS: *([\d.]+).*?Max RT\(ms\): *([\d.]+).*?Average RT\(ms\): *([\d.]+)"
    rows = re.findall(pattern, text)[1:]
    if not rows:
        sys.exit(f"{me}: no 'Send TPS' line from the Java Producer:\n" + text[-2000:])
    rate = sum(float(r[0]) for r in rows) / len(rows)
    p50 = sum(float(r[2]) for r in rows) / len(rows)
    p99, p999 = max(float(r[1]) for r in rows), -1
msgs = rate * window
print(f"{rate:.0f} {p50:.2f} {p99:.2f} {p999:.2f} {cpu_s * 1e6 / max(msgs, 1):.2f} "
      f"{100 * cpu_s / window:.0f} {rss}")
PY
}
