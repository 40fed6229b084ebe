#!/usr/bin/env bash
# The Java tests accept Apache RocketMQ 4.9.8's binary distribution as well as a folder with an
# env.sh: this test lays out such a distribution (the folder rocketmq-all-4.9.8-bin-release.zip
# unpacks to: lib/ with every jar of the client, NameServer, broker, tools and their libraries,
# conf/ with the logback and ACL files; no env.sh, no scripts of ours) from the jars of the
# distribution found here, and runs through URINGMQ_ROCKETMQ_JAVA=<that folder>:
#   1. tools/find-rocketmq-java.sh finds it, and the class path is its lib/;
#   2. the official client against uringmq-broker (tests/interop/java/run.sh,
#      DeliveredPropertiesCheck);
#   3. a Java NameServer, a Java broker and uringmq-ctl against them (tools/ctl_java_test.sh);
#   4. URINGMQ_ROCKETMQ_JAVA naming a folder that is no distribution: a Java test reports
#      Skipped (77) with a line naming the variable, never Passed.
# Where the found distribution already is Apache's layout, it is used as it is. Without any
# distribution, or without javac, this test is Skipped too (77).
# Usage: tests/java_distribution_test.sh <uringmq-broker> <uringmq-ctl> <work dir>
set -euo pipefail
broker_bin=$(realpath "$1")
ctl_bin=$(realpath "$2")
work=$3
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=support/java_lib.sh
source "$repo/tests/support/java_lib.sh"
java_or_skip java_distribution_test
rm -rf "$work" && mkdir -p "$work/empty"
work=$(cd "$work" && pwd)
fail() { echo "java_distribution_test: FAILED: $*"; exit 1; }

found=$("$repo/tools/find-rocketmq-java.sh")
dist=$found
if [ -f "$found/env.sh" ]; then
  dist=$work/rocketmq-all-4.9.8-bin-release
  mkdir -p "$dist/lib" "$dist/conf"
  IFS=: read -r -a entries <<<"$RMQ_CP"
  for entry in "${entries[@]}"; do
    if [ -f "$entry" ]; then ln -s "$entry" "$dist/lib/$(basename "$entry")"; fi
  done
  cp -r "$("$repo/tools/rocketmq-java.sh" conf)"/. "$dist/conf/"
fi
echo "== the distribution: $dist ($(find "$dist/lib" -name '*.jar' | wc -l) jars in lib/)"

export URINGMQ_ROCKETMQ_JAVA=$dist
[ "$("$repo/tools/find-rocketmq-java.sh")" = "$dist" ] ||
  fail "find-rocketmq-java.sh did not find it"
cp=$("$repo/tools/rocketmq-java.sh" classpath)
[[ $cp == "$dist/conf:$dist/lib/"* ]] || fail "the class path is not its lib/: $cp"
[[ $cp != *"$found/"* ]] || [ "$found" = "$dist" ] || fail "the class path names $found: $cp"

echo "== the official client against uringmq-broker"
rc=0
"$repo/tests/interop/java/run.sh" "$broker_bin" "$work/client" DeliveredPropertiesCheck || rc=$?
[ "$rc" -eq 0 ] || fail "the client check exited $rc"

echo "== a Java NameServer and broker, and uringmq-ctl against them"
rc=0
"$repo/tools/ctl_java_test.sh" "$ctl_bin" || rc=$?
[ "$rc" -eq 0 ] || fail "ctl_java_test.sh exited $rc"

echo "== URINGMQ_ROCKETMQ_JAVA naming no distribution"
rc=0
URINGMQ_ROCKETMQ_JAVA=$work/empty "$repo/tests/interop/java/run.sh" "$broker_bin" \
  "$work/skip" DeliveredPropertiesCheck > "$work/skip.out" 2>&1 || rc=$?
cat "$work/skip.out"
[ "$rc" -eq 77 ] || fail "a Java test without a distribution exited $rc, not 77 (Skipped)"
grep -q "SKIPPED.*URINGMQ_ROCKETMQ_JAVA" "$work/skip.out" || fail "the skip line names no variable"
echo "java_distribution_test: OK"
