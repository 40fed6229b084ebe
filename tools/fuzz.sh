#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cc) with clang into build-fuzz and runs each for
# $FUZZ_SECONDS (default 600) on a working copy of its seed corpus (fuzz/corpus/<name>/, the
# target name without "_fuzz"). Prints per target: executions and crashes found.
# Usage: tools/fuzz.sh [target ...]     (default: every target)
# Env:   FUZZ_SECONDS, FUZZ_JOBS (build parallelism, default 2), FUZZ_WORK (default
#        build-fuzz/work: corpora grown by the run, crash artifacts, logs).
# Exit status: 0 when no target crashed, 1 otherwise.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-fuzz"
seconds="${FUZZ_SECONDS:-600}"
jobs="${FUZZ_JOBS:-2}"
work="${FUZZ_WORK:-$build/work}"
sanitizers="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"

cmake -S "$repo" -B "$build" -DURINGMQ_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_COMPILER=clang -DURINGMQ_BUILD_TESTS=OFF -DURINGMQ_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS=$sanitizers" >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in "$repo"/fuzz/*_fuzz.cc; do targets+=("$(basename "$source" .cc)"); done
fi
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

failed=0
printf '%-28s %12s %10s %8s\n' target executions exec/s crashes
for target in "${targets[@]}"; do
  name="${target%_fuzz}"
  corpus="$work/$target/corpus"
  artifacts="$work/$target/artifacts"
  log="$work/$target/fuzz.log"
  rm -rf "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  if [ -d "$repo/fuzz/corpus/$name" ]; then cp -n "$repo/fuzz/corpus/$name"/* "$corpus"/ || true; fi
  status=0
  "$build/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  crashes="$(find "$artifacts" -type f | wc -l)"
  printf '%-28s %12s %10s %8s\n' "$target" "${execs:-?}" "${rate:-?}" "$crashes"
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    echo "  $target: exit status $status; log $log; artifacts in $artifacts" >&2
    grep -m 5 -E 'ERROR|Assertion|runtime error|assert' "$log" >&2 || true
  fi
done
exit "$failed"
