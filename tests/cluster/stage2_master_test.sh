#!/usr/bin/env bash
# Cluster stage 2, master side: a uringmq SYNC_MASTER (1 shard, 1 MiB segments) replicated by a
# Java 4.9.8 SLAVE (brokerId 1, same segment size and delay levels) over RocketMQ's classic HA,
# one Java NameServer. HaMasterCheck.java (the official client) drives each step; this script
# checks the files. Steps (tests/cluster/README.md):
#   5,000 sends (500 delayed, levels 1-2) over at least five segment rolls, all SEND_OK;
#   the slave's commitlog files equal the master's bytes (zeros after each sealed segment's
#   blank record + 8, up to the master's end in the open segment);
#   within 15 s the slave's topics.json, consumerOffset.json and delayOffset.json hold the
#   master's values; kill -9 of the master: a new group reads every acknowledged message from
#   the slave; master restarted, slave killed: SLAVE_NOT_AVAILABLE at once; slave restarted and
#   SIGSTOPped: FLUSH_SLAVE_TIMEOUT after about slaveTimeout; SIGCONT: SEND_OK again;
#   master stopped, a byte of a record in the middle of its second segment flipped, master
#   started: it repairs the record from the Java slave (VIEW_MESSAGE_BY_ID; the slave found
#   through the NameServer's GET_BROKER_CLUSTER_INFO), and a new group reads every message.
# Usage: tests/cluster/stage2_master_test.sh <uringmq-broker binary> <work dir>
# Without a RocketMQ Java distribution or javac it prints a skip line and passes.
set -euo pipefail
broker_bin=$(realpath "$1")
work=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"
java_or_skip "cluster_stage2_master"
rm -rf "$work" && mkdir -p "$work/classes"
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$repo/tests/cluster/HaMasterCheck.java"

pidfiles=("$work/master.pid")
trap cluster_kill_all EXIT
read -r ns pm ps < <("$repo/tools/free-ports.sh" 3)
namesrv="127.0.0.1:$ns"
topic=HaTopic

uringmq_conf HaCluster master broker-ha "$pm" 0 SYNC_MASTER > "$work/master.conf"
mkdir -p "$work/slave"
cat > "$work/slave/broker.conf" <<CONF
brokerClusterName=HaCluster
brokerName=broker-ha
brokerId=1
brokerRole=SLAVE
brokerIP1=127.0.0.1
listenPort=$ps
namesrvAddr=$namesrv
haMasterAddress=127.0.0.1:$((pm + 1))
storePathRootDir=$work/slave/store
storePathCommitLog=$work/slave/store/commitlog
mappedFileSizeCommitLog=1048576
mappedFileSizeConsumeQueue=60000
flushDiskType=ASYNC_FLUSH
CONF

fail() {
  echo "cluster_stage2_master: FAILED: $*"
  for f in master.log slave.out; do echo "--- $f"; tail -15 "$work/$f" 2>/dev/null || true; done
  exit 1
}

# Runs one HaMasterCheck step; fails the test unless it printed JAVA-CHECK OK.
check() {
  local status=0
  timeout 180 "$JAVA" -cp "$RMQ_CP:$work/classes" -Drocketmq.client.logUseSlf4j=false \
    HaMasterCheck "$@" > "$work/java-$1.log" 2>&1 || status=$?
  grep -E '^(FAIL|CHECK) ' "$work/java-$1.log" || true
  if [ "$status" -ne 0 ] || ! grep -q "JAVA-CHECK OK" "$work/java-$1.log"; then
    tail -20 "$work/java-$1.log"
    fail "step $1 (exit $status)"
  fi
}

# Waits until the master's log shows $1 slave connections that sent their first offset.
wait_slave_streaming() {
  for _ in $(seq 1 600); do
    [ "$(grep -c "asked for offset" "$work/master.log" 2>/dev/null)" -ge "$1" ] && return 0
    sleep 0.1
  done
  fail "the slave did not connect to the master's HA port ($1)"
}

start_java_namesrvs "$ns"
start_uringmq master "$work/master.conf" 1
start_java_broker_conf slave "$work/slave/broker.conf"
wait_java_boot slave 1
wait_slave_streaming 1
grep "asked for offset" "$work/master.log" | tail -1

check send "$namesrv" "$topic" "$work/ledger"
check consume "$namesrv" "$topic" G1 3000

# The slave's commitlog files hold the master's bytes (delay deliveries included: level 2 is
# 5 s, and the consume step took longer).
compare() {
  python3 - "$work/master/store" "$work/slave/store/commitlog" 1048576 <<'PY'
import os, struct, sys
master_root, slave_dir, seg = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = lambda d: sorted(n for n in os.listdir(d) if len(n) == 20 and n.isdigit())
mdir = next(os.path.join(r, "") for r, ds, fs in os.walk(master_root) if r.endswith("commitlog"))
mnames, snames = names(mdir), names(slave_dir)
sealed = 0
for name in mnames:
    m = open(os.path.join(mdir, name), "rb").read()
    pos, want = 0, None
    while pos + 8 <= seg:
        size, magic = struct.unpack(">iI", m[pos:pos + 8])
        if magic == 0xCBD43194:
            want = m[:pos + 8] + bytes(seg - pos - 8)
            sealed += 1
            break
        if magic not in (0xDAA320A7, 0xDAA320AB) or size <= 8:
            want = m[:pos]
            break
        pos += size
    if name not in snames:
        sys.exit(f"the slave has no segment {name}")
    s = open(os.path.join(slave_dir, name), "rb").read()
    if s[:len(want)] != want:
        diff = next(i for i in range(len(want)) if i >= len(s) or s[i] != want[i])
        sys.exit(f"segment {name} differs at byte {diff} (of {len(want)} compared)")
print(f"commitlog: {len(mnames)} segments ({sealed} sealed) equal on the slave")
if sealed < 5:
    sys.exit(f"only {sealed} segment rolls")
PY
}
ok=0
for _ in $(seq 1 30); do
  if compare > "$work/compare.txt" 2>&1; then ok=1; break; fi
  sleep 0.5
done
cat "$work/compare.txt"
[ "$ok" = 1 ] || fail "the slave's commitlog differs from the master's"

check synced "127.0.0.1:$pm" "$work/slave/store" "$topic" G1

kill -9 "$(cat "$work/master.pid")"
check readall "$namesrv" "$topic" G2 "$work/ledger"

start_uringmq master "$work/master.conf" 2
wait_slave_streaming 2
check expect "$namesrv" "$topic" SEND_OK 0 20000
kill -9 "$(cat "$work/slave.pid")"
sleep 0.5
check expect "$namesrv" "$topic" SLAVE_NOT_AVAILABLE 0 1000

start_java_broker_conf slave "$work/slave/broker.conf"
wait_java_boot slave 2
wait_slave_streaming 3
check expect "$namesrv" "$topic" SEND_OK 0 20000
kill -STOP "$(cat "$work/slave.pid")"
check expect "$namesrv" "$topic" FLUSH_SLAVE_TIMEOUT 2500 4500
kill -CONT "$(cat "$work/slave.pid")"
check expect "$namesrv" "$topic" SEND_OK 0 20000

# Repair from the Java slave: a clean stop (the second segment is then below the checkpoint:
# recovery trusts it, the scrub finds the damage), one byte flipped in a record in its middle.
kill -TERM "$(cat "$work/master.pid")"
for _ in $(seq 1 200); do kill -0 "$(cat "$work/master.pid")" 2>/dev/null || break; sleep 0.05; done
segment=$(find "$work/master/store" -path '*commitlog/00000000000001048576')
python3 - "$segment" <<'PY'
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
pos = 0
while pos < len(data) // 2:
    pos += struct.unpack(">i", data[pos:pos + 4])[0]
size = struct.unpack(">i", data[pos:pos + 4])[0]
data[pos + size // 2] ^= 0x20
open(path, "r+b").write(data)
print(f"repair: flipped byte {pos + size // 2} of {path} (record at file offset {pos})")
PY
cp "$segment" "$work/damaged-segment"
start_uringmq master "$work/master.conf" 3
for _ in $(seq 1 600); do
  grep -q "INFO repaired the damaged record" "$work/master.log" && break
  sleep 0.1
done
grep -E "damaged record|no replica repaired" "$work/master.log" || true
grep -q "INFO repaired the damaged record" "$work/master.log" ||
  fail "the master did not repair the damaged record from the Java slave"
cmp -s "$segment" "$work/damaged-segment" && fail "the damaged segment was not rewritten"
check readall "$namesrv" "$topic" G3 "$work/ledger"
echo "cluster_stage2_master: passed"
