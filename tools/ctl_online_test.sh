#!/usr/bin/env bash
# uringmq-ctl against a real uringmq-broker: produce (plain, delayed, with keys), consume with
# and without commit, committed offsets after a broker restart, stats, the admin commands the
# broker serves (topic create, with RocketMQ 5 attributes too, list/route/status/delete, group
# lag and reset by offset and by time, message by id and by key, broker status), --version, and
# offline verify of the stopped store.
# Usage: ctl_online_test.sh <uringmq-broker> <uringmq-ctl> [admin|tls]
# With "tls": the broker in tls.server.mode=enforcing with a test certificate; produce and
# consume with --tls, and a plain produce refused.
# With "admin": only the commands that need the broker's admin requests (200 and 201
# subscription groups, consumeMessageOrderly too, 208 consume stats without a topic, 26/25
# broker config with logLevel at run time).
set -euo pipefail
broker=$1
ctl=$2
part=${3:-data}
dir=$(mktemp -d)
pid=
fail() { echo "FAIL: $*" >&2; [[ -f $dir/log ]] && tail -20 "$dir/log" >&2; exit 1; }
cleanup() { [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

# Two shards: two presented brokers, on port and port + 10, each with its VIP port 2 below.
read -r port < <("$(dirname "$0")/free-ports.sh" 1 2)
cat > "$dir/broker.conf" <<CONF
storePathRootDir=$dir/store
listenPort=$port
namesrvListenPort=0
shardCount=2
mappedFileSizeCommitLog=16777216
messageDelayLevel=300ms 600ms 1s
defaultTopicQueueNums=2
diskSpaceWarningLevelRatio=100
CONF
start() {
  "$broker" -c "$dir/broker.conf" 2> "$dir/log" &
  pid=$!
  for _ in $(seq 1 300); do
    grep -q "ready" "$dir/log" && return 0
    kill -0 "$pid" 2>/dev/null || fail "the broker exited"
    sleep 0.1
  done
  fail "the broker did not become ready"
}
stop() { kill -TERM "$pid"; wait "$pid" || fail "the broker did not stop cleanly"; pid=; }
addr=127.0.0.1:$port
passed=0

if [[ $part == tls ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$dir/server.key" -out "$dir/server.pem" -subj /CN=127.0.0.1 2> /dev/null
  printf 'tls.server.mode=enforcing\ntls.server.certPath=%s\ntls.server.keyPath=%s\n' \
    "$dir/server.pem" "$dir/server.key" >> "$dir/broker.conf"
  start
  out=$("$ctl" produce --tls --addr "$addr" --topic T --queue 0 "secret")
  grep -q "queueOffset=0" <<< "$out" || fail "produce --tls: $out"
  out=$("$ctl" consume --tls --tls-trust-cert "$dir/server.pem" --addr "$addr" --topic T \
    --group G --queue 0 --from first --max 1)
  grep -q "body=secret" <<< "$out" || fail "consume --tls: $out"
  "$ctl" produce --addr "$addr" --topic T --queue 0 "plain" > "$dir/plain.out" 2>&1 &&
    fail "a plain produce went through an enforcing broker"
  grep -q "closed by the peer" "$dir/plain.out" || fail "plain produce: $(cat "$dir/plain.out")"
  grep -q "tls.server.mode is enforcing" "$dir/log" || fail "no WARN for the plain connection"
  stop
  echo "1 passed, 0 failed"
  exit 0
fi

if [[ $part == admin ]]; then
  start
  "$ctl" produce --addr "$addr" --topic T --queue 0 "m" > /dev/null
  "$ctl" consume --addr "$addr" --topic T --group AG --queue 0 --from first --commit > /dev/null
  out=$("$ctl" group lag --addr "$addr" --group AG)
  grep -Eq "^T +\S+ +0 +1 +1 +0$" <<< "$out" || fail "group lag (GET_CONSUME_STATS): $out"
  "$ctl" group list --addr "$addr" | grep "^#group" > /dev/null || fail "group list"
  out=$("$ctl" group create --addr "$addr" -g OG --orderly --retry-max-times 3)
  grep -q "group OG: .*retryMaxTimes 3, orderly" <<< "$out" || fail "group create: $out"
  out=$("$ctl" group list --addr "$addr")
  grep -Eq "^OG +true +true +1 +3 +true$" <<< "$out" || fail "group list lacks orderly OG: $out"
  "$ctl" broker config get --addr "$addr" | grep -x "listenPort=$port" > /dev/null ||
    fail "config get"
  "$ctl" broker config set --addr "$addr" logLevel=debug > /dev/null
  "$ctl" broker config get --addr "$addr" | grep -x "logLevel=debug" > /dev/null ||
    fail "logLevel not set"
  "$ctl" produce --addr "$addr" --topic T --queue 0 "m" > /dev/null
  grep -q " DEBUG " "$dir/log" || fail "logLevel=debug set at run time logs no DEBUG line"
  "$ctl" broker config set --addr "$addr" noSuchKey=1 2> /dev/null && fail "unknown key taken"
  stop
  echo "1 passed, 0 failed"
  exit 0
fi

start
out=$("$ctl" produce --addr "$addr" --topic T --queue 0 --tag A --keys k1 --count 3 "plain")
[[ $(grep -c "queueOffset=" <<< "$out") == 3 ]] || fail "produce: $out"
sent_ms=$(date +%s%3N)
"$ctl" produce --addr "$addr" --topic T --queue 0 --delay-level 2 "later" > /dev/null
passed=$((passed + 1))

# The three plain messages at once; the delayed one only after its 600 ms. On a slow machine
# the first consume may end after those 600 ms: the delayed message is then due, and is early
# only if it was read before they passed.
out=$("$ctl" consume --addr "$addr" --topic T --group G --queue 0 --from first --max 10 --commit)
read_ms=$(date +%s%3N)
[[ $(grep -c "body=plain" <<< "$out") == 3 ]] || fail "consume plain: $out"
grep -q "keys=k1" <<< "$out" || fail "keys missing: $out"
if grep -q "body=later" <<< "$out"; then
  ((read_ms - sent_ms >= 600)) ||
    fail "the delayed message came early ($((read_ms - sent_ms)) ms after its send): $out"
else
  out=$("$ctl" consume --addr "$addr" --topic T --group G --queue 0 --from committed --max 10 \
    --wait-ms 3000 --commit)
  grep -q "body=later" <<< "$out" || fail "delayed message not delivered: $out"
fi
passed=$((passed + 1))

# Committed offsets survive a restart: nothing new for the group.
stop
start
out=$("$ctl" consume --addr "$addr" --topic T --group G --queue 0 --from committed --max 10)
grep -q "body=" <<< "$out" && fail "committed offset lost across restart: $out"
out=$("$ctl" stats --addr "$addr" --topic T)
grep -q "delayLevel.2.delivered" <<< "$out" || fail "stats: $out"
grep -q "^timer.accepted " <<< "$out" || fail "stats without timer figures: $out"
version=$("$ctl" --version | cut -d' ' -f2)
grep -Eq "^brokerVersionDesc +uringmq $version$" <<< "$out" || fail "brokerVersionDesc: $out"
passed=$((passed + 1))

# Admin commands. A topic of 3 queues, 2 messages in queue 1.
out=$("$ctl" topic create --addr "$addr" --topic Adm --read-queues 3 --write-queues 3)
grep -q "topic Adm: 3 read / 3 write" <<< "$out" || fail "topic create: $out"
"$ctl" topic list --addr "$addr" | grep -x "Adm" > /dev/null || fail "topic list lacks Adm"
# RocketMQ 5 attributes: set at creation, removed by a change (it was stored); a removal of what
# is not set and a value outside the enum are refused.
out=$("$ctl" topic create --addr "$addr" --topic Fifo --attribute +message.type=FIFO)
grep -q "topic Fifo: .*attributes +message.type=FIFO" <<< "$out" || fail "topic create -a: $out"
"$ctl" topic create --addr "$addr" --topic Fifo --attribute=-message.type > /dev/null ||
  fail "removing the stored message.type"
out=$("$ctl" topic create --addr "$addr" --topic Fifo --attribute=-message.type 2>&1) &&
  fail "removed a message.type that is not set: $out"
grep -q "attempt to delete a nonexistent key: message.type" <<< "$out" || fail "remark: $out"
out=$("$ctl" topic create --addr "$addr" --topic Fifo -a +message.type=LIFO 2>&1) &&
  fail "message.type LIFO taken: $out"
grep -q "not in set" <<< "$out" || fail "remark: $out"
out=$("$ctl" topic route --addr "$addr" --topic Adm)
grep -Eq "^\S+ +3 +3 +6 +\S+:$port" <<< "$out" || fail "topic route: $out"
id1=$("$ctl" produce --addr "$addr" --topic Adm --queue 1 --keys order-7 one |
  sed 's/msgId=\([^ ]*\).*/\1/')
"$ctl" produce --addr "$addr" --topic Adm --queue 1 two > /dev/null
out=$("$ctl" topic status --addr "$addr" --topic Adm)
grep -Eq "^\S+ +1 +0 +2 " <<< "$out" || fail "topic status: $out"
passed=$((passed + 1))

"$ctl" message id --addr "$addr" "$id1" | grep "keys=order-7 .*body=one" > /dev/null ||
  fail "message id $id1"
"$ctl" message key --addr "$addr" --topic Adm order-7 | grep "body=one" > /dev/null ||
  fail "message key"
"$ctl" message key --addr "$addr" --topic Adm no-such-key 2> /dev/null && fail "unknown key found"
passed=$((passed + 1))

# Group offsets: by offset on one queue, then back by time to the start (every queue).
"$ctl" group reset --addr "$addr" --group AG --topic Adm --offset 1 --queue 1 > /dev/null
out=$("$ctl" group lag --addr "$addr" --group AG --topic Adm)
grep -Eq "^Adm +\S+ +1 +2 +1 +1$" <<< "$out" || fail "group lag after reset to 1: $out"
"$ctl" group reset --addr "$addr" --group AG --topic Adm --time 0 > /dev/null
out=$("$ctl" group lag --addr "$addr" --group AG --topic Adm)
grep -q "Diff Total: 2" <<< "$out" || fail "group lag after reset by time: $out"
"$ctl" group reset --addr "$addr" --group AG --topic Adm 2> /dev/null && fail "reset needs a target"
[[ $? == 2 ]] || fail "a usage error must exit 2"
"$ctl" broker status --addr "$addr" | grep "putMessageTimesTotal" > /dev/null ||
  fail "broker status"
"$ctl" broker status --addr "$addr" | grep -E "^commitLogMaxOffset +[1-9]" > /dev/null ||
  fail "broker status: commitLogMaxOffset"
# ha lag of a broker against itself: caught up; ha fence of a group nobody registered: 0 topics.
out=$("$ctl" ha lag --master "$addr" --slave "$addr") || fail "ha lag: $out"
grep -q "holds everything" <<< "$out" || fail "ha lag: $out"
out=$("$ctl" ha fence -n "$addr" -b nobody) || fail "ha fence: $out"
grep -q "wiped on 0 topics" <<< "$out" || fail "ha fence: $out"
"$ctl" topic delete --addr "$addr" --topic Adm > /dev/null
"$ctl" topic list --addr "$addr" | grep -x "Adm" > /dev/null && fail "topic delete left Adm"
"$ctl" --version | grep -E "^uringmq-ctl [0-9]+\.[0-9]+\.[0-9]+$" > /dev/null ||
  fail "ctl --version"
"$broker" --version | grep -E "^uringmq-broker [0-9]+\.[0-9]+\.[0-9]+$" > /dev/null ||
  fail "broker --version"
passed=$((passed + 1))

stop
"$ctl" verify --dir "$dir/store" --no-progress > "$dir/verify" 2>&1 ||
  fail "verify: $(cat "$dir/verify")"
passed=$((passed + 1))
echo "$passed passed, 0 failed"
