# Sourced by the tests that run the RocketMQ 4.9.8 Java pieces (the caller sets repo, the
# checkout). java_or_skip NAME sets rmq_java (tools/rocketmq-java.sh: namesrv, broker, mqadmin,
# benchmark), RMQ_CP (the class path for programs built against the client), ROCKETMQ_HOME and
# JAVA; where no distribution is found (tools/find-rocketmq-java.sh) or javac is missing, it
# prints "NAME: SKIPPED (why)" and exits 77, which CTest reports as Skipped (SKIP_RETURN_CODE
# 77). A distribution that is found but does not work is a failure, not a skip.
java_or_skip() {
  local why
  rmq_java=$repo/tools/rocketmq-java.sh
  if ! why=$("$repo/tools/find-rocketmq-java.sh" -v 2>&1 >/dev/null); then
    echo "$1: SKIPPED ($why; see README.md, Java tests)"
    exit 77
  fi
  if ! command -v javac >/dev/null 2>&1; then
    echo "$1: SKIPPED (no javac: tools/install-deps.sh installs openjdk-17-jdk-headless)"
    exit 77
  fi
  RMQ_CP=$("$rmq_java" classpath) ||
    { echo "$1: FAILED (the Java distribution's class path)"; exit 1; }
  # Where Java programs that run RocketMQ's tools in-process (MQAdminStartup) read conf/.
  ROCKETMQ_HOME=${ROCKETMQ_HOME:-$(dirname "$("$rmq_java" conf)")}
  export ROCKETMQ_HOME
  JAVA=${JAVA:-java}
  # A Java broker refuses every send once its disk is 90% full and deletes CommitLog files early
  # from 85% (the system properties below, read by its store). The tests are not about a full
  # disk, and a CI machine's shared disk can be that full before they start: both are raised for
  # every JVM these tests start (tools/rocketmq-java.sh passes JAVA_OPT_EXT).
  JAVA_OPT_EXT="${JAVA_OPT_EXT:-} $java_disk_ratios"
  export JAVA_OPT_EXT
}

# The Java broker's disk thresholds for the tests (java_or_skip; campaign_run.py passes the same).
java_disk_ratios="-Drocketmq.broker.diskSpaceWarningLevelRatio=0.99 \
-Drocketmq.broker.diskSpaceCleanForciblyRatio=0.99"
