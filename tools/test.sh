#!/usr/bin/env bash
# Builds uringmq and runs every test three ways, ending with one overall summary line
# "N passed, N failed, N skipped" over the lint and all the CTest runs (Skipped: a test that
# could not run for want of an outside piece, such as the RocketMQ Java distribution; the line
# before the summary names those and how to provide them):
#   0. lint: tools/lint.sh (function and class size, columns, clang-format, commits), one test;
#   1. build-test: the normal build (RelWithDebInfo, benchmarks too), every test incl. interop;
#   2. build-asan: ASan + UBSan, the whole suite but the tests tools/sanitize.sh names;
#   3. build-tsan: TSan, the cross-shard and reactor tests (tools/sanitize.sh).
# Every run happens even if an earlier one failed; the exit status is non-zero if any test
# failed, any build failed, or a run's summary is missing. SANITIZE=0 runs the normal build only.
# Idempotent: installs what is missing, reuses the build directories between runs.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
jobs=$(nproc)
export JOBS=$jobs
failed_runs=0

# (set -e does not apply inside `( ... ) || ...`, hence the && chain.)
normal() {
  cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DURINGMQ_BUILD_BENCH=ON &&
    cmake --build build-test -j"$jobs" &&
    cd build-test &&
    ctest --output-on-failure -j"$jobs" --timeout 900 2>&1 | tee ctest.log
}

# Runs one stage in a subshell; a failing stage is counted, never stops the others.
stage() {
  local name=$1
  shift
  echo "==== tools/test.sh: $name ===="
  rm -f "$name/ctest.log"
  local start=$SECONDS
  ( "$@" ) || failed_runs=$((failed_runs + 1))
  echo "==== tools/test.sh: $name took $((SECONDS - start)) s ===="
  disk_report
}

# The disk the builds and the tests' stores take, and what is left: a run that fills the disk
# fails in ways that name other causes (a Java broker refuses sends, a compiler cannot write).
disk_report() {
  echo "tools/test.sh: disk: $(du -sh build-* 2>/dev/null | awk '{printf "%s %s, ", $2, $1}')" \
    "$(df -h --output=avail . | tail -1 | tr -d ' ') left"
}

disk_report
echo "==== tools/test.sh: lint ===="
lint_failed=0
tools/lint.sh || lint_failed=1

stage build-test normal
if [ "${SANITIZE:-1}" != 0 ]; then
  stage build-asan tools/sanitize.sh asan
  stage build-tsan tools/sanitize.sh tsan
  dirs=(build-test build-asan build-tsan)
else
  dirs=(build-test)
fi

# CTest's summary: "100% tests passed, 0 tests failed out of 42", where the total counts the
# skipped tests as passed; they are listed after "The following tests did not run:" as
# "<n> - <name> (Skipped)".
passed=$((1 - lint_failed))
failed=$lint_failed
skipped=0
skipped_names=()
[ "$lint_failed" -eq 0 ] || echo "tools/test.sh: lint failed (the list is under ==== lint ====)"
for d in "${dirs[@]}"; do
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$d/ctest.log" \
           2>/dev/null | tail -1 || true)
  if [ -z "$line" ]; then
    echo "tools/test.sh: no CTest summary from $d (build or configure failed)"
    failed_runs=$((failed_runs + 1))
    continue
  fi
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
  bad=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
  mapfile -t names < <(sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) \(Skipped\)$/\1/p' "$d/ctest.log")
  echo "$d: $line${names[0]:+ (${#names[@]} skipped)}"
  passed=$((passed + total - bad - ${#names[@]}))
  failed=$((failed + bad))
  skipped=$((skipped + ${#names[@]}))
  skipped_names+=("${names[@]}")
done
[ "$failed_runs" -eq 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))  # a build failure
if [ "$skipped" -gt 0 ]; then
  echo "tools/test.sh: skipped: $(printf '%s\n' "${skipped_names[@]}" | sort -u | tr '\n' ' ')"
  if ! tools/find-rocketmq-java.sh >/dev/null; then
    echo "tools/test.sh: the java_* and ctl_java tests need a RocketMQ 4.9.8 Java distribution:" \
      "unzip rocketmq-all-4.9.8-bin-release.zip and set" \
      "URINGMQ_ROCKETMQ_JAVA=<the unpacked folder> (README.md, Java tests)"
  fi
  if printf '%s\n' "${skipped_names[@]}" | grep -q '^faultfs_'; then
    echo "tools/test.sh: the faultfs_* tests need root, /dev/fuse and libfuse3-dev" \
      "(tests/faults/README.md)"
  fi
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$failed_runs" -eq 0 ]
