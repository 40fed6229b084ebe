#!/usr/bin/env bash
# net/grpc/proto against the official RocketMQ 5 Node.js client (rocketmq-client-nodejs 1.0.8).
#
#   tests/grpc/proto_conformance_test.sh [work-dir]
#
# conformance.js builds one populated instance of every request and response of MessagingService
# (every field non-default, every oneof alternative once) with the client's generated classes
# and serialises it. Each is then decoded by protoc against our .proto: protoc must see no
# unknown field (it prints those as bare field numbers) and its text must hold exactly the
# client's values under the same names. The text is encoded again by protoc, and the client's
# classes must read those bytes back to the same message. Last, our declarations are compared
# with those of the .proto files the client ships (which catches what the bytes cannot tell
# apart: an int32 for an int64, an enum value's number). Exits 77 (skipped) when node, npm,
# protoc or the protobuf well-known types are missing (tools/install-deps.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
proto_dir=$(cd "$here/../../net/grpc/proto" && pwd)
for tool in node npm protoc; do
  command -v "$tool" >/dev/null ||
    { echo "grpc_proto: $tool is not installed (tools/install-deps.sh): skipped"; exit 77; }
done
probe=$(mktemp -d "${TMPDIR:-/tmp}/uringmq-grpc-proto-probe.XXXXXX")
printf 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n' >"$probe/p.proto"
if ! protoc -I "$probe" --descriptor_set_out=/dev/null p.proto 2>/dev/null; then
  rm -rf "$probe"
  echo "grpc_proto: protoc finds no google/protobuf/*.proto (libprotobuf-dev): skipped"
  exit 77
fi
rm -rf "$probe"

cd "$here"
# Serialised: several build trees may run this test at once on the same source tree.
exec 9>"$here/.npm-ci.lock"
flock 9
if [ ! -d node_modules/rocketmq-client-nodejs ] ||
   [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "grpc_proto: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
flock -u 9

if [ $# -ge 1 ]; then
  work=$1
  rm -rf "$work"
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/uringmq-grpc-proto.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

node conformance.js write "$work"
failed=0
for bin in "$work"/*.bin; do
  case=${bin%.bin}
  [[ $case == *.re ]] && continue
  type=apache.rocketmq.v2.$(cat "$case.type")
  if ! protoc -I "$proto_dir" --decode="$type" apache/rocketmq/v2/service.proto \
       <"$bin" >"$case.txt"; then
    echo "FAIL $(basename "$case"): protoc --decode=$type failed"
    failed=1
    continue
  fi
  # An unknown field is printed as its number ("7: 12" or "7 {"): our .proto lacks it.
  if grep -En '^ *[0-9]+( *:| *\{)' "$case.txt"; then
    echo "FAIL $(basename "$case"): fields unknown to net/grpc/proto (above)"
    failed=1
  fi
  protoc -I "$proto_dir" --encode="$type" apache/rocketmq/v2/service.proto \
    <"$case.txt" >"$case.re.bin"
done
[ "$failed" = 0 ] || exit 1
node conformance.js check "$work"

# The declarations themselves, against the .proto files the client ships (read here, never
# copied into the repository).
client_proto=node_modules/rocketmq-client-nodejs/proto
for side in ours:"$proto_dir" theirs:"$client_proto"; do
  protoc -I "${side#*:}" --descriptor_set_out="$work/${side%%:*}.pb" \
    apache/rocketmq/v2/definition.proto apache/rocketmq/v2/service.proto
  protoc --decode=google.protobuf.FileDescriptorSet google/protobuf/descriptor.proto \
    <"$work/${side%%:*}.pb" >"$work/${side%%:*}.txt"
done
node conformance.js descriptors "$work/ours.txt" "$work/theirs.txt"
echo "grpc_proto: PASS"
