#!/usr/bin/env bash
# The main job on an embedded default: builds Release into build/, starts uringmq-broker on
# ./data with the default configuration (tools/broker.conf, store under ./data, NameServer on
# 127.0.0.1:9876, broker on 127.0.0.1:10911), shows a plain and a delayed message going through
# it with uringmq-ctl, and then keeps serving in the foreground until Ctrl-C / SIGTERM (a clean
# stop; the exit status is the broker's, 0 when it stopped cleanly). Idempotent: a second run
# recovers the store the first one left and appends to it.
#   tools/run.sh              demo, then serve
#   tools/run.sh --demo-only  demo, then stop the broker and exit (0 when all went through)
#   tools/run.sh --no-demo    serve only
# Env (for tests and for a second instance beside the first):
#   URINGMQ_RUN_BUILD         an existing build folder (holding tools/uringmq-broker and
#                             tools/uringmq-ctl): nothing is installed or built
#   URINGMQ_RUN_DATA          the data folder (default ./data): the store and its broker.conf
#   URINGMQ_RUN_PORT          the broker's listenPort (default 10911)
#   URINGMQ_RUN_NAMESRV_PORT  the built-in NameServer's port (default 9876)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=demo-serve
case "${1:-}" in
  --demo-only) mode=demo-only ;;
  --no-demo) mode=serve ;;
  "") ;;
  *) echo "usage: tools/run.sh [--demo-only|--no-demo]" >&2; exit 2 ;;
esac

build=${URINGMQ_RUN_BUILD:-}
if [[ -z $build ]]; then
  build=build
  tools/install-deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DURINGMQ_BUILD_TESTS=OFF -DURINGMQ_BUILD_BENCH=OFF
  cmake --build build -j"$(nproc)" --target uringmq-broker uringmq-ctl
fi
broker_bin=$build/tools/uringmq-broker
ctl_bin=$build/tools/uringmq-ctl
for b in "$broker_bin" "$ctl_bin"; do
  [[ -x $b ]] || { echo "run.sh: $b is missing (URINGMQ_RUN_BUILD=$build)" >&2; exit 1; }
done

data=${URINGMQ_RUN_DATA:-./data}
port=${URINGMQ_RUN_PORT:-10911}
ns_port=${URINGMQ_RUN_NAMESRV_PORT:-9876}
mkdir -p "$data"
# The shipped example with the store moved to the data folder (and the ports, when set).
sed -e "s|^storePathRootDir=.*|storePathRootDir=$data|" -e "s|^listenPort=.*|listenPort=$port|" \
  -e "s|^namesrvListenPort=.*|namesrvListenPort=$ns_port|" tools/broker.conf > "$data/broker.conf"
if [[ $mode == serve ]]; then
  exec "$broker_bin" -c "$data/broker.conf"
fi

"$broker_bin" -c "$data/broker.conf" &
broker=$!
# Stops the broker (SIGTERM: a clean stop) and waits for it; its status becomes ours.
stop_broker() {
  trap - INT TERM EXIT
  kill -TERM "$broker" 2>/dev/null || true
  local rc=0
  wait "$broker" || rc=$?
  exit "$rc"
}
# A failure of the demo (set -e) must not leave the broker running without its parent.
on_exit() {
  local rc=$?
  trap - INT TERM EXIT
  kill -TERM "$broker" 2>/dev/null || true
  wait "$broker" 2>/dev/null || true
  exit "$rc"
}
trap stop_broker INT TERM
trap on_exit EXIT
for _ in $(seq 1 600); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  if ! kill -0 "$broker" 2>/dev/null; then echo "run.sh: the broker did not start" >&2; exit 1; fi
  sleep 0.1
done

ctl() { "$ctl_bin" "$1" --addr "127.0.0.1:$port" "${@:2}"; }
stamp=$(date +%s)
echo "== produce a plain message and one with delay level 2 (5 s) to topic Demo, queue 0"
ctl produce --topic Demo --queue 0 --tag plain "hello $stamp"
ctl produce --topic Demo --queue 0 --tag delayed --delay-level 2 "delayed hello $stamp"
echo "== consume group DemoGroup from its committed offset (the delayed one arrives ~5 s later)"
consumed=$(ctl consume --topic Demo --group DemoGroup --queue 0 --from committed --max 2 \
  --wait-ms 8000 --commit)
printf '%s\n' "$consumed"
# The long poll may answer with the plain one alone; then the delayed one comes in a second.
if [[ $(grep -c '^queue=' <<<"$consumed") -lt 2 ]]; then
  ctl consume --topic Demo --group DemoGroup --queue 0 --from committed --max 1 --wait-ms 8000 \
    --commit
fi
echo "== a few broker figures (all of them: uringmq-ctl stats --topic Demo)"
# Captured whole, then filtered: a reader that stops early (head) would stop this script.
stats=$(ctl stats --topic Demo)
grep -E '^(shardCount|commitLogMaxOffset|msgPutTotalTodayNow|msgGetTotalTodayNow) ' \
  <<<"$stats" || true
grep -E '^delayLevel\.2\.(delivered|pending) ' <<<"$stats" || true
sed -n '/^queue /,/^0 /p' <<<"$stats"

if [[ $mode == demo-only ]]; then
  stop_broker
fi
echo "== serving on 127.0.0.1:$ns_port (NameServer) and 127.0.0.1:$port (broker); Ctrl-C stops"
# A signal's trap (stop_broker) exits from inside this wait; past it, the broker ended itself.
rc=0
wait "$broker" || rc=$?
trap - EXIT
exit "$rc"
