#!/usr/bin/env bash
# The replication fault campaign (tests/faults/README.md): one run per seed of
# campaign_run.py (namespaces, brokers, load, faults, failover, final reads), each judged by
# campaign_check.py; one verdict line per seed, then the totals. A seed that fails keeps its
# work dir and prints the command that reproduces it; a passing seed's dir is removed.
# Usage: tests/faults/campaign.sh --seeds A-B [--planted [--expect-violations]]
#          [--master-impl uringmq|java] [--slave-impl uringmq|java]
#          [--broker PATH] [--ctl PATH] [--client PATH] [--faultfs PATH|none] [--work DIR]
#   --planted            the master runs with the planted early-acknowledgement bug
#   --master-impl/--slave-impl java: that broker is RocketMQ 4.9.8 (tools/rocketmq-java.sh)
#   --faultfs            uringmq-faultfs (default build/tests/, used where built): adds the
#                        disk faults; a seed's schedule depends on whether they are in
#   --expect-violations  exit 0 only when the checker reports violations for every seed (the
#                        proof that the checker can fail)
# Exit: 0 all seeds as expected; 1 otherwise; 77 when not root or `ip netns` / nft is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seeds=1-3
planted=()
impls=()
expect_violations=0
broker=$root/build/tools/uringmq-broker
ctl=$root/build/tools/uringmq-ctl
client=$root/build/tests/uringmq-campaign-client
faultfs=$root/build/tests/uringmq-faultfs
work=${TMPDIR:-/tmp}/uringmq-campaign-$$
while [ $# -gt 0 ]; do
  case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --planted) planted=(--planted); shift ;;
    --master-impl|--slave-impl) impls+=("$1" "$2"); shift 2 ;;
    --expect-violations) expect_violations=1; shift ;;
    --broker) broker=$2; shift 2 ;;
    --ctl) ctl=$2; shift 2 ;;
    --client) client=$2; shift 2 ;;
    --faultfs) faultfs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "campaign.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

skip() { echo "campaign.sh: SKIPPED: $1"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, nftables)"
command -v ip > /dev/null || skip "no ip (iproute2)"
command -v nft > /dev/null || skip "no nft (apt-get install nftables)"
probe=umqf-probe-$$
ip netns add "$probe" 2> /dev/null || skip "ip netns add failed (no network namespaces here)"
nft_ok=0
ip netns exec "$probe" nft add table inet probe 2> /dev/null && nft_ok=1
ip netns del "$probe"
[ "$nft_ok" = 1 ] || skip "nft cannot add a table inside a network namespace"
if [[ " ${impls[*]} " == *" java "* ]]; then
  "$root/tools/find-rocketmq-java.sh" > /dev/null 2>&1 ||
    skip "no RocketMQ Java distribution (tools/find-rocketmq-java.sh)"
  command -v java > /dev/null || skip "no java"
fi
for f in "$broker" "$ctl" "$client"; do
  [ -x "$f" ] || { echo "campaign.sh: $f is not built" >&2; exit 2; }
done

# Disk faults where uringmq-faultfs is built and FUSE works here; `--faultfs none`: without.
disk=()
if [ "$faultfs" = none ]; then
  echo "campaign.sh: no disk faults (--faultfs none)"
elif [ -x "$faultfs" ] && [ -c /dev/fuse ]; then
  disk=(--faultfs "$faultfs")
else
  echo "campaign.sh: no disk faults (no uringmq-faultfs at $faultfs, or no /dev/fuse)"
fi

first=${seeds%-*}
last=${seeds#*-}
mkdir -p "$work"
summary=$work/summary.txt
: > "$summary"
started=$(date +%s)
unexpected=0
run_pid=
# A run cleans up after itself on SIGTERM/SIGINT (its namespaces, their nft tables, brokers).
trap '[ -n "$run_pid" ] && kill -TERM "$run_pid" 2> /dev/null && wait "$run_pid"; exit 1' \
  TERM INT HUP
for seed in $(seq "$first" "$last"); do
  dir=$work/seed-$seed
  python3 "$here/campaign_run.py" --seed "$seed" --work "$dir" --broker "$broker" \
    --ctl "$ctl" --client "$client" "${planted[@]}" "${impls[@]}" \
    "${disk[@]}" 2> "$work/seed-$seed.err" &
  run_pid=$!
  wait "$run_pid"
  run_pid=
  line=$(python3 "$here/campaign_check.py" "$dir/history.txt" --seed "$seed")
  status=$?
  echo "$line" | head -1 >> "$summary"
  echo "$line" | head -1
  want=0
  [ "$expect_violations" = 1 ] && want=1
  if [ "$status" = "$want" ]; then
    [ "$expect_violations" = 1 ] && echo "$line" | sed -n '2,4p'
    rm -rf "$dir" "$work/seed-$seed.err"
    continue
  fi
  unexpected=$((unexpected + 1))
  echo "$line" | tail -n +2
  cat "$work/seed-$seed.err" 2> /dev/null | tail -5
  echo "  kept $dir; reproduce: $here/campaign.sh --seeds $seed-$seed ${planted[*]} ${impls[*]}" \
    "--broker $broker --ctl $ctl --client $client --faultfs ${disk[1]:-none}" \
    "--work $work-repro"
done

python3 - "$summary" "$(($(date +%s) - started))" <<'EOF'
import collections, sys
runs, totals, faults = collections.Counter(), collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    words = line.split()
    if not words:
        continue
    runs[words[0]] += 1
    for kv in words[1:]:
        k, _, v = kv.partition("=")
        if k == "faults":
            for kind in v.split(",") if v != "-" else []:
                name, _, n = kind.partition(":")
                faults[name] += int(n)
        elif k != "seed":
            totals[k] += int(v)
print("campaign: %d seeds (%s) in %s s" % (sum(runs.values()),
      " ".join("%s=%d" % kv for kv in sorted(runs.items())), sys.argv[2]))
print("campaign: " + " ".join("%s=%d" % kv for kv in totals.items()))
print("campaign: faults " + " ".join("%s=%d" % kv for kv in sorted(faults.items())))
EOF
[ "$unexpected" = 0 ] && rm -f "$summary" && rmdir "$work" 2> /dev/null
if [ "$unexpected" != 0 ]; then
  echo "campaign.sh: $unexpected seed(s) not as expected (work dir $work)"
  exit 1
fi
exit 0
