#!/usr/bin/env bash
# The broker's gRPC endpoint against the official RocketMQ 5 Node.js client
# (rocketmq-client-nodejs 1.0.8): client_test.js starts uringmq-broker with a gRPC port and runs
# the producer's cases (sends read back through remoting, routes, delayed and recalled
# messages, transactions with a check over Telemetry).
#
#   tests/grpc/client_test.sh <uringmq-broker> [work-dir] [script.js]
#
# A third argument runs that script of this folder instead (consumer_test.js: POP consumption).
#
# Exits 77 (skipped) when node or npm is missing (tools/install-deps.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
for tool in node npm; do
  command -v "$tool" >/dev/null ||
    { echo "grpc_client: $tool is not installed (tools/install-deps.sh): skipped"; exit 77; }
done
export URINGMQ_BROKER_BIN=$1

cd "$here"
# Serialised with the conformance test: both install into tests/grpc/node_modules.
exec 9>"$here/.npm-ci.lock"
flock 9
if [ ! -d node_modules/rocketmq-client-nodejs ] ||
   [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "grpc_client: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
flock -u 9

if [ $# -ge 2 ]; then
  work=$2
  rm -rf "$work"
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/uringmq-grpc-client.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
exec node "${3:-client_test.js}" "$work"
