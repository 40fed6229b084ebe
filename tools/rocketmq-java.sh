#!/usr/bin/env bash
# Runs the pieces of a RocketMQ 4.9.8 Java distribution that the tests and benchmarks use: the
# NameServer, the broker, mqadmin, the benchmark tools, and the class path for programs built
# against the client. The distribution is what tools/find-rocketmq-java.sh finds, of either kind:
#   - Apache's binary distribution: the folder rocketmq-all-4.9.8-bin-release.zip unpacks to
#     (lib/*.jar holds the client, NameServer, broker, tools and every library they need; conf/
#     the logback and ACL files), named by URINGMQ_ROCKETMQ_JAVA;
#   - a folder with an env.sh that sets RMQ_CP (its class path) and ROCKETMQ_HOME, such as a
#     rocketmq-java folder beside the checkout.
# Usage:
#   rocketmq-java.sh home                 the folder found
#   rocketmq-java.sh classpath            the class path (client, broker, tools and libraries)
#   rocketmq-java.sh conf                 the conf folder (logback_*.xml, plain_acl.yml)
#   rocketmq-java.sh java ARGS            java with the options Java 17 needs, on the class path
#                                         (after $RMQ_CP_PREFIX when set: the caller's classes)
#   rocketmq-java.sh namesrv PORT DIR     a NameServer in the foreground (exec), logs under DIR
#   rocketmq-java.sh broker CONF [DIR]    a broker in the foreground (exec), logs under DIR
#   rocketmq-java.sh mqadmin ARGS         the admin tool
#   rocketmq-java.sh benchmark CLASS ARGS RocketMQ's benchmark Producer, Consumer, ...
# Exits 3 with a line saying what is missing when no distribution is found (JAVA: the java
# binary, default java).
# Env: NAMESRV_HEAP (default "-Xms512m -Xmx512m -Xmn256m"), BROKER_HEAP (default
# "-Xms1g -Xmx1g"), BROKER_DIRECT (-XX:MaxDirectMemorySize, default 1g), BROKER_PRETOUCH (1:
# -XX:+AlwaysPreTouch as Apache's runbroker.sh; 0 leaves it out), BENCH_HEAP (default
# "-Xms1g -Xmx1g"), ROCKETMQ_HOME (where the broker reads conf/; default the distribution's),
# MQADMIN_LOG_DIR, BENCH_LOG_DIR (tool logs), JAVA_OPT_EXT (extra options).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
home=$("$here/find-rocketmq-java.sh") || {
  echo "rocketmq-java.sh: no RocketMQ 4.9.8 Java distribution found: set" \
    "URINGMQ_ROCKETMQ_JAVA to the folder rocketmq-all-4.9.8-bin-release.zip unpacks to" >&2
  exit 3
}
JAVA=${JAVA:-java}
if [[ -f $home/env.sh ]]; then
  # shellcheck source=/dev/null
  source "$home/env.sh" || { echo "rocketmq-java.sh: $home/env.sh failed" >&2; exit 3; }
else
  export ROCKETMQ_HOME=${ROCKETMQ_HOME:-$home}
  RMQ_CP=$home/conf
  for jar in "$home"/lib/*.jar; do RMQ_CP=$RMQ_CP:$jar; done
fi
# Java 17: the store casts to sun.nio.ch.DirectBuffer and reflects into DirectByteBuffer's
# cleaner; remoting's permissive TLS makes a self-signed certificate through sun.security.x509.
jdk17_opts=(--add-exports java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.nio=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-exports java.base/sun.security.x509=ALL-UNNAMED)
# The G1 options of Apache's runbroker.sh / runserver.sh for Java 9 and later (no GC log file).
gc_opts=(-XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25
  -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0
  -XX:-OmitStackTraceInFastThrow -XX:-UseLargePages)
# shellcheck disable=SC2206  # the *_HEAP and JAVA_OPT_EXT values are option lists
ext=(${JAVA_OPT_EXT:-})

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case "$cmd" in
  home) echo "$home" ;;
  classpath) echo "$RMQ_CP" ;;
  conf) echo "$ROCKETMQ_HOME/conf" ;;
  java)
    exec "$JAVA" "${jdk17_opts[@]}" "${ext[@]}" -cp "${RMQ_CP_PREFIX:+$RMQ_CP_PREFIX:}$RMQ_CP" "$@"
    ;;
  namesrv)
    port=${1:?usage: rocketmq-java.sh namesrv PORT DIR}
    dir=${2:?usage: rocketmq-java.sh namesrv PORT DIR}
    mkdir -p "$dir"
    printf 'listenPort=%s\n' "$port" > "$dir/namesrv.properties"
    # shellcheck disable=SC2206
    heap=(${NAMESRV_HEAP:--Xms512m -Xmx512m -Xmn256m})
    # logback writes under ${user.home}/logs/rocketmqlogs: user.home is the run folder.
    exec "$JAVA" -server "${heap[@]}" -XX:MetaspaceSize=128m -XX:MaxMetaspaceSize=320m \
      "${gc_opts[@]}" "${jdk17_opts[@]}" -Duser.home="$dir" "${ext[@]}" -cp "$RMQ_CP" \
      org.apache.rocketmq.namesrv.NamesrvStartup -c "$dir/namesrv.properties"
    ;;
  broker)
    conf=${1:?usage: rocketmq-java.sh broker CONF [DIR]}
    conf=$(cd "$(dirname "$conf")" && pwd)/$(basename "$conf")
    dir=${2:-$(dirname "$conf")}
    mkdir -p "$dir"
    # shellcheck disable=SC2206
    heap=(${BROKER_HEAP:--Xms1g -Xmx1g})
    pretouch=()
    [[ ${BROKER_PRETOUCH:-1} == 1 ]] && pretouch=(-XX:+AlwaysPreTouch)
    exec "$JAVA" -server "${heap[@]}" "${gc_opts[@]}" "${pretouch[@]}" \
      -XX:MaxDirectMemorySize="${BROKER_DIRECT:-1g}" "${jdk17_opts[@]}" -Duser.home="$dir" \
      "${ext[@]}" -cp "$RMQ_CP" org.apache.rocketmq.broker.BrokerStartup -c "$conf"
    ;;
  mqadmin)
    logdir=${MQADMIN_LOG_DIR:-/tmp/rocketmq-mqadmin}
    mkdir -p "$logdir"
    exec "$JAVA" -Xms256m -Xmx256m -XX:+UseSerialGC "${jdk17_opts[@]}" -Duser.home="$logdir" \
      -Drocketmq.client.logRoot="$logdir/logs/rocketmqlogs" "${ext[@]}" -cp "$RMQ_CP" \
      org.apache.rocketmq.tools.command.MQAdminStartup "$@"
    ;;
  benchmark)
    cls=${1:?usage: rocketmq-java.sh benchmark Producer|Consumer|BatchProducer|... ARGS}
    shift
    logdir=${BENCH_LOG_DIR:-/tmp/rocketmq-benchmark}
    mkdir -p "$logdir"
    # shellcheck disable=SC2206
    heap=(${BENCH_HEAP:--Xms1g -Xmx1g})
    exec "$JAVA" -server "${heap[@]}" -XX:+UseG1GC "${jdk17_opts[@]}" -Duser.home="$logdir" \
      -Drocketmq.client.logRoot="$logdir/logs/rocketmqlogs" "${ext[@]}" -cp "$RMQ_CP" \
      "org.apache.rocketmq.example.benchmark.$cls" "$@"
    ;;
  *)
    echo "usage: rocketmq-java.sh home|classpath|conf|java|namesrv|broker|mqadmin|benchmark ..." >&2
    exit 2
    ;;
esac
