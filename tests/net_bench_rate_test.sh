#!/usr/bin/env bash
# uringmq-net-bench --rate never runs above its rate to catch up: the broker is stopped
# (SIGSTOP) for the second half of the warm-up, so the schedule falls 0.5 s behind; once the
# broker runs again at the start of the window, the requests it owes beyond 2 ms are skipped,
# not sent in a burst, and the window's rate stays near --rate (a schedule that caught up
# showed 1.9-2.0 x). A check of the pacing, with a wide margin, not of speed.
# Usage: tests/net_bench_rate_test.sh <uringmq-broker> <uringmq-net-bench> <work dir>
set -euo pipefail
broker=$1 bench=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
# shellcheck source=tests/net_bench_lib.sh
source "$here/net_bench_lib.sh"
start_broker "$broker" "$work"
rate=2000
"$bench" --protocol remoting --port "$port" --connections 2 --pipeline 4 --seconds 1 \
  --warmup-seconds 1 --rate "$rate" --json >"$work/report.json" &
bench_pid=$!
sleep 0.5
kill -STOP "$pid"
sleep 0.5
kill -CONT "$pid"
wait "$bench_pid"
report=$(cat "$work/report.json")
echo "report: $report"
python3 - "$report" "$rate" <<'PY'
import json, sys
r, rate = json.loads(sys.argv[1]), int(sys.argv[2])
print(f"asked {rate}/s, measured {r['msgs_per_s']:.0f}/s, errors {r['errors']}, "
      f"skipped in the window {r['rate_skipped']}")
if r["rate"] != rate:
    sys.exit(f"FAIL: the report names rate {r['rate']}, not {rate}")
if r["errors"] != 0 or r["messages"] == 0:
    sys.exit("FAIL: sends failed or none were answered")
if r["msgs_per_s"] > 1.2 * rate:
    sys.exit(f"FAIL: {r['msgs_per_s']:.0f} msgs/s is above 1.2 x --rate {rate}: "
             "the schedule caught up in a burst")
print("PASS")
PY
