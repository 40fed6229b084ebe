#!/usr/bin/env bash
# Produce under brokerRole=SYNC_MASTER with a slave against SYNC_FLUSH without one, over
# loopback: uringmq-net-bench against a fresh uringmq-broker per measurement (SYNC_FLUSH in both),
# the two modes interleaved, RUNS of each; prints every run's JSON summary, the medians
# (messages/s, p50 and p99 latency) and the ratio.
#   flush:       the default ASYNC_MASTER role, no slave (a send waits for its fdatasync).
#   sync_master: brokerRole=SYNC_MASTER and a minimal slave on the HA port (ha_acker below:
#                reads the chunks and acknowledges each one's end at once, holding nothing, as
#                a Java slave acknowledges bytes in its page cache), so a send waits for its
#                fdatasync, then for the stream and the acknowledgement.
# Usage: bench/ha_produce.sh [build dir]   (needs uringmq-broker and uringmq-net-bench built)
# CONNS (16), PIPELINE (32), BYTES (128), RUNS (3), SECONDS_ (10), WARMUP (2), DATA (./bench-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
CONNS=${CONNS:-16} PIPELINE=${PIPELINE:-32} BYTES=${BYTES:-128} RUNS=${RUNS:-3}
SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-2}
base=$(mkdir -p "${DATA:-$root/bench-data}" && cd "${DATA:-$root/bench-data}" && pwd)
data=$base/ha
source "$root/bench/broker_load.sh"
acker_pid=""
trap 'server_stop; [ -n "$acker_pid" ] && kill "$acker_pid" 2>/dev/null; rm -rf "$data"' EXIT

# The slave: connects to the HA port ($1 + 1), asks for offset 0 and acknowledges every chunk's
# end; ready once its first report is written (the file ha_acker.ready).
ha_acker() {
  rm -f "$data.acker.ready"
  python3 - "$(($1 + 1))" "$data.acker.ready" <<'PY' &
import socket, struct, sys, time
for attempt in range(300):  # the HA port listens once the store opened (after the main port)
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        break
    except ConnectionRefusedError:
        time.sleep(0.1)
s.sendall(struct.pack(">q", 0))
open(sys.argv[2], "w").close()
buf = bytearray()
while True:
    d = s.recv(1 << 20)
    if not d:
        break
    buf += d
    at, end = 0, None
    while len(buf) - at >= 12:
        offset, size = struct.unpack_from(">qi", buf, at)
        if len(buf) - at < 12 + size:
            break
        at += 12 + size
        end = offset + size
    del buf[:at]
    if end is not None:
        s.sendall(struct.pack(">q", end))
PY
  acker_pid=$!
  for _ in $(seq 1 700); do [ -f "$data.acker.ready" ] && break; sleep 0.05; done
  sleep 0.3  # the report reaches the master before the first send
}

one() {  # one MODE: a fresh broker, one load of MODE, its JSON on stdout
  EXTRA_CONF="" BEFORE_LOAD=""
  if [ "$1" = sync_master ]; then
    EXTRA_CONF="brokerRole=SYNC_MASTER"
    BEFORE_LOAD=ha_acker
  fi
  one_load 1073741824 --pipeline "$PIPELINE"
  if [ -n "$acker_pid" ]; then
    wait "$acker_pid" 2>/dev/null || true
    acker_pid=""
  fi
}
out=$(mktemp)
run_modes "$out" flush sync_master
python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, run, js = line.split(" ", 2)
    rows.setdefault(mode, []).append(json.loads(js))
med = lambda v, k: statistics.median(r[k] for r in v)
for m, v in rows.items():
    runs = "; ".join(f"{r['msgs_per_s']:,.0f} (p50 {r['p50_us'] / 1000:.2f} / p99 "
                     f"{r['p99_us'] / 1000:.2f} ms)" for r in v)
    print(f"{m}: median {med(v, 'msgs_per_s'):,.0f} msgs/s, p50 {med(v, 'p50_us') / 1000:.2f} ms, "
          f"p99 {med(v, 'p99_us') / 1000:.2f} ms; runs {runs}")
print(f"errors: { {m: sum(r['errors'] for r in v) for m, v in rows.items()} }")
ratio = med(rows['sync_master'], 'msgs_per_s') / med(rows['flush'], 'msgs_per_s')
print(f"sync_master / flush: {ratio:.2f}")
PY
rm -f "$out"
