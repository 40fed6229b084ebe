#!/usr/bin/env bash
# bench/grpc_stack.sh: which HTTP/2 + protobuf stack the broker's gRPC endpoint should run on,
# measured. The same unary RPC (MessagingService/SendMessage, a fixed answer, no store) served by
#   grpcpp        grpc++ 1.51's callback API on its own threads (uringmq-grpcpp-server)
#   grpcpp-async  grpc++'s completion-queue API, drained by one thread (the same, `async`)
#   nghttp2       nghttp2 sans-IO + libprotobuf on one io_uring thread (uringmq-nghttp2-server)
# and driven by one grpc++ load generator (uringmq-grpc-load: CONNSxSTREAMS calls in flight,
# BODY-byte bodies). Each configuration runs ROUNDS times, the servers taking turns to go first
# (round r starts with the r-th of STACKS, the others following in order), each run a fresh
# server process.
# Figures per run, over the load generator's window (after WARMUP s, SECONDS_ s): calls/s;
# server CPU (user + system of every thread of the process, /proc/<pid>/stat) per call and as %
# of a core; server RSS and thread count at the window's end. Every run goes to
# bench/results/grpc_stack.dat ("config stack round calls_per_s cpu_us_per_call cpu_pct
# rss_kib threads"); the medians per configuration and stack, with each stack's CPU per call
# over grpcpp's, go to bench/results/grpc_stack.md and are printed.
# Usage: bench/grpc_stack.sh [BUILD_DIR]   (default build; needs bench/grpc_stack built there)
# Env: ROUNDS (5), SECONDS_ (5), WARMUP (1), CONFIGS ("1x1 1x64 4x16": connections x streams),
#      STACKS ("grpcpp grpcpp-async nghttp2"), BODY (128), CLIENT_THREADS (1),
#      PORT (18081: runs use PORT to PORT+99)
set -euo pipefail
me=bench/grpc_stack.sh
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
bin=$build/bench/grpc_stack
ROUNDS=${ROUNDS:-5} SECONDS_=${SECONDS_:-5} WARMUP=${WARMUP:-1} BODY=${BODY:-128}
CONFIGS=${CONFIGS:-"1x1 1x64 4x16"} CLIENT_THREADS=${CLIENT_THREADS:-1} PORT=${PORT:-18081}
STACKS=${STACKS:-"grpcpp grpcpp-async nghttp2"}
for b in uringmq-grpcpp-server uringmq-nghttp2-server uringmq-grpc-load; do
  [ -x "$bin/$b" ] || { echo "$me: $bin/$b missing (build bench/grpc_stack)" >&2; exit 1; }
done
results=$repo/bench/results
mkdir -p "$results"
dat=$results/grpc_stack.dat
echo "# config stack round calls_per_s cpu_us_per_call cpu_pct rss_kib threads" >"$dat"

server_pid=""
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
trap stop_server EXIT

# run_one CONFIG STACK ROUND: one fresh server, one load window, one line of the .dat file.
# Each run listens on a port of its own: the last run's closed connections may still hold the
# previous one (FIN_WAIT, LAST_ACK), where SO_REUSEADDR does not let a new listener bind.
run=0
run_one() {
  local config=$1 stack=$2 round=$3 log port=$((PORT + run % 100))
  run=$((run + 1))
  log=$(mktemp)
  case $stack in
    grpcpp) "$bin/uringmq-grpcpp-server" "$port" callback >"$log" 2>&1 & ;;
    grpcpp-async) "$bin/uringmq-grpcpp-server" "$port" async >"$log" 2>&1 & ;;
    nghttp2) "$bin/uringmq-nghttp2-server" "$port" >"$log" 2>&1 & ;;
    *) echo "$me: unknown stack $stack" >&2; exit 2 ;;
  esac
  server_pid=$!
  for _ in $(seq 50); do grep -q '^listening' "$log" && break; sleep 0.1; done
  grep -q '^listening' "$log" || { echo "$me: $stack did not start: $(cat "$log")" >&2; exit 1; }
  local line
  line=$("$bin/uringmq-grpc-load" --target "127.0.0.1:$port" --connections "${config%x*}" \
    --streams "${config#*x}" --seconds "$SECONDS_" --warmup "$WARMUP" --body-bytes "$BODY" \
    --threads "$CLIENT_THREADS" --server-pid "$server_pid")
  stop_server
  rm -f "$log"
  # calls_per_s=.. cpu_us_per_call=.. cpu_pct=.. rss_kib=.. threads=.. errors=..
  local values
  values=$(sed -E 's/[a-z_]+=//g' <<<"$line")
  read -r calls cpu pct rss threads _ <<<"$values"
  echo "$config $stack $round $calls $cpu $pct $rss $threads" | tee -a "$dat"
}

read -r -a stacks <<<"$STACKS"
for config in $CONFIGS; do
  for round in $(seq "$ROUNDS"); do
    for i in $(seq 0 $((${#stacks[@]} - 1))); do
      run_one "$config" "${stacks[$(((round - 1 + i) % ${#stacks[@]}))]}" "$round"
    done
  done
done

python3 - "$dat" "$results/grpc_stack.md" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith('#')]
def median(config, stack, column):
    return statistics.median(float(r[column]) for r in rows if r[0] == config and r[1] == stack)
lines = [f"medians of {sys.argv[3]} runs per cell, the servers taking turns to go first", "",
         "| connections x streams | stack | calls/s | server CPU us/call | server CPU % of a core"
         " | server RSS MiB | server threads | CPU per call / grpcpp's |",
         "|---|---|---|---|---|---|---|---|"]
for config in dict.fromkeys(r[0] for r in rows):
    stacks = list(dict.fromkeys(r[1] for r in rows if r[0] == config))
    for stack in stacks:
        ratio = ""
        if stack != "grpcpp" and "grpcpp" in stacks:
            ratio = f"{median(config, stack, 4) / median(config, 'grpcpp', 4):.2f}"
        lines.append(f"| {config} | {stack} | {median(config, stack, 3):,.0f} | "
                     f"{median(config, stack, 4):.2f} | {median(config, stack, 5):.1f} | "
                     f"{median(config, stack, 6) / 1024:.1f} | {median(config, stack, 7):.0f} | "
                     f"{ratio} |")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
