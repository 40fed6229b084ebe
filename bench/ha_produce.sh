#!/usr/bin/env bash
# Produce under brokerRole=SYNC_MASTER with a uringmq slave against SYNC_FLUSH without one, over
# loopback: uringmq-net-bench against a fresh uringmq-broker per measurement (SYNC_FLUSH in both),
# the two modes interleaved, RUNS of each; then the replication lag at half the SYNC_MASTER rate
# of the same run. Prints every run's JSON summary, the medians (messages/s, p50 and p99
# latency), the ratio and the lag.
#   flush:       the default ASYNC_MASTER role, no slave (a send waits for its fdatasync).
#   sync_master: brokerRole=SYNC_MASTER and a uringmq-broker brokerRole=SLAVE (its own data
#                dir, haMasterAddress = the master's HA port, SYNC_FLUSH): a send waits for its
#                fdatasync and for the slave's acknowledgement of its durable offset (the stream
#                carries written bytes, so both fdatasyncs run at once).
#   lag:         sync_master with --rate at half the median sync_master rate measured above;
#                the master's uringmq_ha_replication_lag_seconds histogram (written to acked by
#                the slave) is scraped after the load and its p99 reported (sync_master runs
#                report theirs too, at full speed).
# Usage: bench/ha_produce.sh [build dir]   (needs uringmq-broker and uringmq-net-bench built)
# CONNS (16), PIPELINE (32), BYTES (128), RUNS (3), SECONDS_ (10), WARMUP (2), DATA (./bench-data),
# SLAVE_DATA (the slave's data dir; default DATA's: the same disk as the master, so the two
# fdatasyncs share one device; a tmpfs path stands in for a slave on its own machine); RATE: the
# lag rounds only, at that --rate (an A/B of two builds at one rate).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
CONNS=${CONNS:-16} PIPELINE=${PIPELINE:-32} BYTES=${BYTES:-128} RUNS=${RUNS:-3}
SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-2}
base=$(mkdir -p "${DATA:-$root/bench-data}" && cd "${DATA:-$root/bench-data}" && pwd)
data=$base/ha
sdata=${SLAVE_DATA:-$data.slave}
slave_pid=""
slave_stop() {
  if [ -n "$slave_pid" ]; then
    kill -TERM "$slave_pid" 2>/dev/null || true
    wait "$slave_pid" 2>/dev/null || true
    slave_pid=""
  fi
}
source "$root/bench/broker_load.sh"
trap 'server_stop; slave_stop; rm -rf "$data" "$sdata"' EXIT

# The slave of the master on port $1: a uringmq-broker SLAVE with its own store; ready once its
# HA stream connected (its log says so), then a moment for its first report to arrive.
start_slave() {
  rm -rf "$sdata" && mkdir -p "$sdata"
  printf '%s\n' "storePathRootDir=$sdata/store" "listenPort=$(free_port)" \
    "namesrvListenPort=0" "brokerRole=SLAVE" "brokerId=1" "flushDiskType=SYNC_FLUSH" \
    "mappedFileSizeCommitLog=1073741824" "haMasterAddress=127.0.0.1:$(($1 + 1))" \
    "logLevel=info" >"$sdata/broker.conf"
  "$build/tools/uringmq-broker" -c "$sdata/broker.conf" 2>"$sdata/broker.log" &
  slave_pid=$!
  for _ in $(seq 1 600); do
    grep -q "connected to master" "$sdata/broker.log" && break
    kill -0 "$slave_pid" 2>/dev/null || { tail "$sdata/broker.log" >&2; return 1; }
    sleep 0.05
  done
  sleep 0.3
}

# After the load: the master's lag histogram, summed over its presented brokers, into
# $base/ha.lag (cumulative counts per bound in seconds, then the count).
scrape_lag() {
  python3 - "$metrics_port" "$base/ha.lag" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
buckets, count = {}, 0
for line in text.splitlines():
    if line.startswith("uringmq_ha_replication_lag_seconds_bucket"):
        le = line.split('le="')[1].split('"')[0]
        buckets[le] = buckets.get(le, 0) + int(float(line.rsplit(" ", 1)[1]))
    elif line.startswith("uringmq_ha_replication_lag_seconds_count"):
        count += int(float(line.rsplit(" ", 1)[1]))
with open(sys.argv[2], "w") as f:
    for le, n in buckets.items():
        f.write(f"{le} {n}\n")
    f.write(f"count {count}\n")
PY
}

one() {  # one MODE: a fresh broker, one load of MODE, its JSON on stdout
  EXTRA_CONF="" BEFORE_LOAD="" AFTER_LOAD=""
  local extra=()
  if [ "$1" != flush ]; then
    metrics_port=$(free_port)
    EXTRA_CONF="brokerRole=SYNC_MASTER
metricsExporterType=PROM
metricsPromExporterHost=127.0.0.1
metricsPromExporterPort=$metrics_port"
    BEFORE_LOAD=start_slave
    AFTER_LOAD=scrape_lag
    rm -f "$base/ha.lag"
  fi
  [ "$1" = lag ] && extra=(--rate "$RATE")
  one_load 1073741824 --pipeline "$PIPELINE" "${extra[@]}" >"$base/ha.json"
  slave_stop
  local js
  js=$(cat "$base/ha.json")
  if [ "$1" = flush ]; then
    echo "$js"
    return
  fi
  python3 - "$js" "$base/ha.lag" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
rows = [l.split() for l in open(sys.argv[2])]
count = int(rows[-1][1])
cum = [(float("inf") if le == "+Inf" else float(le), int(n)) for le, n in rows[:-1]]
cum.sort()
r["lag_samples"] = count
if count:
    want, below, lo = 0.99 * count, 0, 0.0
    for le, n in cum:  # p99: linear within the first bucket reaching 99 %
        if n >= want:
            hi = le if le != float("inf") else lo
            r["lag_p99_ms"] = 1e3 * (lo + (hi - lo) * (want - below) / max(1, n - below))
            r["lag_p99_bucket_ms"] = 1e3 * hi
            break
        below, lo = n, le
print(json.dumps(r))
PY
}
out=$(mktemp)
if [ -z "${RATE:-}" ]; then
  run_modes "$out" flush sync_master
  RATE=$(python3 - "$out" <<'PY'
import json, statistics, sys
v = [json.loads(l.split(" ", 2)[2])["msgs_per_s"] for l in open(sys.argv[1])
     if l.startswith("sync_master ")]
print(int(statistics.median(v) / 2))
PY
)
  echo "lag: --rate $RATE (half the median sync_master rate)" >&2
else
  echo "lag: --rate $RATE (given; no flush or sync_master rounds)" >&2
fi
run_modes "$out" lag
summarize_runs "$out" "$RATE" <<'PY'
for m, v in rows.items():
    runs = "; ".join(f"{r['msgs_per_s']:,.0f} (p50 {r['p50_us'] / 1000:.2f} / p99 "
                     f"{r['p99_us'] / 1000:.2f} ms)" for r in v)
    print(f"{m}: {medians(v)}; runs {runs}")
    lags = [r for r in v if "lag_p99_ms" in r]
    if lags:
        print(f"  {m} replication lag p99: median {med(lags, 'lag_p99_ms'):.2f} ms (buckets "
              + ", ".join(f"<= {r['lag_p99_bucket_ms']:g} ms" for r in lags)
              + f"; samples {', '.join(str(r['lag_samples']) for r in lags)})")
print(f"errors: { {m: sum(r['errors'] for r in v) for m, v in rows.items()} }")
if "flush" in rows:
    ratio = med(rows['sync_master']) / med(rows['flush'])
    print(f"sync_master / flush: {ratio:.2f}; lag mode at --rate {sys.argv[2]}")
PY
rm -f "$out" "$base/ha.lag" "$base/ha.json"
