#!/usr/bin/env bash
# Builds uringmq and runs every test (unit, sim, crash), ending with CTest's summary.
# Idempotent: installs what is missing, reuses build-test/ between runs.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
jobs=$(nproc)
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DURINGMQ_BUILD_BENCH=ON
cmake --build build-test -j"$jobs"
cd build-test
ctest --output-on-failure -j"$jobs" --timeout 900
