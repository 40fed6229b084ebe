#!/usr/bin/env bash
# Interop tests: the npm RocketMQ client ali-ons 3.12.0 against a real uringmq-broker.
#
#   tests/interop/run.sh <path-to-uringmq-broker> [test-file ...]
#
# Installs the pinned node modules if missing or older than package-lock.json (npm ci), starts a
# broker on free loopback ports with a short delay-level table and a store in a temp dir, waits for
# it to be ready, runs each *.test.js with `node --test` (one at a time: e_ and f_ restart and
# kill their own brokers), stops the shared broker with SIGTERM (exit status must be 0) and exits
# non-zero if anything failed. Env: URINGMQ_INTEROP_KEEP=1 keeps the temp dir,
# URINGMQ_INTEROP_VERBOSE=1 prints ali-ons logs.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <path-to-uringmq-broker> [test-file ...]" >&2
  exit 2
fi
broker_bin=$(realpath "$1")
shift
args=()
for f in "$@"; do args+=("$(realpath "$f")"); done
[ -x "$broker_bin" ] || { echo "interop: $broker_bin is not an executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

command -v node >/dev/null ||
  { echo "interop: node is not installed (tools/install-deps.sh)" >&2; exit 2; }
# Serialised: several build trees may run this test at once on the same source tree.
exec 9>"$here/.npm-ci.lock"
flock 9
if [ ! -d node_modules/ali-ons ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "interop: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
flock -u 9

tmp=$(mktemp -d "${TMPDIR:-/tmp}/uringmq-interop.XXXXXX")
broker_pid=""
cleanup() {
  if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
    kill -KILL "$broker_pid" 2>/dev/null || true
  fi
  if [ "${URINGMQ_INTEROP_KEEP:-0}" = 1 ]; then
    echo "interop: kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

delay_levels='500ms 2s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 3s'
export URINGMQ_DELAY_LEVELS="$delay_levels"
eval "$(node broker.js conf "$tmp/shared")"   # NAMESRV_PORT BROKER_PORT CONF STORE
log="$tmp/shared/broker.log"

"$broker_bin" -c "$CONF" >"$log" 2>&1 &
broker_pid=$!
deadline=$((SECONDS + 60))
until grep -qiw ready "$log" 2>/dev/null \
      && node -e "
const net = require('net');
let left = 2;
for (const p of [$BROKER_PORT, $NAMESRV_PORT]) {
  const s = net.connect(p, '127.0.0.1');
  s.on('connect', () => { s.destroy(); if (--left === 0) process.exit(0); });
  s.on('error', () => process.exit(1));
}" 2>/dev/null; do
  if ! kill -0 "$broker_pid" 2>/dev/null; then
    echo "interop: broker exited before it was ready; its output:" >&2
    cat "$log" >&2
    exit 1
  fi
  if [ $SECONDS -ge $deadline ]; then
    echo "interop: broker not ready after 60 s; its output:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "interop: broker pid $broker_pid ready (namesrv 127.0.0.1:$NAMESRV_PORT," \
  "broker 127.0.0.1:$BROKER_PORT, store $STORE)" >&2

export URINGMQ_NAMESRV="127.0.0.1:$NAMESRV_PORT"
export URINGMQ_BROKER="127.0.0.1:$BROKER_PORT"
export URINGMQ_BROKER_BIN="$broker_bin"
export URINGMQ_CONF="$CONF"
export URINGMQ_STORE="$STORE"
export URINGMQ_BROKER_PID="$broker_pid"
export URINGMQ_TMP="$tmp"

if [ ${#args[@]} -gt 0 ]; then
  files=("${args[@]}")
else
  files=("$here"/*.test.js)
fi
failed=()
for f in "${files[@]}"; do
  name=$(basename "$f")
  echo "==== $name" >&2
  start=$SECONDS
  if timeout --kill-after=10 600 node --test --test-reporter=spec "$f"; then
    echo "==== $name passed ($((SECONDS - start)) s)" >&2
  else
    echo "==== $name FAILED ($((SECONDS - start)) s)" >&2
    failed+=("$name")
  fi
  if ! kill -0 "$broker_pid" 2>/dev/null; then
    echo "interop: the shared broker died during $name; its output:" >&2
    tail -n 100 "$log" >&2
    broker_pid=""
    failed+=("shared broker died")
    break
  fi
done

if [ -n "$broker_pid" ]; then
  kill -TERM "$broker_pid"
  status=0
  for _ in $(seq 1 300); do
    kill -0 "$broker_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$broker_pid" 2>/dev/null; then
    echo "interop: broker still running 30 s after SIGTERM" >&2
    failed+=("SIGTERM stop")
  else
    wait "$broker_pid" || status=$?
    broker_pid=""
    if [ "$status" -ne 0 ]; then
      echo "interop: broker exited with status $status after SIGTERM; last output:" >&2
      tail -n 50 "$log" >&2
      failed+=("SIGTERM exit status $status")
    fi
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "interop: FAILED: ${failed[*]} (broker logs under $tmp;" \
    "set URINGMQ_INTEROP_KEEP=1 to keep them)" >&2
  exit 1
fi
echo "interop: all passed" >&2
