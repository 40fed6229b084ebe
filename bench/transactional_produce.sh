#!/usr/bin/env bash
# Transactional produce against plain sends, over loopback, SYNC_FLUSH: uringmq-net-bench
# against a fresh uringmq-broker for each measurement, plain sends (SEND_MESSAGE_V2) and
# transactional ones (a half send, then END_TRANSACTION commit once its reply comes; a message
# counts when the commit is answered, i.e. its copy is durable and consumable), CONNS x PIPELINE
# in flight, interleaved, RUNS of each; then transactional again with one long-polling consumer
# connection per queue ("consumed": the commit -> consume latency, from the commit's write;
# the consumers take CPU from the same machine, so its msgs/s is not the throughput figure), and
# plain sends with the same consumers ("plain_consumed": send -> consume, the reference). Prints
# the medians, and the parts of the consume latency (uringmq-net-bench's header).
# Usage: bench/transactional_produce.sh [build dir]   (needs uringmq-broker, uringmq-net-bench)
# CONNS (16), PIPELINE (32), BYTES (128), RUNS (3), SECONDS_ (10), WARMUP (2), DATA (./bench-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
CONNS=${CONNS:-16} PIPELINE=${PIPELINE:-32} BYTES=${BYTES:-128} RUNS=${RUNS:-3}
SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-2}
data=$(mkdir -p "${DATA:-$root/bench-data}" && cd "${DATA:-$root/bench-data}" && pwd)/transactional
source "$root/bench/broker_load.sh"
trap 'server_stop; rm -rf "$data"' EXIT
one() {  # one MODE: a fresh broker, one load of MODE, its JSON on stdout
  local extra=(--pipeline "$PIPELINE")
  [ "$1" = transactional ] && extra+=(--transactional 1)
  [ "$1" = consumed ] && extra+=(--transactional 1 --consume 1)
  [ "$1" = plain_consumed ] && extra+=(--consume 1)
  one_load 268435456 "${extra[@]}"
}
out=$(mktemp)
run_modes "$out" plain transactional consumed plain_consumed
summarize_runs "$out" <<'PY'
def more(m, r):
    return ((f", commit p99 {r['commit_p99_us'] / 1000:.2f} ms" if r["transactional"] else "")
            + (f", {'commit' if m == 'consumed' else 'send'} -> consume p99 "
               f"{r['consume_p99_us'] / 1000:.2f} ms (answer -> consume p99 "
               f"{r['answer_consume_p99_us'] / 1000:.2f}, early {r['consumed_early']}; held "
               f"{r['held_consumed']} p99 {r['held_p99_us'] / 1000:.2f}, waited "
               f"{r['waited_consumed']} p99 {r['waited_p99_us'] / 1000:.2f}; pull p50/p99 "
               f"{r['pull_p50_us'] / 1000:.2f}/{r['pull_p99_us'] / 1000:.2f}, "
               f"{r['msgs_per_pull']:.1f} a pull)"
               if m.endswith("consumed") else ""))
for m, v in rows.items():
    summary(m, v, lambda r, m=m: more(m, r))
commit = med(rows["transactional"], "commit_p99_us") / 1000
consume = med(rows["consumed"], "consume_p99_us") / 1000
plain = med(rows["plain_consumed"], "consume_p99_us") / 1000
print(f"transactional / plain: {med(rows['transactional']) / med(rows['plain']):.2f}; "
      f"commit p99 median {commit:.2f} ms; commit -> consume p99 median {consume:.2f} ms; "
      f"plain send -> consume p99 median {plain:.2f} ms")
PY
rm -f "$out"
