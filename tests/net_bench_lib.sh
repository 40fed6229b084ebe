# Sourced by the uringmq-net-bench tests: start_broker <uringmq-broker> <work dir> [conf line ...]
# starts a broker on a free port with a small store in <work dir> (the lines added to its
# broker.conf), waits until it accepts connections, and sets $port and $pid. The EXIT trap
# continues (a test may have stopped it) and stops it.
pid=""
trap '[ -n "$pid" ] && { kill -CONT "$pid" 2>/dev/null; kill -TERM "$pid" 2>/dev/null;
  wait "$pid" 2>/dev/null; }; true' EXIT
start_broker() {
  local broker=$1 work=$2
  shift 2
  read -r port < <("$(dirname "${BASH_SOURCE[0]}")/../tools/free-ports.sh" 1)
  printf '%s\n' "storePathRootDir=$work/store" "listenPort=$port" "namesrvListenPort=0" \
    "mappedFileSizeCommitLog=67108864" "defaultTopicQueueNums=8" "logLevel=warn" "$@" \
    >"$work/broker.conf"
  "$broker" -c "$work/broker.conf" 2>"$work/broker.log" &
  pid=$!
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { echo "the broker exited:"; cat "$work/broker.log"; exit 1; }
    sleep 0.1
  done
  echo "the broker does not accept connections on $port"
  exit 1
}
