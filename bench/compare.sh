#!/usr/bin/env bash
# compare.sh: the append benchmark targets, each a ratio measured in this one run, next to fio on
# the same file system (fio sets the device's ceiling; each target is a fraction of it).
#
#   (a) ASYNC_FLUSH, 1 KiB, 1 shard: MB/s / fio io_uring direct seq write (no sync) at the
#       engine's write size, queue depth 4; with 64 and with 1,024 sends in flight  target >= 0.9
#   (b) SYNC_FLUSH, 1 KiB, 64 and 1,024 sends in flight: MB/s / fio with an fdatasync per group
#       of the engine's measured bytes per fdatasync (>= 0.8); messages per fdatasync with 1,024
#       in flight (>= 100; with 64 in flight at most 64 are possible: info); ack p99 / fio's
#       fdatasync p99 (etcd job: sync engine, 4 KiB, fdatasync=1; <= 3); fdatasyncs/s / that
#       job's IOPS (>= 0.9). The SYNC runs use SYNC_SEGMENT_MIB segments so that each rolls
#       over several segments (a fresh store's: new files; and with retention taking every
#       segment behind the writer: recycled ones).
#   (n) with a CPU-heavy neighbour (python3 spinning on one core) through the run: SYNC 1 KiB,
#       64 in flight, fdatasyncs/s / the etcd job's IOPS without the neighbour (fio's rate is the
#       device's)                                                           target >= 0.7
#       (info: fio's own IOPS with / without the neighbour; msgs/s with / without)
#   (p) the fdatasync path (info): the etcd job through fio's io_uring engine (IORING_OP_FSYNC,
#       which the kernel runs on an io-wq worker, as the engine issues it) / the same job through
#       fdatasync(2) (ioengine=sync): IOPS and sync p99, without and with the neighbour
#   (c) 128 B: heap allocations per message in steady state (0); encode+CRC / memcpy+CRC bytes/s
#       from uringmq-micro-bench (>= 0.5)
#   (d) ASYNC_FLUSH, 128 B, CPU-bound: 2 shards / 1 shard msgs/s (>= 1.8)
# Consume, recovery and dispatch targets (section 4), written to bench/results/consume.{md,dat}:
#   (e) cold sequential read of a backlog (uringmq-bench --workload consume: append, close, drop
#       the page cache, reopen, pull everything) MB/s / fio direct seq read at the engine's
#       average read size, QD8 (the consume workload's pulls in flight)      target >= 0.85
#   (f) recovery after a SIGKILLed writer: Store::open time / fio's time to read the bytes the
#       recovery scanned (direct, 4 MiB blocks = the scanner's window, QD1) target <= 1.5
#   (g) dispatch lag p99 (producer ack -> consumer receives it, long-polling pulls) at 50% and
#       100% of the SYNC append maximum measured in the same run      targets <= 1 ms, 10 ms
# Every engine run and fio job runs RUNS times (default 2) interleaved; the median is kept (of
# two: the mean). Writes bench/results/latest.{md,dat,png} and prints the table; section 3 takes
# about 6-7 minutes with the defaults (6.5 on 2026-12-02).
#
# Environment: BUILD (default <repo>/build-bench), DATA (default ./bench-data; removed at the
# end), RUNS (2), BENCH_SECONDS (6, per engine run), FIO_RUNTIME (6, per fio job),
# SEGMENT_MIB (1024, the engine default), SYNC_SEGMENT_MIB (64: the SYNC runs' segments, rows
# (b) and (n)), SECTIONS ("3 4"; add 5: delayed delivery; net: network),
# BACKLOG_MIB (1024: the consume workload's backlog; the full target is 4096, set it for a full
# run), RECOVERY_MIB (1000: what the killed writer appends; below one segment, so all of it is
# rescanned). Needs fio, python3, gnuplot (tools/install-deps.sh). Dropping the page cache
# needs root (else the bench uses posix_fadvise DONTNEED on the store's files).
# Network produce (SECTIONS=net), written to bench/results/net.{md,dat}: network produce over
# loopback, SYNC_FLUSH, 128 B, uringmq-net-bench against uringmq-broker, redis-server (ZADD,
# appendfsync always) and beanstalkd (put, -f 0), NET_RUNS (3) runs of each, interleaved; see
# the section for its variables.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
BUILD=${BUILD:-$root/build-bench}
DATA=${DATA:-./bench-data}
RUNS=${RUNS:-2}
BENCH_SECONDS=${BENCH_SECONDS:-6}
FIO_RUNTIME=${FIO_RUNTIME:-6}
SEGMENT_MIB=${SEGMENT_MIB:-1024}
SYNC_SEGMENT_MIB=${SYNC_SEGMENT_MIB:-64}
SECTIONS=${SECTIONS:-3 4}
BACKLOG_MIB=${BACKLOG_MIB:-1024}
RECOVERY_MIB=${RECOVERY_MIB:-1000}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
bench=$BUILD/bench/uringmq-bench
micro=$BUILD/bench/uringmq-micro-bench
results=$here/results

if want 3 || want 4 || want 5; then  # the engine sections (net checks its own tools below)
for tool in fio python3 gnuplot; do
  command -v "$tool" >/dev/null ||
    { echo "compare.sh: $tool missing (tools/install-deps.sh)"; exit 1; }
done
exes=("$bench")
case " ${SECTIONS:-3 4} " in *" 3 "*) exes+=("$micro") ;; esac
for exe in "${exes[@]}"; do
  [ -x "$exe" ] || {
    echo "compare.sh: $exe missing; build it:"
    echo "  cmake -S $root -B $BUILD -DCMAKE_BUILD_TYPE=Release &&" \
      "cmake --build $BUILD -j2 --target uringmq-bench uringmq-micro-bench"
    exit 1
  }
done
fi
case "$DATA" in "" | "/") echo "compare.sh: refusing DATA=$DATA"; exit 1 ;; esac

raw=$(mktemp -d)
neighbour_pid=""
cleanup() {
  if [ -n "$neighbour_pid" ]; then kill "$neighbour_pid" 2>/dev/null || true; fi
  rm -rf "$DATA" "$raw"
}
trap cleanup EXIT
mkdir -p "$DATA" "$results"
started=$(date +%s)

# Reads a field from a JSON file: jf FILE 'python expression over d'.
jf() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

engine() {  # engine NAME RUN ARGS...: one uringmq-bench run, its JSON kept as NAME.RUN.json
  local name=$1 run=$2
  shift 2
  echo "  uringmq-bench $name (run $run): $*" >&2
  "$bench" --data "$DATA/engine" --segment-mib "$SEGMENT_MIB" --seconds "$BENCH_SECONDS" \
    --json "$@" >"$raw/$name.$run.json"
  rm -rf "$DATA/engine"
}

fio_job() {  # fio_job NAME RUN ARGS...: one fio job, its JSON kept as NAME.RUN.json
  local name=$1 run=$2
  shift 2
  echo "  fio $name (run $run): $*" >&2
  fio --name="$name" --filename="$DATA/fio-$name" --output-format=json "$@" \
    >"$raw/$name.$run.json"
  rm -f "$DATA/fio-$name"
}

# A CPU-heavy neighbour: one python3 spinning on a core (as bench/pinning.sh), or none.
neighbour_start() {
  python3 -c 'while True: pass' &
  neighbour_pid=$!
}
neighbour_stop() {
  kill "$neighbour_pid" 2>/dev/null || true
  wait "$neighbour_pid" 2>/dev/null || true
  neighbour_pid=""
}

# Powers of two between 4 KiB and 1 MiB: the fio block size nearest (in log terms) to $1 bytes.
pow2_block() {
  python3 -c "import math,sys; b=max(4096.0,min(1048576.0,float(sys.argv[1])))
print(2**round(math.log2(b)))" "$1"
}

# sync_sizes NAME: fio's block size and writes per fdatasync for the SYNC run NAME (its first
# run): "bs n write_bytes group_bytes", the block nearest the engine's write size and the number
# of them nearest its bytes per fdatasync.
sync_sizes() {
  local w g bs
  w=$(jf "$raw/$1.1.json" "$per_write")
  g=$(jf "$raw/$1.1.json" "$per_sync")
  bs=$(pow2_block "$w")
  echo "$bs $(python3 -c "import sys; print(max(1, round(float(sys.argv[1])/float(sys.argv[2]))))" \
    "$g" "$bs") $w $g"
}

echo "compare.sh: $RUNS runs of each, engine runs of ${BENCH_SECONDS}s," \
  "fio jobs of ${FIO_RUNTIME}s, data in $DATA" >&2
if want 3; then
fio_seq_bs=""
sync1k=(--workload append --flush sync --message-bytes 1024 --shards 1 --segment-mib
        "$SYNC_SEGMENT_MIB")
async1k=(--workload append --flush async --message-bytes 1024 --shards 1 --io-mode direct)
for run in $(seq 1 "$RUNS"); do
  engine a "$run" "${async1k[@]}" --producers 64
  engine ab "$run" --workload append --flush async --message-bytes 1024 --shards 1 --producers 64 \
    --io-mode buffered
  engine b "$run" "${sync1k[@]}" --producers 64
  engine br "$run" "${sync1k[@]}" --producers 64 --expire-segments yes
  engine bk "$run" "${sync1k[@]}" --producers 1024 --threads 2
  engine ak "$run" "${async1k[@]}" --producers 1024 --threads 2
  if [ -z "$fio_seq_bs" ]; then
    # fio at the engine's own write size and bytes per fdatasync (from the first runs).
    per_write="d['append']['mb_per_s']*1e6/max(d['append']['writes_per_s'],1)"
    per_sync="d['append']['mb_per_s']*1e6/max(d['append']['fdatasyncs_per_s'],1)"
    write_bytes=$(jf "$raw/a.1.json" "$per_write")
    fio_seq_bs=$(pow2_block "$write_bytes")
    buffered_write_bytes=$(jf "$raw/ab.1.json" "$per_write")
    fio_seqb_bs=$(pow2_block "$buffered_write_bytes")
    ak_write_bytes=$(jf "$raw/ak.1.json" "$per_write")
    fio_seqk_bs=$(pow2_block "$ak_write_bytes")
    sizes=$(sync_sizes b)
    read -r fio_sync_bs fio_sync_n sync_write_bytes sync_group_bytes <<<"$sizes"
    sizes=$(sync_sizes bk)
    read -r fio_synck_bs fio_synck_n bk_write_bytes bk_group_bytes <<<"$sizes"
    echo "  engine writes ${write_bytes%.*} B (async), ${sync_write_bytes%.*} B per write and" \
         "${sync_group_bytes%.*} B per fdatasync (sync):" \
         "fio bs=$fio_seq_bs; bs=$fio_sync_bs fdatasync=$fio_sync_n;" \
         "buffered IO writes ${buffered_write_bytes%.*} B: fio bs=$fio_seqb_bs;" \
         "1,024 in flight: async ${ak_write_bytes%.*} B (fio bs=$fio_seqk_bs), sync" \
         "${bk_write_bytes%.*} B per write and ${bk_group_bytes%.*} B per fdatasync" \
         "(fio bs=$fio_synck_bs fdatasync=$fio_synck_n)" >&2
  fi
  common=(--rw=write --size=1g --ioengine=io_uring --direct=1 --iodepth=4 --time_based
          --runtime="$FIO_RUNTIME")
  fio_job seq "$run" "${common[@]}" --bs="$fio_seq_bs"
  fio_job seqb "$run" "${common[@]}" --bs="$fio_seqb_bs"
  fio_job seq1m "$run" "${common[@]}" --bs=1m
  fio_job group "$run" "${common[@]}" --bs="$fio_sync_bs" --fdatasync="$fio_sync_n"
  fio_job groupk "$run" "${common[@]}" --bs="$fio_synck_bs" --fdatasync="$fio_synck_n"
  fio_job seqk "$run" "${common[@]}" --bs="$fio_seqk_bs"
  # The etcd job (4 KiB writes, an fdatasync after each) through fdatasync(2), and through
  # io_uring's IORING_OP_FSYNC (run by an io-wq worker, the engine's path): (b), (n) and (p).
  etcd=(--rw=write --size=64m --fdatasync=1 --bs=4k --time_based --runtime="$FIO_RUNTIME")
  fio_job fsync "$run" "${etcd[@]}" --ioengine=sync
  fio_job fsyncu "$run" "${etcd[@]}" --ioengine=io_uring --iodepth=1
  neighbour_start
  echo "  with a CPU-heavy neighbour (pid $neighbour_pid):" >&2
  engine bn "$run" "${sync1k[@]}" --producers 64
  fio_job fsyncn "$run" "${etcd[@]}" --ioengine=sync
  fio_job fsyncun "$run" "${etcd[@]}" --ioengine=io_uring --iodepth=1
  neighbour_stop
  engine c "$run" --workload append --flush async --message-bytes 128 --shards 1 --producers 64
  engine d1 "$run" --workload append --flush async --message-bytes 128 --shards 1 --producers 512 \
    --threads 2
  engine d2 "$run" --workload append --flush async --message-bytes 128 --shards 2 --producers 512 \
    --threads 2
done
echo "  uringmq-micro-bench" >&2
# Repetitions interleaved at random: on a shared machine the load drifts, and encode and its
# memcpy baseline must see the same drift for their ratio to mean anything.
"$micro" --benchmark_format=json --benchmark_repetitions="$((RUNS > 5 ? RUNS : 5))" \
  --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 >"$raw/micro.json"

python3 - "$raw" "$RUNS" "$results" "$fio_seq_bs" "$fio_sync_bs" "$fio_sync_n" \
  "$fio_seqb_bs" "$SYNC_SEGMENT_MIB" "$fio_seqk_bs" "$fio_synck_bs" "$fio_synck_n" <<'EOF'
import json, statistics, sys, os
raw, runs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seq_bs, sync_bs, sync_n, seqb_bs = sys.argv[4:8]
sync_segment_mib = int(sys.argv[8])
seqk_bs, synck_bs, synck_n = sys.argv[9:12]
def load(name):
    return [json.load(open(f"{raw}/{name}.{r}.json")) for r in range(1, runs + 1)]
def med(values):
    return statistics.median(values)
def eng(name, field):
    return med([d["append"][field] for d in load(name)])
def fio_bw(name):
    return med([d["jobs"][0]["write"]["bw_bytes"] / 1e6 for d in load(name)])
no_sync_lat = set()  # fio jobs whose "sync" section held no latencies
def fio_sync_p99_us(name):
    # fio records each fdatasync's latency in "sync" (the io_uring engine's IORING_OP_FSYNC
    # too, fio 3.33); should a version leave it empty, the write's lat_ns stands in, and the
    # job is named below the table.
    vals = []
    for d in load(name):
        p99 = d["jobs"][0].get("sync", {}).get("lat_ns", {}).get("percentile", {}).get(
            "99.000000", 0)
        if not p99:
            no_sync_lat.add(name)
            p99 = d["jobs"][0]["write"]["lat_ns"]["percentile"]["99.000000"]
        vals.append(p99 / 1e3)
    return med(vals)
def fio_iops(name):
    return med([d["jobs"][0]["write"]["iops"] for d in load(name)])
micro = json.load(open(f"{raw}/micro.json"))
def micro_rate(name):
    for b in micro["benchmarks"]:
        if b["name"] == f"{name}_median":
            return b["bytes_per_second"] / 1e9
    raise SystemExit(f"compare.sh: {name} missing from the micro-bench output")
def micro_counter(name, counter):
    for b in micro["benchmarks"]:
        if b["name"] == f"{name}_median":
            return b[counter]
    return 0
machine = load("a")[0]["machine"]

rows = []  # figure, numerator, denominator, ratio, target text, met, lower_is_better
def ratio_row(key, figure, num, num_text, den, den_text, target, higher=True):
    r = num / den if den else float("inf")
    met = r >= target if higher else r <= target
    rows.append((key, figure, num_text.format(num), den_text.format(den), r,
                 (">= " if higher else "<= ") + f"{target:g}", met, target))
ratio_row("a", "(a) ASYNC 1 KiB 1 shard MB/s (direct, the default) / fio seq write (no sync, bs "
          + seq_bs + ", QD4)",
          eng("a", "mb_per_s"), "{:.1f} MB/s", fio_bw("seq"), "{:.1f} MB/s", 0.9)
ratio_row("a_buffered",
          "(a) same, --io-mode buffered / fio seq write (no sync, bs " + seqb_bs + ", QD4)",
          eng("ab", "mb_per_s"), "{:.1f} MB/s", fio_bw("seqb"), "{:.1f} MB/s", 0.9)
ratio_row("a1m", "(a') same / fio seq write bs 1m QD4 (device ceiling, no target)",
          eng("a", "mb_per_s"), "{:.1f} MB/s", fio_bw("seq1m"), "{:.1f} MB/s", 0.9)
rows[-1] = rows[-1][:5] + ("(info)", None, None)
ratio_row("b", f"(b) SYNC 1 KiB 64 producers MB/s / fio bs {sync_bs} fdatasync={sync_n}",
          eng("b", "mb_per_s"), "{:.1f} MB/s", fio_bw("group"), "{:.1f} MB/s", 0.8)
ratio_row("b_mpf", "(b) messages per fdatasync, 64 in flight (at most 64: no target here)",
          eng("b", "messages_per_fdatasync"), "{:.1f} msgs", 1, "1 fdatasync", 100)
rows[-1] = rows[-1][:5] + ("(info)", None, None)
ratio_row("bk_mpf", "(b) SYNC 1 KiB 1,024 in flight: messages per fdatasync",
          eng("bk", "messages_per_fdatasync"), "{:.1f} msgs", 1, "1 fdatasync", 100)
ratio_row("bk", f"(b) SYNC 1 KiB 1,024 in flight MB/s / fio bs {synck_bs} fdatasync={synck_n}",
          eng("bk", "mb_per_s"), "{:.1f} MB/s", fio_bw("groupk"), "{:.1f} MB/s", 0.8)
ratio_row("ak", "(a) ASYNC 1 KiB 1,024 in flight MB/s / fio seq write at its write size (bs "
          + seqk_bs + ", QD4)",
          eng("ak", "mb_per_s"), "{:.1f} MB/s", fio_bw("seqk"), "{:.1f} MB/s", 0.9)
ratio_row("b_gcf", "(b) group-commit factor: SYNC msgs/s / fio 4 KiB fdatasync=1 IOPS (plan B2)",
          eng("b", "msgs_per_s"), "{:.0f} msgs/s", fio_iops("fsync"), "{:.0f} IOPS", 100)
ratio_row("b_p99", "(b) ack p99 / fio fdatasync p99 (sync engine, 4 KiB, fdatasync=1)",
          eng("b", "p99_us"), "{:.0f} us", fio_sync_p99_us("fsync"), "{:.0f} us", 3, higher=False)
def rolls(name):  # segments the writer entered during the run (median)
    return med([d["append"]["messages"] * d["record_bytes"] / (sync_segment_mib << 20)
                for d in load(name)])
for key, name, what in (("b_new", "b", "new segments"), ("b_recycled", "br", "recycled")):
    over = f"over {rolls(name):.0f} rolls of {sync_segment_mib} MiB {what}"
    ratio_row(key + "_syncs", f"(b) SYNC fdatasyncs/s {over} / fio fdatasync IOPS",
              eng(name, "fdatasyncs_per_s"), "{:.0f}/s", fio_iops("fsync"), "{:.0f} IOPS", 0.9)
    ratio_row(key + "_p99", f"(b) SYNC ack p99 {over} / fio fdatasync p99",
              eng(name, "p99_us"), "{:.0f} us", fio_sync_p99_us("fsync"), "{:.0f} us", 3,
              higher=False)
def info_row(key, figure, num, num_text, den, den_text, higher=True):
    ratio_row(key, figure, num, num_text, den, den_text, 1, higher)
    rows[-1] = rows[-1][:5] + ("(info)", None, None)
ratio_row("n_syncs", f"(n) SYNC fdatasyncs/s with a neighbour, over {rolls('bn'):.0f} rolls of "
          f"{sync_segment_mib} MiB / fio fdatasync IOPS without one",
          eng("bn", "fdatasyncs_per_s"), "{:.0f}/s", fio_iops("fsync"), "{:.0f} IOPS", 0.7)
info_row("n_fio", "(n) fio fdatasync IOPS with a neighbour / without",
         fio_iops("fsyncn"), "{:.0f} IOPS", fio_iops("fsync"), "{:.0f} IOPS")
info_row("n_msgs", "(n) SYNC msgs/s with / without neighbour",
         eng("bn", "msgs_per_s"), "{:.0f} msgs/s", eng("b", "msgs_per_s"), "{:.0f} msgs/s")
for key, uring, syscall, when in (("p", "fsyncu", "fsync", "without"),
                                  ("pn", "fsyncun", "fsyncn", "with")):
    info_row(key + "_iops", f"(p) fdatasync via io_uring (io-wq) / via the syscall: IOPS, "
             f"{when} the neighbour",
             fio_iops(uring), "{:.0f} IOPS", fio_iops(syscall), "{:.0f} IOPS")
    info_row(key + "_p99", f"(p) fdatasync via io_uring (io-wq) / via the syscall: p99, "
             f"{when} the neighbour",
             fio_sync_p99_us(uring), "{:.0f} us", fio_sync_p99_us(syscall), "{:.0f} us",
             higher=False)
alloc = eng("c", "allocations_per_message")
rows.append(("c_alloc", "(c) 128 B heap allocations per message, steady state",
             f"{alloc:.4f} allocs/msg", "1 msg", alloc, "== 0", alloc == 0, 0))
ratio_row("c_128", "(c) encode+CRC / memcpy+CRC, 128 B body (GB/s)",
          micro_rate("BM_EncodeCrc/128"), "{:.2f} GB/s", micro_rate("BM_MemcpyCrc/128"),
          "{:.2f} GB/s", 0.5)
ratio_row("c_1k", "(c) encode+CRC / memcpy+CRC, 1 KiB body (GB/s)",
          micro_rate("BM_EncodeCrc/1024"), "{:.2f} GB/s", micro_rate("BM_MemcpyCrc/1024"),
          "{:.2f} GB/s", 0.5)
ratio_row("d", "(d) ASYNC 128 B msgs/s, 2 shards / 1 shard (512 producers, 2 client threads)",
          eng("d2", "msgs_per_s"), "{:.0f} msgs/s", eng("d1", "msgs_per_s"), "{:.0f} msgs/s", 1.8)

def yes(met):
    return "-" if met is None else ("yes" if met else "no")
header = "| figure | numerator | denominator | ratio | target | met |\n|---|---|---|---|---|---|\n"
table = header + "".join(f"| {f} | {n} | {d} | {r:.3f} | {t} | {yes(m)} |\n"
                         for _, f, n, d, r, t, m, _ in rows)
extra = {
    "ack_p50_us_sync": eng("b", "p50_us"), "ack_p99_us_sync": eng("b", "p99_us"),
    "ack_p999_us_sync": eng("b", "p999_us"), "fdatasyncs_per_s_sync": eng("b", "fdatasyncs_per_s"),
    "msgs_per_s_sync": eng("b", "msgs_per_s"), "msgs_per_s_async_1k": eng("a", "msgs_per_s"),
    "msgs_per_s_async_128": eng("c", "msgs_per_s"),
    "cpu_us_per_msg_d1": eng("d1", "cpu_us_per_message"),
    "cpu_us_per_msg_d2": eng("d2", "cpu_us_per_message"),
    "fio_fsync_iops": fio_iops("fsync"), "fio_fsync_p99_us": fio_sync_p99_us("fsync"),
    "fio_seq_1m_mb_s": fio_bw("seq1m"), "mb_per_s_async_1k_buffered": eng("ab", "mb_per_s"),
    "ring_round_trip_ns": micro_counter("BM_SpscRingRoundTrip/real_time", "ns_per_round_trip"),
    "msgs_per_s_sync_1024": eng("bk", "msgs_per_s"),
    "fdatasyncs_per_s_sync_1024": eng("bk", "fdatasyncs_per_s"),
    "ack_p99_us_sync_1024": eng("bk", "p99_us"),
    "msgs_per_s_async_1k_1024": eng("ak", "msgs_per_s"),
    "busy_retries_1024": eng("bk", "busy_retries") + eng("ak", "busy_retries"),
    "fdatasyncs_per_s_sync_neighbour": eng("bn", "fdatasyncs_per_s"),
    "ack_p99_us_sync_neighbour": eng("bn", "p99_us"),
    "fio_fsync_io_uring_iops": fio_iops("fsyncu"),
    "fio_fsync_io_uring_p99_us": fio_sync_p99_us("fsyncu"),
    "fio_fsync_neighbour_iops": fio_iops("fsyncn"),
    "fio_fsync_neighbour_p99_us": fio_sync_p99_us("fsyncn"),
    "fio_fsync_io_uring_neighbour_iops": fio_iops("fsyncun"),
    "fio_fsync_io_uring_neighbour_p99_us": fio_sync_p99_us("fsyncun"),
}
lat_note = ("" if not no_sync_lat else
            "\nfio recorded no fdatasync latencies for " + ", ".join(sorted(no_sync_lat)) +
            ": their p99 is the write's lat_ns (submission to completion of the write).\n")
machine_line = (f"{machine['cores']} cores, {machine['cpu']}, kernel {machine['kernel']}, "
                f"{machine['fs']} (data dir)")
with open(f"{out}/latest.md", "w") as f:
    f.write(f"Machine: {machine_line}. Median of {runs} runs each.\n\n" + table + lat_note +
            "\nOther figures (medians):\n\n")
    for k, v in extra.items():
        f.write(f"- {k}: {v:.1f}\n")
with open(f"{out}/latest.dat", "w") as f:
    f.write("# key ratio target met numerator denominator (figures as in latest.md)\n")
    for key, fig, n, d, r, t, m, target in rows:
        f.write(f"{key} {r:.4f} {target if target is not None else 'NaN'} {yes(m)} "
                f"\"{n}\" \"{d}\"\n")
    for k, v in extra.items():
        f.write(f"# {k} {v:.3f}\n")
print(f"Machine: {machine_line}. Median of {runs} runs each.\n")
print(table + lat_note)
for k, v in extra.items():
    print(f"  {k}: {v:.1f}")
EOF

# The chart: each target's ratio against its target (log scale: ratios span 0.05 to 1000); the
# rows without a target (info) are left out.
gnuplot <<EOF
set terminal pngcairo size 1000,520 noenhanced font "sans,10"
set output "$results/latest.png"
set title "uringmq vs references: measured ratio (bars) and target (points)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.7
set logscale y
set yrange [0.05:1000]
set ylabel "ratio (log scale)"
set xtics rotate by -30
set grid ytics
set key top left
plot "< grep -v '^#' $results/latest.dat | grep -v c_alloc | grep -v ' NaN '" \
       using 2:xtic(1) title "measured ratio" lc rgb "#4477aa", \
     "" using 0:3 with points pt 7 ps 1.6 lc rgb "#cc3311" title "target"
EOF
echo "compare.sh: wrote $results/latest.md, latest.dat, latest.png in" \
  "$(( $(date +%s) - started ))s" >&2
fi
# ---- Section 5: delayed delivery (uringmq-bench --workload delay), to bench/results/delay.md ----
#   (h) lateness of deliveries due during a run at half the SYNC plain maximum, with PENDING
#       (default 1000000) delayed messages preloaded over every level: never early, p99 <= 2 ms,
#       p99.9 <= 10 ms, max reported; (i) RSS at 0 and at RSS_PENDING (default 10000000) pending;
#   (j) delayed intake / plain intake, SYNC, same producers, same run    target >= 0.9
# DELAY_SECONDS (60): the run's length. 128 B bodies (~259 B records: RSS_PENDING 10M ~ 3 GB).
if want 5; then
PENDING=${PENDING:-1000000}
RSS_PENDING=${RSS_PENDING:-10000000}
DELAY_SECONDS=${DELAY_SECONDS:-60}
for run in $(seq 1 "$RUNS"); do
  echo "  uringmq-bench delay (run $run)" >&2
  "$bench" --workload delay --data "$DATA/engine" --segment-mib "$SEGMENT_MIB" --json --flush sync \
    --message-bytes 128 --pending "$PENDING" --rss-pending "$RSS_PENDING" \
    --seconds "$DELAY_SECONDS" \
    >"$raw/delay.$run.json" || echo "compare.sh: delay run $run did not check out" >&2
  rm -rf "$DATA/engine"
done
python3 - "$raw" "$RUNS" "$results" <<'PY'
import json, statistics, sys
raw, runs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ds = [json.load(open(f"{raw}/delay.{r}.json")) for r in range(1, runs + 1)]
def get(*path):
    vals = []
    for d in ds:
        for p in path:
            d = d[p]
        vals.append(d)
    return statistics.median(vals)
early = sum(d["lateness"]["early"] for d in ds)
p99 = get("lateness", "p99_ms"); p999 = get("lateness", "p999_ms"); mx = get("lateness", "max_ms")
ratio = get("intake", "ratio")
rows = [
    ("(h) deliveries earlier than store time + delay (all runs)", f"{early}", "0", early == 0),
    ("(h) lateness p99 (consumer receive - deliver time)", f"{p99:.3f} ms", "<= 2 ms", p99 <= 2),
    ("(h) lateness p99.9", f"{p999:.3f} ms", "<= 10 ms", p999 <= 10),
    ("(h) lateness max", f"{mx:.3f} ms", "(reported)", None),
    (f"(i) VmRSS at 0 pending / at {get('rss','pending_full'):.0f} pending "
     "(bench arrays subtracted)",
     f"{get('rss','kib0')/1024:.1f} MiB / {get('rss','engine_kib_full')/1024:.1f} MiB",
     "no growth", None),
    (f"(j) delayed intake / plain intake, SYNC ({get('intake','delayed_rate'):.0f} / "
     f"{get('intake','plain_rate'):.0f} msgs/s)",
     f"{ratio:.3f}", ">= 0.9", ratio >= 0.9),
]
yes = lambda m: "-" if m is None else ("yes" if m else "no")
m = ds[0]["machine"]
text = (f"Machine: {m['cores']} cores, {m['cpu']}, kernel {m['kernel']}, {m['fs']}. "
        f"Median of {runs} runs; "
        f"levels {ds[0]['levels']}; "
        f"pending at run start {get('preload','pending_at_run_start'):.0f}; "
        f"run {get('run','rate'):.0f} msgs/s asked, "
        f"{get('run','acked')/get('run','seconds'):.0f} acked/s.\n\n"
        "| figure | measured | target | met |\n|---|---|---|---|\n" +
        "".join(f"| {f} | {v} | {t} | {yes(ok)} |\n" for f, v, t, ok in rows))
open(f"{out}/delay.md", "w").write(text)
print(text)
PY
fi
# ---- Section net: network produce, uringmq-broker vs redis-server vs beanstalkd ----
#   (k) SYNC_FLUSH produce msgs/s over loopback, 128 B, the same load generator
#       (uringmq-net-bench: NET_CONNS connections x NET_PIPELINE requests in flight) against
#       uringmq-broker (SEND_MESSAGE_V2), redis-server (ZADD, --appendonly yes --appendfsync
#       always) and beanstalkd (put, -b DIR -f 0: fsync every put). Targets: uringmq / redis
#       >= 10, uringmq / beanstalkd >= 100. Every server starts fresh (empty data dir under
#       $DATA, so all on the same disk) for each run and stops after it; NET_RUNS runs of each,
#       interleaved; medians. Written to bench/results/net.{md,dat}.
# NET_CONNS (16), NET_PIPELINE (32), NET_RUNS (3), NET_SECONDS (10, measuring window),
# NET_WARMUP (2), NET_SHARDS (0: the broker's default, one per CPU), NET_BYTES (128),
# NET_PERF (empty; a file name: `perf record -g` of the broker during run 1, kept there).
# The load generator and the servers share the machine's cores: say so next to the figures.
if want net; then
NET_CONNS=${NET_CONNS:-16}
NET_PIPELINE=${NET_PIPELINE:-32}
NET_RUNS=${NET_RUNS:-3}
NET_SECONDS=${NET_SECONDS:-10}
NET_WARMUP=${NET_WARMUP:-2}
NET_SHARDS=${NET_SHARDS:-0}
NET_BYTES=${NET_BYTES:-128}
NET_PERF=${NET_PERF:-}
netbench=$BUILD/bench/uringmq-net-bench
broker_exe=$BUILD/tools/uringmq-broker
for exe in "$netbench" "$broker_exe"; do
  [ -x "$exe" ] || {
    echo "compare.sh: $exe missing; build it:"
    echo "  cmake -S $root -B $BUILD -DCMAKE_BUILD_TYPE=Release &&" \
      "cmake --build $BUILD -j2 --target uringmq-net-bench uringmq-broker"
    exit 1
  }
done
for tool in redis-server beanstalkd python3; do
  command -v "$tool" >/dev/null || {
    echo "compare.sh: $tool missing: tools/install-deps.sh" \
      "(or apt-get install -y redis-server beanstalkd)"
    exit 1
  }
done
net_data=$(cd "$DATA" && pwd)/net
source "$here/broker_load.sh"  # server_stop, free_port, wait_port
trap 'server_stop; cleanup' EXIT
net_start() {  # net_start SYSTEM RUN: a fresh server; sets server_pid and net_port
  local sys=$1 run=$2
  rm -rf "$net_data"
  mkdir -p "$net_data"
  net_port=$(free_port)
  case $sys in
    uringmq)
      cat >"$net_data/broker.conf" <<CONF
storePathRootDir=$net_data/store
listenPort=$net_port
namesrvListenPort=0
shardCount=$NET_SHARDS
flushDiskType=SYNC_FLUSH
mappedFileSizeCommitLog=1073741824
defaultTopicQueueNums=8
logLevel=warn
CONF
      "$broker_exe" -c "$net_data/broker.conf" 2>"$raw/broker.$run.log" &
      server_pid=$! ;;
    redis)
      redis-server --port "$net_port" --bind 127.0.0.1 --appendonly yes --appendfsync always \
        --save "" --dir "$net_data" --logfile "$raw/redis.$run.log" --daemonize no &
      server_pid=$! ;;
    beanstalkd)
      beanstalkd -l 127.0.0.1 -p "$net_port" -b "$net_data" -f 0 2>"$raw/beanstalkd.$run.log" &
      server_pid=$! ;;
  esac
  wait_port "$net_port"
}
net_run() {  # net_run SYSTEM RUN: start, load, stop; the JSON kept as net_SYSTEM.RUN.json
  local sys=$1 run=$2 protocol perf_pid=""
  case $sys in uringmq) protocol=remoting ;; *) protocol=$sys ;; esac
  net_start "$sys" "$run"
  echo "  uringmq-net-bench $protocol (run $run) against $sys on port $net_port" >&2
  if [ "$sys" = uringmq ] && [ "$run" = 1 ] && [ -n "$NET_PERF" ]; then
    perf record -g -o "$NET_PERF" -p "$server_pid" -- sleep "$((NET_WARMUP + NET_SECONDS))" \
      >/dev/null 2>&1 &
    perf_pid=$!
  fi
  "$netbench" --protocol "$protocol" --port "$net_port" --connections "$NET_CONNS" \
    --pipeline "$NET_PIPELINE" --message-bytes "$NET_BYTES" --seconds "$NET_SECONDS" \
    --warmup-seconds "$NET_WARMUP" --json >"$raw/net_$sys.$run.json" ||
    echo "compare.sh: uringmq-net-bench against $sys (run $run) failed" >&2
  [ -n "$perf_pid" ] && wait "$perf_pid"
  cat "$raw/net_$sys.$run.json" >&2
  server_stop
  rm -rf "$net_data"
}
started6=$(date +%s)
for run in $(seq 1 "$NET_RUNS"); do
  for sys in uringmq redis beanstalkd; do net_run "$sys" "$run"; done
done
python3 - "$raw" "$NET_RUNS" "$results" "$NET_SHARDS" <<'PY'
import json, os, platform, statistics, sys
raw, runs, out, shards = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
systems = ("uringmq", "redis", "beanstalkd")
data = {}
for s in systems:
    data[s] = []
    for r in range(1, runs + 1):
        try:
            data[s].append(json.load(open(f"{raw}/net_{s}.{r}.json")))
        except (OSError, ValueError):
            print(f"compare.sh: no result for {s} run {r}")
def med(s, k):
    vals = [d[k] for d in data[s]]
    return statistics.median(vals) if vals else 0.0
d0 = next(d for s in systems for d in data[s])
rate = {s: med(s, "msgs_per_s") for s in systems}
rows = []
for s in systems:
    errs = sum(d["errors"] + d["unanswered"] for d in data[s])
    first = next((d["first_error"] for d in data[s] if d["first_error"]), "")
    runs_txt = ", ".join(f"{d['msgs_per_s']:.0f}" for d in data[s])
    rows.append(f"| {s} | {rate[s]:.0f} | {med(s, 'mb_per_s'):.2f} | {med(s, 'p50_us'):.0f} | "
                f"{med(s, 'p99_us'):.0f} | {errs}{' (' + first + ')' if first else ''} | "
                f"{med(s, 'client_cpu_us_per_msg'):.2f} | {runs_txt} |")
ratios = [("k_redis", "uringmq / redis ZADD appendfsync always", "redis", 10),
          ("k_beanstalkd", "uringmq / beanstalkd put -f 0", "beanstalkd", 100)]
rr = []
for key, fig, peer, target in ratios:
    r = rate["uringmq"] / rate[peer] if rate[peer] else float("inf")
    rr.append((key, fig, r, target, r >= target))
cores = os.cpu_count()
text = (f"Machine: {cores} cores, kernel {platform.release()}; "
        "load generator and server on the same "
        f"cores. {d0['connections']} connections x {d0['pipeline']} pipelined, "
        f"{d0['message_bytes']} B, "
        f"{d0['seconds']:.0f} s window after {d0['warmup_seconds']:.0f} s warm-up; "
        f"broker shardCount={shards} "
        f"(0 = one per CPU), SYNC_FLUSH. Median of {runs} runs, interleaved.\n\n"
        "| system | msgs/s | MB/s | p50 us | p99 us | errors | client CPU us/msg | runs msgs/s |\n"
        "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "| figure | ratio | target | met |\n|---|---|---|---|\n" +
        "".join(f"| (k) {fig} | {r:.2f} | >= {t} | {'yes' if m else 'no'} |\n"
                for _, fig, r, t, m in rr))
open(f"{out}/net.md", "w").write(text)
with open(f"{out}/net.dat", "w") as fh:
    fh.write("# key ratio target met\n")
    for key, _, r, t, m in rr:
        fh.write(f"{key} {r:.4f} {t} {'yes' if m else 'no'}\n")
    for s in systems:
        fh.write(f"# {s}_msgs_per_s {rate[s]:.1f}\n")
print(text)
PY
echo "compare.sh: wrote $results/net.md, net.dat; net section in" \
  "$(( $(date +%s) - started6 ))s" >&2
fi
want 4 || exit 0

# ---- Section 4: consume (cold read), recovery, dispatch lag ----
engine4() {  # engine4 NAME RUN ARGS...: like engine, without --seconds
  local name=$1 run=$2
  shift 2
  echo "  uringmq-bench $name (run $run): $*" >&2
  "$bench" --data "$DATA/engine" --segment-mib "$SEGMENT_MIB" --json "$@" >"$raw/$name.$run.json"
  rm -rf "$DATA/engine"
}
drop_cache() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
fio_read() {  # fio_read NAME RUN ARGS...: a direct read job on the shared read file
  local name=$1 run=$2
  shift 2
  echo "  fio $name (run $run): $*" >&2
  drop_cache
  fio --name="$name" --filename="$DATA/fio-read" --output-format=json --rw=read --direct=1 \
    --ioengine=io_uring "$@" >"$raw/$name.$run.json"
}
started4=$(date +%s)
# The file fio reads: the backlog's size, written once.
fio --name=layout --filename="$DATA/fio-read" --rw=write --bs=1m --size="${BACKLOG_MIB}m" \
  --ioengine=io_uring --direct=1 --iodepth=4 --output-format=json >/dev/null
read_bs=""
common4=(--message-bytes 1024 --shards 1 --producers 64 --queues 4)
for run in $(seq 1 "$RUNS"); do
  engine4 ci "$run" --workload consume --flush async "${common4[@]}" --backlog-mib "$BACKLOG_MIB"
  engine4 cr "$run" --workload consume --flush async "${common4[@]}" --backlog-mib "$BACKLOG_MIB" \
    --queue-run 256
  engine4 rec "$run" --workload recovery --flush async "${common4[@]}" \
    --recovery-mib "$RECOVERY_MIB"
  engine g_max "$run" --workload append --flush sync "${common4[@]}"
  max_rate=$(jf "$raw/g_max.$run.json" "d['append']['msgs_per_s']")
  half_rate=$(python3 -c "import sys; print(float(sys.argv[1])/2)" "$max_rate")
  engine4 g50 "$run" --workload lag --flush sync "${common4[@]}" --rate "$half_rate" \
    --seconds "$BENCH_SECONDS"
  engine4 g100 "$run" --workload lag --flush sync "${common4[@]}" --rate "$max_rate" \
    --seconds "$BENCH_SECONDS"
  if [ -z "$read_bs" ]; then
    read_bs=$(pow2_block "$(jf "$raw/ci.1.json" "d['consume']['avg_read_bytes']")")
    readr_bs=$(pow2_block "$(jf "$raw/cr.1.json" "d['consume']['avg_read_bytes']")")
    scanned=$(jf "$raw/rec.1.json" "d['recovery']['bytes_scanned']")
    scan_mib=$(python3 -c "import sys; print(max(4, int(sys.argv[1]) >> 20))" "$scanned")
    echo "  engine reads $(jf "$raw/ci.1.json" "round(d['consume']['avg_read_bytes'])") B" \
         "(4 queues interleaved): fio bs=$read_bs;" \
         "$(jf "$raw/cr.1.json" "round(d['consume']['avg_read_bytes'])") B" \
         "(queue runs of 256): fio bs=$readr_bs;" \
         "recovery scanned $scanned B: fio reads ${scan_mib} MiB" >&2
  fi
  fio_read rd "$run" --bs="$read_bs" --iodepth=8
  fio_read rdr "$run" --bs="$readr_bs" --iodepth=8
  fio_read rd1m "$run" --bs=1m --iodepth=8
  fio_read scan "$run" --bs=4m --iodepth=1 --size="${scan_mib}m"
done
rm -f "$DATA/fio-read"

python3 - "$raw" "$RUNS" "$results" "$read_bs" "$readr_bs" "$BACKLOG_MIB" <<'EOF'
import json, statistics, sys
raw, runs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
read_bs, readr_bs, backlog_mib = sys.argv[4:7]
def load(name):
    return [json.load(open(f"{raw}/{name}.{r}.json")) for r in range(1, runs + 1)]
def get(name, *path):
    vals = []
    for d in load(name):
        for p in path:
            d = d[p]
        vals.append(d)
    return statistics.median(vals)
def fio_read_mb(name):
    return statistics.median([d["jobs"][0]["read"]["bw_bytes"] / 1e6 for d in load(name)])
def fio_read_s(name):
    return statistics.median([d["jobs"][0]["read"]["io_bytes"] / d["jobs"][0]["read"]["bw_bytes"]
                              for d in load(name)])
for name in ("ci", "cr", "g50", "g100"):
    bad = [i + 1 for i, d in enumerate(load(name)) if not d["ok"]]
    if bad:
        print(f"compare.sh: {name} runs {bad} did not check out (see their JSON)")
machine = load("ci")[0]["machine"]
rows = []  # key, figure, measured, reference, ratio, target, met
e = get("ci", "consume", "mb_per_s"); f = fio_read_mb("rd")
rows.append(("e", f"(e) cold read of a {backlog_mib} MiB backlog, 4 queues interleaved, MB/s / "
             f"fio direct seq read bs {read_bs} QD8",
             f"{e:.1f} MB/s", f"{f:.1f} MB/s", e / f, ">= 0.85", e / f >= 0.85))
e2 = get("cr", "consume", "mb_per_s"); f2 = fio_read_mb("rdr")
rows.append(("e_runs",
             f"(e) same, queue runs of 256 (one log read per pull) / fio bs {readr_bs} QD8",
             f"{e2:.1f} MB/s", f"{f2:.1f} MB/s", e2 / f2, ">= 0.85", e2 / f2 >= 0.85))
f3 = fio_read_mb("rd1m")
rows.append(("e_1m", "(e') interleaved cold read / fio bs 1m QD8 (device ceiling, no target)",
             f"{e:.1f} MB/s", f"{f3:.1f} MB/s", e / f3, "(info)", None))
o = get("rec", "recovery", "open_s")
sc = get("rec", "recovery", "recovery_s")
fs = fio_read_s("scan")
scanned = get("rec", "recovery", "bytes_scanned")
rows.append(("f", "(f) recovery after SIGKILL: Store::open s / fio s to read the "
             f"{scanned / 2**20:.0f} MiB scanned (bs 4m QD1)",
             f"{o:.3f} s", f"{fs:.3f} s", o / fs, "<= 1.5", o / fs <= 1.5))
rows.append(("f_scan", "(f) same, the CommitLog scan alone (RecoveryReport::duration_ns) / fio",
             f"{sc:.3f} s", f"{fs:.3f} s", sc / fs, "(info)", None))
for name, pct, limit in (("g50", 50, 1.0), ("g100", 100, 10.0)):
    p99 = get(name, "lag", "p99_us") / 1e3
    rate = get(name, "rate"); ach = get(name, "achieved_rate")
    rows.append((name, f"(g) dispatch lag p99 at {pct}% of the SYNC append maximum "
                 f"({rate:.0f} msgs/s asked, {ach:.0f} achieved)",
                 f"{p99:.3f} ms", "-", p99 / limit, f"<= {limit:g} ms", p99 <= limit))
extra = {
    "consume_interleaved_avg_read_bytes": get("ci", "consume", "avg_read_bytes"),
    "consume_runs_avg_read_bytes": get("cr", "consume", "avg_read_bytes"),
    "consume_interleaved_s": get("ci", "consume", "seconds"),
    "consume_interleaved_cpu_s": get("ci", "consume", "cpu_s"),
    "consume_interleaved_busy_pulls": get("ci", "consume", "busy"),
    "reopen_after_clean_close_s": get("ci", "recovery", "open_s"),
    "recovery_bytes_scanned": scanned,
    "fio_scan_mb_per_s": fio_read_mb("scan"),
    "lag50_p50_us": get("g50", "lag", "p50_us"), "lag50_p999_us": get("g50", "lag", "p999_us"),
    "lag50_max_us": get("g50", "lag", "max_us"),
    "lag100_p50_us": get("g100", "lag", "p50_us"), "lag100_p999_us": get("g100", "lag", "p999_us"),
    "lag100_max_us": get("g100", "lag", "max_us"),
    "send_to_ack_p99_us_at_50": get("g50", "ack", "p99_us"),
    "send_to_ack_p99_us_at_100": get("g100", "ack", "p99_us"),
}
def yes(m):
    return "-" if m is None else ("yes" if m else "no")
table = ("| figure | measured | reference | ratio | target | met |\n"
         "|---|---|---|---|---|---|\n") + "".join(
    f"| {fig} | {n} | {d} | {r:.3f} | {t} | {yes(m)} |\n" for _, fig, n, d, r, t, m in rows)
machine_line = (f"{machine['cores']} cores, {machine['cpu']}, kernel {machine['kernel']}, "
                f"{machine['fs']} (data dir)")
text = (f"Machine: {machine_line}. Median of {runs} runs each.\n\n" + table +
        "\nOther figures (medians):\n\n" + "".join(f"- {k}: {v:.1f}\n" for k, v in extra.items()))
open(f"{out}/consume.md", "w").write(text)
with open(f"{out}/consume.dat", "w") as fh:
    fh.write("# key ratio met measured reference\n")
    for key, _, n, d, r, t, m in rows:
        fh.write(f"{key} {r:.4f} {yes(m)} \"{n}\" \"{d}\"\n")
print(text)
EOF
echo "compare.sh: wrote $results/consume.md, consume.dat; consume section in" \
  "$(( $(date +%s) - started4 ))s" >&2
