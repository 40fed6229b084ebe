#!/usr/bin/env bash
# The main job on an embedded default: builds Release into build/ and runs the embedded demo on
# ./data with the default configuration (stores messages durably, reads them back, prints what
# it did). Idempotent: a second run recovers the store the first one left and appends to it.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DURINGMQ_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)" --target uringmq-demo
exec build/tools/uringmq-demo --data ./data "$@"
