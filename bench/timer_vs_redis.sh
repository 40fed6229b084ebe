#!/usr/bin/env bash
# The timer bench's peer: redis-server holding N timers in a sorted set (a Redis delay queue),
# durable as uringmq's SYNC_FLUSH is: --appendonly yes --appendfsync always.
# Sends N ZADD (16-byte member, score = a deliver time spread over 1 min .. 30 days, as
# uringmq-timer-bench) through redis-cli --pipe; prints ZADD/s and the server's RSS with the N
# members pending. Usage: bench/timer_vs_redis.sh [N=1000000] [dir=/tmp/umq-redis-timers]
set -euo pipefail
n=${1:-1000000}
dir=${2:-/tmp/umq-redis-timers}
port=6391
command -v redis-server >/dev/null ||
  { echo "redis-server missing: apt-get install -y redis-server"; exit 2; }
rm -rf "$dir" && mkdir -p "$dir"
redis-server --port $port --bind 127.0.0.1 --appendonly yes --appendfsync always --save "" \
  --dir "$dir" --logfile "$dir/redis.log" --daemonize yes
trap 'redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true' EXIT
for _ in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
python3 - "$n" > "$dir/zadd.resp" <<'PY'
import random, sys, time
n = int(sys.argv[1]); start = int(time.time() * 1000); rng = random.Random(8)
out = sys.stdout.buffer
for i in range(n):
    score = str(start + 60000 + rng.randrange(30 * 86400000 - 60000)).encode()
    member = b"%016d" % i
    out.write(b"*4\r\n$4\r\nZADD\r\n$6\r\ntimers\r\n$%d\r\n%s\r\n$16\r\n%s\r\n"
              % (len(score), score, member))
PY
t0=$(date +%s.%N)
redis-cli -p $port --pipe < "$dir/zadd.resp" | tail -1
t1=$(date +%s.%N)
pid=$(redis-cli -p $port info server | awk -F: '/^process_id/ {print $2}' | tr -d '\r')
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
card=$(redis-cli -p $port zcard timers)
python3 -c "import sys; n,t0,t1=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3])
print(f'redis ZADD appendfsync always: {n} in {t1-t0:.1f} s = {n/(t1-t0):.0f}/s')" \
  "$n" "$t0" "$t1"
used=$(redis-cli -p $port info memory | awk -F: '/^used_memory_human/ {print $2}' | tr -d '\r')
echo "redis members=$card rss=$rss KiB ($used used_memory)"
