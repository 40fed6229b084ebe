# Prepended by broker_load.sh's summarize_runs to each benchmark's summary: the runs of
# sys.argv[1] ("MODE RUN {json}" lines) by mode, and the lines every summary prints.
import json
import statistics
import sys

rows = {}  # mode -> its runs' JSON objects, in run order
for line in open(sys.argv[1]):
    mode, run, js = line.split(" ", 2)
    rows.setdefault(mode, []).append(json.loads(js))


def med(runs, key="msgs_per_s"):
    return statistics.median(r[key] for r in runs)


def summary(label, runs, more=lambda r: ""):
    each = "; ".join(f"{r['msgs_per_s']:,.0f} (p50 {r['p50_us'] / 1000:.1f} / p99 "
                     f"{r['p99_us'] / 1000:.1f} ms{more(r)})" for r in runs)
    print(f"{label}: median {med(runs):,.0f} msgs/s; runs {each}")


def medians(runs):
    return (f"median {med(runs):,.0f} msgs/s, p50 {med(runs, 'p50_us') / 1000:.2f} ms, "
            f"p99 {med(runs, 'p99_us') / 1000:.2f} ms")
