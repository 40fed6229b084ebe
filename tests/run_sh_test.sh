#!/usr/bin/env bash
# tools/run.sh as a newcomer runs it, on a scratch data folder and free ports, with an existing
# build (URINGMQ_RUN_BUILD: nothing installed or rebuilt):
#   1. --demo-only exits 0, both demo messages (the plain one and the delayed one) are consumed,
#      and no broker is left running;
#   2. the default mode serves after the demo; SIGINT (Ctrl-C) stops the broker cleanly and
#      run.sh exits 0, leaving no broker;
#   3. --demo-only again, on the store the runs above left (recovered), stopped by SIGTERM in
#      the middle of the demo: the broker stops cleanly, run.sh exits 0, no broker is left.
# Usage: tests/run_sh_test.sh <build dir> <work dir>
set -euo pipefail
build=$(cd "$1" && pwd)
work=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
read -r port ns_port < <("$repo/tools/free-ports.sh" 2 "$(nproc)")
export URINGMQ_RUN_BUILD=$build URINGMQ_RUN_DATA=$work/data URINGMQ_RUN_PORT=$port
export URINGMQ_RUN_NAMESRV_PORT=$ns_port

fail() { echo "run_sh_test: FAILED: $*"; echo "--- output:"; cat "$work/out" || true; exit 1; }
# No uringmq-broker left running on this test's data folder.
no_broker_left() {
  local pids
  pids=$(pgrep -f "uringmq-broker -c $work/data/broker.conf" || true)
  [ -z "$pids" ] || { kill -9 $pids; fail "$1: a broker is left running (pid $pids)"; }
}
# Both demo messages of the run whose output is $work/out went through the consumer.
demo_consumed() {
  local stamp
  stamp=$(sed -nE "s/.* body=hello ([0-9]+)$/\\1/p" "$work/out" | head -1)
  [ -n "$stamp" ] || fail "$1: no plain message consumed"
  grep -q "delayed hello $stamp" "$work/out" || fail "$1: the delayed message was not consumed"
}

echo "== 1. --demo-only: the demo, then the broker stops and run.sh exits"
rc=0
timeout 120 "$repo/tools/run.sh" --demo-only > "$work/out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "--demo-only exited $rc"
demo_consumed "--demo-only"
no_broker_left "--demo-only"
cp "$work/out" "$work/out.1"

# Starts run.sh in the background with arguments $2...; returns when its output ($work/out) has a
# line matching $1. Job control on: the job keeps SIGINT (a shell without it ignores SIGINT in
# background jobs, as a terminal's Ctrl-C would not be).
start_until() {
  local line=$1
  shift
  set -m
  "$repo/tools/run.sh" "$@" > "$work/out" 2>&1 &
  pid=$!
  set +m
  for _ in $(seq 1 600); do
    grep -q "$line" "$work/out" && return 0
    kill -0 "$pid" 2>/dev/null || fail "run.sh $*: it ended before printing $line"
    sleep 0.1
  done
  kill -9 "$pid"
  fail "run.sh $*: no $line in 60 s"
}
# Sends signal $1 to run.sh and checks that it exits 0 (the broker stopped cleanly) leaving none.
stop_with() {
  kill -"$1" "$pid"
  rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "$2: run.sh exited $rc after SIG$1 (0: the broker stopped cleanly)"
  grep -q "stopped cleanly" "$work/out" || fail "$2: the broker did not say it stopped cleanly"
  no_broker_left "$2"
}

echo "== 2. default mode: the demo, then serving until SIGINT (Ctrl-C)"
start_until "^== serving"
demo_consumed "default mode"
kill -0 "$pid" 2>/dev/null || fail "default mode: run.sh did not keep serving"
stop_with INT "default mode"
cp "$work/out" "$work/out.2"

echo "== 3. --demo-only, SIGTERM in the middle of the demo (on the store the runs above left)"
start_until "^== consume" --demo-only
stop_with TERM "--demo-only interrupted"
cp "$work/out" "$work/out.3"
echo "run_sh_test: OK"
