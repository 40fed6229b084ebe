#!/usr/bin/env bash
# The main job on an embedded default: builds Release into build/, starts uringmq-broker on
# ./data with the default configuration (tools/broker.conf, store under ./data, NameServer on
# 127.0.0.1:9876, broker on 127.0.0.1:10911), shows a plain and a delayed message going through
# it with uringmq-ctl, and then keeps serving in the foreground until Ctrl-C / SIGTERM (a clean
# stop). Idempotent: a second run recovers the store the first one left and appends to it.
#   tools/run.sh              demo, then serve
#   tools/run.sh --demo-only  demo, then stop the broker and exit
#   tools/run.sh --no-demo    serve only
set -euo pipefail
cd "$(dirname "$0")/.."

mode=demo-serve
case "${1:-}" in
  --demo-only) mode=demo-only ;;
  --no-demo) mode=serve ;;
  "") ;;
  *) echo "usage: tools/run.sh [--demo-only|--no-demo]" >&2; exit 2 ;;
esac

tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DURINGMQ_BUILD_TESTS=OFF -DURINGMQ_BUILD_BENCH=OFF
cmake --build build -j"$(nproc)" --target uringmq-broker uringmq-ctl

mkdir -p data
# The shipped example with the store moved to ./data.
sed -e 's|^storePathRootDir=.*|storePathRootDir=./data|' tools/broker.conf > data/broker.conf
if [[ $mode == serve ]]; then
  exec build/tools/uringmq-broker -c data/broker.conf
fi

build/tools/uringmq-broker -c data/broker.conf &
broker=$!
trap 'kill -TERM $broker 2>/dev/null || true' INT TERM
for _ in $(seq 1 600); do
  if (exec 3<>/dev/tcp/127.0.0.1/10911) 2>/dev/null; then break; fi
  if ! kill -0 $broker 2>/dev/null; then echo "run.sh: the broker did not start" >&2; exit 1; fi
  sleep 0.1
done

ctl=build/tools/uringmq-ctl
stamp=$(date +%s)
echo "== produce a plain message and one with delay level 2 (5 s) to topic Demo, queue 0"
$ctl produce --topic Demo --queue 0 --tag plain "hello $stamp"
$ctl produce --topic Demo --queue 0 --tag delayed --delay-level 2 "delayed hello $stamp"
echo "== consume group DemoGroup from its committed offset (the delayed one arrives ~5 s later)"
$ctl consume --topic Demo --group DemoGroup --queue 0 --from committed --max 2 --wait-ms 8000 \
  --commit
sleep 0.5
$ctl consume --topic Demo --group DemoGroup --queue 0 --from committed --max 1 --wait-ms 8000 \
  --commit
echo "== broker figures"
$ctl stats --topic Demo | head -20

if [[ $mode == demo-only ]]; then
  kill -TERM $broker
  wait $broker
  exit $?
fi
echo "== serving on 127.0.0.1:9876 (NameServer) and 127.0.0.1:10911 (broker); Ctrl-C stops"
wait $broker
