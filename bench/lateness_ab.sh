#!/usr/bin/env bash
# Delay-level and timer delivery lateness with and without delivery ahead (StoreOptions::
# delivery_lead_ms), interleaved in one run, next to fio on the same file system.
#   - fio: 52 KiB O_DIRECT writes at queue depth 1, an fdatasync after each (the CommitLog's
#     pattern in the timer bench's lateness phase), 10 s.
#   - uringmq-timer-bench <dir> N 20000 (1 shard, SYNC_FLUSH), lead 0 then the default, R times.
#   - uringmq-bench --workload delay (1,000,000 pending over every level, 30 s), lead 0 then the
#     default, R times.
# Prints each run's lateness line; bench/RESULTS.md keeps the medians.
# Usage: bench/lateness_ab.sh [build dir=build-bench] [rounds R=3] [timers N=1000000]
#          [parts=fio,timer,delay]
set -euo pipefail
build=${1:-build-bench}
rounds=${2:-3}
timers=${3:-1000000}
parts=${4:-fio,timer,delay}
data=${URINGMQ_BENCH_DATA:-./data/lateness-ab}
lead_default=$(awk -F= '/^deliveryLeadMs=/ {print $2}' tools/broker.conf)
for bin in "$build/bench/uringmq-timer-bench" "$build/bench/uringmq-bench"; do
  [[ -x $bin ]] || { echo "missing $bin: build the Release tree first (README)"; exit 2; }
done
mkdir -p "$data"
if [[ ,$parts, != *,fio,* ]]; then
  :
elif command -v fio >/dev/null; then
  fio --name=lateness-pattern --filename="$data/fio.dat" --size=1g --rw=write --bs=52k \
      --direct=1 --ioengine=psync --fdatasync=1 --runtime=10 --time_based \
      --output-format=json > "$data/fio.json"
  python3 - "$data/fio.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, s = j["write"], j["sync"]
p = lambda d, k: (d["clat_ns"]["percentile"][k] / 1e6 if "clat_ns" in d
                  else d["lat_ns"]["percentile"][k] / 1e6)
print(f"fio 52k direct + fdatasync: write p99 {p(w,'99.000000'):.3f} ms, fdatasync p99 "
      f"{s['lat_ns']['percentile']['99.000000']/1e6:.3f} ms, {w['iops']:.0f} ops/s")
PY
  rm -f "$data/fio.dat"
else
  echo "fio missing (apt-get install -y fio): no device figure"
fi
[[ ,$parts, == *,timer,* ]] && for r in $(seq "$rounds"); do
  for lead in 0 "$lead_default"; do
    rm -rf "$data/timer"
    printf 'timer round %s lead %s: ' "$r" "$lead"
    URINGMQ_BENCH_LEAD_MS=$lead "$build/bench/uringmq-timer-bench" "$data/timer" "$timers" 20000 \
      2> >(grep -v '^PHASE' >&2) | grep -E '^lateness_ms|ratio=' | tail -2 | tr '\n' ' '
    echo
  done
done
rm -rf "$data/timer"
[[ ,$parts, == *,delay,* ]] && for r in $(seq "$rounds"); do
  for lead in 0 "$lead_default"; do
    printf 'delay round %s lead %s: ' "$r" "$lead"
    "$build/bench/uringmq-bench" --workload delay --pending 1000000 --rss-pending 1000000 \
      --seconds 30 --shards 1 --message-bytes 128 --data "$data/delay" --delivery-lead-ms "$lead" \
      | grep -E 'intake msgs/s|due in the run' | tr -s ' ' | tr '\n' ' '
    echo
  done
done
rm -rf "$data"
