#!/usr/bin/env bash
# uringmq-net-bench signs as RocketMQ's AclClientRPCHook does: against a broker with
# aclEnable=true, a second of signed sends (--acl-access-key/--acl-secret-key) is answered with
# no error, and the same load with a wrong secret gets only errors (the broker checks); the
# other requests it signs, END_TRANSACTION and PULL_MESSAGE (--transactional 1 --consume 1, an
# admin account), are answered with no error too.
# Usage: tests/net_bench_acl_test.sh <uringmq-broker> <uringmq-net-bench> <work dir>
set -euo pipefail
broker=$1 bench=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
# shellcheck source=tests/net_bench_lib.sh
source "$here/net_bench_lib.sh"
cp "$here/../bench/plain_acl.yml" "$work/plain_acl.yml"
start_broker "$broker" "$work" aclEnable=true
load() {  # load SECRET [ACCESS_KEY ARGS...]: a second of signed sends, the JSON report on stdout
  "$bench" --protocol remoting --port "$port" --connections 2 --pipeline 8 --seconds 1 \
    --warmup-seconds 0.2 --json --acl-secret-key "$1" --acl-access-key "${2:-benchProducer}" \
    "${@:3}"
}
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
good=$(load benchProducerSecret)
echo "right secret: $good"
if [ "$(field "$good" errors)" != 0 ] || [ "$(field "$good" messages)" = 0 ]; then
  echo "FAIL: signed sends were refused or none were answered"
  exit 1
fi
bad=$(load wrongSecret || true)
echo "wrong secret: $bad"
if [ "$(field "$bad" messages)" != 0 ] || [ "$(field "$bad" errors)" = 0 ]; then
  echo "FAIL: sends signed with a wrong secret were accepted"
  exit 1
fi
txn=$(load benchAdminSecret benchAdmin --transactional 1 --consume 1)
echo "transactional, consumed: $txn"
if [ "$(field "$txn" errors)" != 0 ] || [ "$(field "$txn" messages)" = 0 ] ||
  [ "$(field "$txn" msgs_per_pull)" = 0.0 ]; then
  echo "FAIL: signed commits or pulls were refused"
  exit 1
fi
echo "PASS"
