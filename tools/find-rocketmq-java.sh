#!/usr/bin/env bash
# Prints the folder of a RocketMQ 4.9.8 Java distribution (the official client, NameServer,
# broker and tools, with an env.sh that sets their class path) for the tests that use the Java
# client: $URINGMQ_ROCKETMQ_JAVA when set, else the first folder named rocketmq-java that sits
# directly in a folder beside the checkout (<checkout>/../*/rocketmq-java). Exit 1 when none.
set -euo pipefail
if [ -n "${URINGMQ_ROCKETMQ_JAVA:-}" ]; then
  [ -f "$URINGMQ_ROCKETMQ_JAVA/env.sh" ] || exit 1
  echo "$URINGMQ_ROCKETMQ_JAVA"
  exit 0
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
for candidate in "$repo"/../rocketmq-java "$repo"/../*/rocketmq-java; do
  if [ -f "$candidate/env.sh" ]; then
    (cd "$candidate" && pwd)
    exit 0
  fi
done
exit 1
