#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cc) with clang into build-fuzz and runs each for
# $FUZZ_SECONDS (default 600) on a working copy of its seed corpus (fuzz/corpus/<name>/, the
# target name without "_fuzz"). Prints per target: seconds, executions, exec/s, crashes, the
# corpus size at the end and the coverage libFuzzer reached (cov: edges, ft: features).
# Usage: tools/fuzz.sh [target ...]     (default: every target)
# Env:   FUZZ_SECONDS, FUZZ_JOBS (build parallelism, default 2), FUZZ_PARALLEL (targets fuzzed
#        at once, default 1; each uses one core), FUZZ_NICE (nice level of the fuzzers, default
#        19), FUZZ_WORK (default build-fuzz/work: corpora grown by the run, crash artifacts,
#        logs; kept between runs, so a later run continues from the grown corpus).
# A crash input is left in $FUZZ_WORK/<target>/artifacts/; copy it into fuzz/corpus/<name>/ so
# the replay test (tests/unit/fuzz_replay/) reproduces it in every test run.
# Exit status: 0 when no target crashed, 1 otherwise.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-fuzz"
seconds="${FUZZ_SECONDS:-600}"
jobs="${FUZZ_JOBS:-2}"
parallel="${FUZZ_PARALLEL:-1}"
niceness="${FUZZ_NICE:-19}"
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

# Runs one target; writes its result line to $work/<target>/result and its status to .../status.
fuzz_one() {
  local target=$1
  local name="${target%_fuzz}"
  local dir="$work/$target"
  local corpus="$dir/corpus" artifacts="$dir/artifacts" log="$dir/fuzz.log"
  rm -rf "$artifacts" "$dir/result" "$dir/status"
  mkdir -p "$corpus" "$artifacts"
  if [ -d "$repo/fuzz/corpus/$name" ]; then cp -n "$repo/fuzz/corpus/$name"/* "$corpus"/ || true; fi
  local status=0 start=$SECONDS
  nice -n "$niceness" "$build/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
  local took=$((SECONDS - start))
  local execs rate crashes files cov
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  crashes="$(find "$artifacts" -type f | wc -l)"
  files="$(find "$corpus" -type f | wc -l)"
  # The last status line: "#1234<TAB>DONE cov: 754 ft: 2987 corp: 491/37Kb ...".
  cov="$(grep -E '^#[0-9]+[[:space:]]' "$log" | tail -1 |
         sed -nE 's/.*(cov: [0-9]+ ft: [0-9]+).*/\1/p' || true)"
  printf '%-28s %7s %12s %8s %8s %8s  %s\n' "$target" "$took" "${execs:-?}" "${rate:-?}" \
    "$crashes" "$files" "${cov:-?}" >"$dir/result"
  echo "$status $crashes" >"$dir/status"
}

printf '%-28s %7s %12s %8s %8s %8s  %s\n' target seconds executions exec/s crashes corpus \
  coverage
running=0
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=0
for target in "${targets[@]}"; do
  if [ ! -f "$work/$target/status" ]; then
    echo "$target: no result (the run script failed; see $work/$target/fuzz.log)"
    failed=1
    continue
  fi
  cat "$work/$target/result"
  read -r status crashes <"$work/$target/status"
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    echo "  $target: exit status $status; log $work/$target/fuzz.log;" \
      "artifacts in $work/$target/artifacts" >&2
    grep -m 5 -E 'ERROR|Assertion|runtime error|assert' "$work/$target/fuzz.log" >&2 || true
  fi
done
exit "$failed"
