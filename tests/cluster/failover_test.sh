#!/usr/bin/env bash
# The failover runbook (docs/cluster.md, "Failover"), scripted: one Java 4.9.8 NameServer; group
# broker-a = uringmq SYNC_MASTER M + uringmq SLAVE S, group broker-b = uringmq master B; topic
# FailT on both groups. The official Java producer (FailoverCheck.java) sends under load and
# records every answer. Steps, each checked:
#   1. load until broker-a acknowledged 300 sends; S is paused for 1 s (sends to M then wait
#      for the slave: M holds a tail no slave has, never acknowledged), then M and S are
#      killed -9 and S restarts as SLAVE (a slave behind its dead master, made deterministic);
#   2. the producer's later SEND_OKs all come from broker-b (traffic moved);
#   3. `uringmq-ctl ha fence` on the NameServer; `uringmq-ctl ha lag` shows S's offset stable
#      (it applied what it received; the master is gone);
#   4. promotion: S restarted with brokerId=0, brokerRole=SYNC_MASTER (haMasterAddress removed);
#   5. `uringmq-ctl ha rejoin` on M's store against S's HA port: M's log is a prefix of S's
#      plus a tail; the tail is cut and reported, and none of its messages was acknowledged by
#      broker-a (a cut message may carry a key broker-b acknowledged: the client's retry);
#   6. M restarted as S's slave (brokerId=1, SLAVE): S's log shows it streaming, no refusal;
#      a second load gets SEND_OKs from broker-a again;
#   7. zero loss: a new consumer group reads every key ever answered SEND_OK (both loads).
# Usage: tests/cluster/failover_test.sh <uringmq-broker> <uringmq-ctl> <work dir>
# Without a RocketMQ Java distribution or javac it prints a skip line and passes.
set -euo pipefail
broker_bin=$(realpath "$1")
ctl=$(realpath "$2")
work=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"
java_or_skip "java_failover_test"
rm -rf "$work" && mkdir -p "$work/classes"
javac -nowarn -d "$work/classes" -cp "$RMQ_CP" "$repo/tests/cluster/FailoverCheck.java" \
  "$repo/tests/cluster/HaMasterCheck.java"

pidfiles=("$work/M.pid" "$work/S.pid" "$work/B.pid" "$work/load.pid")
trap cluster_kill_all EXIT
read -r ns pm ps pb < <("$repo/tools/free-ports.sh" 4 2)
namesrv="127.0.0.1:$ns"
topic=FailT

conf() { uringmq_conf FailCluster "$@"; }  # name group port brokerId role [extra lines]

fail() {
  echo "java_failover_test: FAILED: $*"
  for f in M.log S.log B.log rejoin.txt; do
    echo "--- $f"
    tail -15 "$work/$f" 2>/dev/null || true
  done
  exit 1
}

# Runs a Java step in the foreground; fails unless it printed JAVA-CHECK OK.
java_step() {
  local log=$1 status=0
  shift
  timeout 300 "$JAVA" -cp "$RMQ_CP:$work/classes" -Drocketmq.client.logUseSlf4j=false "$@" \
    > "$work/$log" 2>&1 || status=$?
  grep -E '^(FAIL|CHECK) ' "$work/$log" || true
  if [ "$status" -ne 0 ] || ! grep -q "JAVA-CHECK OK" "$work/$log"; then
    tail -20 "$work/$log"
    fail "java step $log (exit $status)"
  fi
}

start_load() {  # ledger prefix
  rm -f "$work/stop"
  : > "$1"
  "$JAVA" -cp "$RMQ_CP:$work/classes" -Drocketmq.client.logUseSlf4j=false FailoverCheck load \
    "$namesrv" "$topic" "$1" "$work/stop" "$2" > "$work/load-$2.log" 2>&1 &
  echo $! > "$work/load.pid"
}
stop_load() {
  touch "$work/stop"
  wait "$(cat "$work/load.pid")" || fail "the load ($1) failed: $(tail -5 "$work/load-$1.log")"
  grep -q "JAVA-CHECK OK" "$work/load-$1.log" || fail "the load ($1) did not finish"
  grep '^CHECK' "$work/load-$1.log"
}
# count <ledger> <broker> [after ms]: SEND_OKs of that broker (answered after the time).
count() {
  awk -v b="$2" -v t="${3:-0}" '$2 == b && $3 > t && $4 == "SEND_OK"' "$1" | wc -l
}
wait_for() {  # seconds description command...
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq 1 $((seconds * 10))); do "$@" && return 0; sleep 0.1; done
  fail "$what (after $seconds s)"
}

conf M broker-a "$pm" 0 SYNC_MASTER > "$work/M.conf"
conf S broker-a "$ps" 1 SLAVE "haMasterAddress=127.0.0.1:$((pm + 1))" > "$work/S.conf"
conf B broker-b "$pb" 0 ASYNC_MASTER > "$work/B.conf"
start_java_namesrvs "$ns"
# The slave starts first: its registration is answered without a master, and it must learn M
# (and sync M's tables) from a registration soon after M's, not a registerNameServerPeriod later.
start_uringmq S "$work/S.conf" 1
start_uringmq M "$work/M.conf" 1
start_uringmq B "$work/B.conf" 1
for p in "$pm" "$pb"; do "$ctl" topic create --addr "127.0.0.1:$p" -t "$topic" > /dev/null; done
wait_for 30 "S did not connect to M's HA port" grep -q "asked for offset" "$work/M.log"

# 1. Load; S paused for a second (M's tail that no slave holds), M killed.
ledger1="$work/ledger1"
start_load "$ledger1" a
wait_for 60 "broker-a acknowledged no 300 sends" \
  bash -c "[ \$(awk '\$2 == \"broker-a\" && \$4 == \"SEND_OK\"' '$ledger1' | wc -l) -ge 300 ]"
# A slave knows the topics only from SlaveSynchronize (at once when it learns its master, then
# every 10 s): promoted before that, it would register no route for the topic.
wait_for 20 "S did not sync M's topic table" grep -qs "$topic" "$work/S/store/config/topics.json"
kill -STOP "$(cat "$work/S.pid")"
# What M appends from now on, the stopped S cannot have read. The load's senders may all be
# waiting on broker-a for S's acknowledgement of sends S received just before it stopped (then
# M appends nothing more in the pause, and M's log equals S's): a send of our own to M makes the
# unacknowledged tail certain (it is answered only by the slave timeout, never SEND_OK).
m_log_end() {
  "$ctl" stats --addr "127.0.0.1:$pm" | awk '$1 == "commitLogMaxOffset" { print $2 }'
}
paused_end=$(m_log_end)
"$ctl" produce --addr "127.0.0.1:$pm" --topic "$topic" --keys tail-after-pause tail-after-pause \
  > "$work/tail-send.txt" 2>&1 &
tail_pid=$!
m_appended() { [ "$(m_log_end)" -gt "$paused_end" ]; }
wait_for 10 "M appended nothing while S was paused" m_appended
sleep 1
kill -9 "$(cat "$work/M.pid")"
kill_ms=$(date +%s%3N)
# S dies too, before it reads what M streamed during the pause: M's tail is then on M alone
# (the bytes a paused slave's socket holds would otherwise reach it once it runs again).
kill -9 "$(cat "$work/S.pid")"
wait "$tail_pid" 2> /dev/null || true  # its connection to M is gone
echo "M killed at $kill_ms with $(count "$ledger1" broker-a) SEND_OKs from broker-a"
start_uringmq S "$work/S.conf" 2  # S back as SLAVE; its master is gone

# 2. Traffic moves to broker-b.
wait_for 60 "broker-b took no 300 sends after the kill" \
  bash -c "[ \$(awk -v t=$kill_ms '\$2 == \"broker-b\" && \$3 > t && \$4 == \"SEND_OK\"' \
    '$ledger1' | wc -l) -ge 300 ]"
a_after=$(count "$ledger1" broker-a "$kill_ms")
b_after=$(count "$ledger1" broker-b "$kill_ms")
echo "after the kill: $b_after SEND_OKs from broker-b, $a_after from broker-a"
[ "$a_after" = 0 ] || fail "broker-a answered SEND_OK after its master was killed"
stop_load a

# 3. Fence; the slave caught up with what it received (its offset no longer moves).
"$ctl" ha fence -n "$namesrv" -b broker-a
lag1=$("$ctl" ha lag --master "127.0.0.1:$pm" --slave "127.0.0.1:$ps" | head -1)
sleep 1
lag2=$("$ctl" ha lag --master "127.0.0.1:$pm" --slave "127.0.0.1:$ps" | head -1)
echo "$lag2"
[ "$lag1" = "$lag2" ] || fail "the slave's offset still moves: $lag1 / $lag2"

# 4. Promote S: brokerId=0, a master role, no haMasterAddress.
kill -TERM "$(cat "$work/S.pid")"
wait_for 30 "S did not stop" bash -c "! kill -0 $(cat "$work/S.pid") 2>/dev/null"
conf S broker-a "$ps" 0 SYNC_MASTER > "$work/S.conf"
promote_ms=$(date +%s%3N)
start_uringmq S "$work/S.conf" 3
echo "S promoted: ready $(($(cat "$work/S.ready") - promote_ms)) ms after its start"

# 5. Rejoin check of the old master's store against the new master's HA port.
status=0
rejoin_ms=$(date +%s%3N)
"$ctl" ha rejoin --dir "$work/M/store" --master "127.0.0.1:$((ps + 1))" > "$work/rejoin.txt" \
  2>&1 || status=$?
echo "ha rejoin took $(($(date +%s%3N) - rejoin_ms)) ms"
cat "$work/rejoin.txt" | grep -v '^  offset=' || true
[ "$status" = 0 ] || fail "ha rejoin refused (exit $status)"
grep -q "cut \[" "$work/rejoin.txt" || fail "no unacknowledged tail was cut (S was paused)"
cut_count=$(grep -c '^  offset=' "$work/rejoin.txt" || true)
ls "$work/M/store"/rejoin-0-*.txt > /dev/null || fail "no report file in the store dir"
# No cut message was acknowledged by broker-a.
awk '$4 == "SEND_OK" && $2 == "broker-a" {print $1}' "$ledger1" | sort > "$work/acked-a"
sed -n 's/^  .* keys=\([^ ]*\) .*/\1/p' "$work/rejoin.txt" | sort > "$work/cut-keys"
lost=$(comm -12 "$work/acked-a" "$work/cut-keys" | wc -l)
echo "rejoin cut $cut_count records; acknowledged by broker-a among them: $lost"
[ "$lost" = 0 ] || fail "the rejoin cut $lost messages broker-a acknowledged"
# A second run finds nothing more to cut.
"$ctl" ha rejoin --dir "$work/M/store" --master "127.0.0.1:$((ps + 1))" | grep -q "nothing to cut" \
  || fail "a second rejoin did not find the log a prefix"

# 6. The old master rejoins as S's slave; broker-a takes sends again.
conf M broker-a "$pm" 1 SLAVE "haMasterAddress=127.0.0.1:$((ps + 1))" > "$work/M.conf"
start_uringmq M "$work/M.conf" 2
wait_for 30 "M did not stream from S" grep -q "asked for offset" "$work/S.log"
if grep -q "refusing" "$work/S.log"; then fail "S refused its new slave"; fi
ledger2="$work/ledger2"
start_load "$ledger2" b
wait_for 60 "broker-a acknowledged no 100 sends after the promotion" \
  bash -c "[ \$(awk '\$2 == \"broker-a\" && \$4 == \"SEND_OK\"' '$ledger2' | wc -l) -ge 100 ]"
stop_load b
"$ctl" ha lag --master "127.0.0.1:$ps" --slave "127.0.0.1:$pm" || true

# 7. Zero loss: every SEND_OK is read back.
cat "$ledger1" "$ledger2" | awk '$4 == "SEND_OK" {print $1}' > "$work/acked"
echo "$(wc -l < "$work/acked") messages answered SEND_OK in all"
java_step readall.log HaMasterCheck readall "$namesrv" "$topic" Gfailover "$work/acked"
echo "java_failover_test: passed"
