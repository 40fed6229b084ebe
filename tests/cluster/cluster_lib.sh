# Shell helpers the cluster tests share (sourced; they use $work, $broker_bin and, for Java,
# $rmq and the variables of its env.sh).

# Finds the RocketMQ Java distribution into $rmq and sources its env.sh; without it (or javac)
# prints "<label>: SKIPPED (...)" and exits 0.
cluster_java_or_skip() {
  local label=$1
  rmq=$("$repo/tools/find-rocketmq-java.sh" || true)
  if [ -z "$rmq" ] || [ ! -f "$rmq/env.sh" ] || ! command -v javac >/dev/null 2>&1; then
    echo "$label: SKIPPED (no RocketMQ Java distribution found (set" \
      "URINGMQ_ROCKETMQ_JAVA), or no javac)"
    exit 0
  fi
  # shellcheck source=/dev/null
  source "$rmq/env.sh" || { echo "$label: SKIPPED (its env.sh failed)"; exit 0; }
}

# Starts the uringmq broker named $1 with conf $2 in the background and waits until its log
# says ready for the $3-th time; pid in $work/$1.pid, the epoch ms it was ready in $work/$1.ready.
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

# Waits (up to 60 s) until something listens on 127.0.0.1:$1.
wait_port() {
  for _ in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# Starts a Java 4.9.8 NameServer on port $1 (small heap); pid in $work/ns$1.pid.
start_java_namesrv() {
  NAMESRV_HEAP="-Xms128m -Xmx128m -Xmn64m" "$rmq/namesrv.sh" "$1" "$work/ns$1" \
    > "$work/ns$1.out" 2>&1 &
  echo $! > "$work/ns$1.pid"
}

# Waits (up to 120 s) until the Java broker whose output is $1 booted; exits 1 if not.
wait_java_boot() {
  for _ in $(seq 1 1200); do grep -q "boot success" "$1" && return 0; sleep 0.1; done
  echo "the Java broker did not start"
  tail "$1"
  exit 1
}
