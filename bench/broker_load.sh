# bench/broker_load.sh: sourced by the network benchmarks (compare.sh's network section,
# batch_produce.sh, transactional_produce.sh): start and stop one server at a time, wait for its
# port, and (one_load) a fresh uringmq-broker (SYNC_FLUSH, or $FLUSH; 8 queues a topic, a free
# loopback port) under one uringmq-net-bench load; the produce scripts collect the runs' JSON
# lines as "MODE RUN {json}" (run_modes) and summarise them (summarize_runs).
# one_load needs: build (the build dir), data (a scratch dir, removed and recreated per run),
# CONNS, BYTES, SECONDS_, WARMUP; EXTRA_CONF (optional): more broker.conf lines; BEFORE_LOAD
# (optional): a command run with the broker's port once it listens, before the load (a slave
# connecting, say); AFTER_LOAD (optional): a command run with the broker's port after the load,
# before the broker stops (a metrics scrape, say; its stdout must not be the JSON's). The caller
# sets its own EXIT trap (server_stop first).
server_pid=""
server_stop() {  # SIGTERM the server started last and wait for it (the servers stop cleanly on it)
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
# A listenPort free for a broker of two shards (p, p + 10 and their neighbours), below the
# kernel's ephemeral range: a port drawn from that range could become a client socket's local
# port, and a client connecting to it before the broker listens then connects to itself (a load
# generator's TLS handshake or first reply failed that way, now and then).
free_port() {
  "$(dirname "${BASH_SOURCE[0]}")/../tools/free-ports.sh" 1 2
}
wait_port() {  # wait_port PORT: up to 30 s for a listener
  for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || { echo "broker_load.sh: the server exited" >&2; return 1; }
    sleep 0.1
  done
  echo "broker_load.sh: nothing listens on $1" >&2
  return 1
}

# one_load SEGMENT_BYTES NET_BENCH_ARGS...: a fresh broker, one load, its JSON on stdout.
one_load() {
  local segment=$1
  shift
  rm -rf "$data" && mkdir -p "$data"
  local port
  port=$(free_port)
  printf 'storePathRootDir=%s\nlistenPort=%s\nnamesrvListenPort=0\nflushDiskType=%s\n%s\n' \
    "$data/store" "$port" "${FLUSH:-SYNC_FLUSH}" "mappedFileSizeCommitLog=$segment
defaultTopicQueueNums=8
logLevel=warn" >"$data/broker.conf"
  [ -n "${EXTRA_CONF:-}" ] && printf '%s\n' "$EXTRA_CONF" >>"$data/broker.conf"
  "$build/tools/uringmq-broker" -c "$data/broker.conf" 2>"$data/broker.log" &
  server_pid=$!
  wait_port "$port"
  [ -n "${BEFORE_LOAD:-}" ] && $BEFORE_LOAD "$port"
  "$build/bench/uringmq-net-bench" --protocol remoting --port "$port" --connections "$CONNS" \
    --message-bytes "$BYTES" --seconds "$SECONDS_" --warmup-seconds "$WARMUP" --json "$@"
  [ -n "${AFTER_LOAD:-}" ] && $AFTER_LOAD "$port" >&2
  server_stop
}

# run_modes OUT MODE...: RUNS rounds of `one MODE` (the caller's), interleaved, into OUT.
run_modes() {
  local out=$1
  shift
  for run in $(seq 1 "$RUNS"); do
    for mode in "$@"; do
      echo "run $run $mode: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      printf '%s %s ' "$mode" "$run" >>"$out"
      one "$mode" >>"$out"
    done
  done
}
# summarize_runs OUT [ARG...] <<'PY' ... PY: runs the Python on stdin after a prelude that reads
# OUT's "MODE RUN {json}" lines (run_modes) into `rows` (mode -> its runs' JSON objects, in run
# order) and defines med(runs, key) (a median over runs), summary(label, runs, more) (one line:
# the median rate and each run's rate and p50 / p99, then more(run)) and medians(runs) (the
# medians of rate, p50 and p99). sys.argv[1] is OUT, the ARGs follow.
summarize_runs() {
  cat "$(dirname "${BASH_SOURCE[0]}")/runs_prelude.py" - | python3 - "$@"
}
