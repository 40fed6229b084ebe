#!/usr/bin/env bash
# Prints the folder of a RocketMQ 4.9.8 Java distribution (the official client, NameServer,
# broker and tools) for the tests and benchmarks that use them (tools/rocketmq-java.sh runs
# them). Two kinds are accepted:
#   - Apache's binary distribution, the folder rocketmq-all-4.9.8-bin-release.zip unpacks to:
#     lib/ holds rocketmq-client-*.jar, rocketmq-namesrv-*.jar, rocketmq-broker-*.jar,
#     rocketmq-tools-*.jar and every library they need;
#   - a folder with an env.sh that sets the class path (RMQ_CP) and ROCKETMQ_HOME.
# Where: $URINGMQ_ROCKETMQ_JAVA when set (and then only there), else the first folder named
# rocketmq-java or rocketmq-all-4.9.8-bin-release beside the checkout, or one level further
# (<checkout>/../NAME, <checkout>/../*/NAME). Exit 1 when none; with -v, says why on stderr.
set -euo pipefail
verbose=0
[[ ${1:-} == -v ]] && verbose=1

# A folder is a distribution when it has an env.sh, or the jars of each piece in lib/.
is_distribution() {
  [[ -f $1/env.sh ]] && return 0
  local piece
  for piece in client namesrv broker tools remoting store common; do
    compgen -G "$1/lib/rocketmq-$piece-*.jar" >/dev/null || return 1
  done
}

if [[ -n ${URINGMQ_ROCKETMQ_JAVA:-} ]]; then
  if is_distribution "$URINGMQ_ROCKETMQ_JAVA"; then
    (cd "$URINGMQ_ROCKETMQ_JAVA" && pwd)
    exit 0
  fi
  [[ $verbose == 0 ]] || echo "URINGMQ_ROCKETMQ_JAVA=$URINGMQ_ROCKETMQ_JAVA has neither an" \
    "env.sh nor lib/rocketmq-{client,namesrv,broker,tools,...}-*.jar" >&2
  exit 1
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
for candidate in "$repo"/../rocketmq-java "$repo"/../rocketmq-all-4.9.8-bin-release \
  "$repo"/../*/rocketmq-java "$repo"/../*/rocketmq-all-4.9.8-bin-release; do
  if [[ -d $candidate ]] && is_distribution "$candidate"; then
    (cd "$candidate" && pwd)
    exit 0
  fi
done
[[ $verbose == 0 ]] || echo "no RocketMQ 4.9.8 Java distribution: URINGMQ_ROCKETMQ_JAVA is not" \
  "set and none lies beside the checkout" >&2
exit 1
