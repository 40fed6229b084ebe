# Sourced by the cluster tests (tests/cluster/README.md): the RocketMQ Java distribution, and
# starting uringmq brokers, Java NameServers and Java brokers in the background. The caller sets
# repo, work and broker_bin, and keeps pidfiles (an array of pid files killed at exit).

# java_or_skip NAME: the Java distribution (rmq_java, RMQ_CP, JAVA), or a line
# "<name>: SKIPPED (...)" and exit 77 (CTest's Skipped) where it or javac is absent.
# shellcheck source=tests/support/java_lib.sh
source "$repo/tests/support/java_lib.sh"

cluster_kill_all() {
  for f in "${pidfiles[@]}"; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
}

# Starts the uringmq broker named $1 with conf $2 in the background and waits until its log
# says "uringmq-broker ready" $3 times; pid in $work/$1.pid, the epoch ms it was ready in
# $work/$1.ready.
start_uringmq() {
  local name=$1 conf=$2
  mkdir -p "$work/$name"
  "$broker_bin" -c "$conf" >> "$work/$name.log" 2>&1 &
  echo $! > "$work/$name.pid"
  for _ in $(seq 1 300); do
    [ "$(grep -c "uringmq-broker ready" "$work/$name.log")" -ge "$3" ] && break
    kill -0 "$(cat "$work/$name.pid")" 2>/dev/null || { tail -20 "$work/$name.log"; exit 1; }
    sleep 0.05
  done
  date +%s%3N > "$work/$name.ready"
}

# Starts a Java NameServer on each port given and waits until each listens.
start_java_namesrvs() {
  for p in "$@"; do
    NAMESRV_HEAP="-Xms128m -Xmx128m -Xmn64m" "$rmq_java" namesrv "$p" "$work/ns$p" \
      > "$work/ns$p.out" 2>&1 &
    echo $! > "$work/ns$p.pid"
    pidfiles+=("$work/ns$p.pid")
  done
  for p in "$@"; do
    for _ in $(seq 1 600); do
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break
      sleep 0.1
    done
  done
}

# Starts a Java 4.9.8 broker with conf $2 (small heap, no pre-touch), run dir $work/$1, output
# appended to $work/$1.out, pid in $work/$1.pid.
start_java_broker_conf() {
  local name=$1 conf=$2
  mkdir -p "$work/$name"
  BROKER_HEAP="-Xms256m -Xmx256m -Xmn128m" BROKER_DIRECT=256m BROKER_PRETOUCH=0 \
    "$rmq_java" broker "$conf" "$work/$name" >> "$work/$name.out" 2>&1 &
  echo $! > "$work/$name.pid"
  pidfiles+=("$work/$name.pid")
}

# Waits until the Java broker $1 printed "boot success" $2 times (default 1).
wait_java_boot() {
  local name=$1 times=${2:-1}
  for _ in $(seq 1 1200); do
    [ "$(grep -c "boot success" "$work/$name.out")" -ge "$times" ] && return 0
    sleep 0.1
  done
  echo "the Java broker $name did not start"
  tail "$work/$name.out"
  exit 1
}

# Prints the broker.conf of a 1-shard uringmq test broker (1 MiB segments, 4 queues a topic,
# loopback, the NameServers in $namesrv) on stdout: cluster, store under $work/<name>, then any
# extra lines given. uringmq_conf CLUSTER NAME GROUP PORT BROKER_ID ROLE [extra lines...]
uringmq_conf() {
  local cluster=$1 name=$2 group=$3 port=$4 id=$5 role=$6
  shift 6
  cat <<CONF
brokerClusterName=$cluster
brokerName=$group
brokerId=$id
brokerRole=$role
storePathRootDir=$work/$name/store
listenPort=$port
bindAddress=127.0.0.1
shardCount=1
namesrvListenPort=0
namesrvAddr=$namesrv
defaultTopicQueueNums=4
mappedFileSizeCommitLog=1048576
maxMessageSize=65536
diskSpaceWarningLevelRatio=100
CONF
  printf '%s\n' "$@"
}
