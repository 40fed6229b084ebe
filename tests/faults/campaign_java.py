#!/usr/bin/env python3
"""The replication fault campaign with a RocketMQ 4.9.8 Java peer, the master restarted in place
(tests/faults/README.md, "The Java peer, master restarted in place").

Variants: `java-slave` (uringmq SYNC_MASTER in M, a Java SLAVE in S) and `java-master` (a Java
SYNC_MASTER in M, a uringmq SLAVE in S). Each seed runs campaign_run.Run's topology, brokers,
load and fault schedule (the same draws as campaign.sh's seed); for the seeds that kill M with
-9 (after a master-to-slave partition for half of them), instead of promoting S this driver
  1. reads every queue of S while M is dead and the partition still holds (label `fd`: what a
     client gets from the slave once the master's machine is gone; the partition keeps the
     dead process's kernel from delivering its socket's tail late),
  2. heals, restarts M in place as the same SYNC_MASTER (RocketMQ's everyday recovery: no
     promotion), waits for S to stream from it again, runs a second load of 1.2 s,
  3. waits for S to catch up, reads both (fm, fs) and compares the CommitLogs (campaign_run).
The checker is campaign_check.Checker plus one property: every SEND_OK of the first load is in
`fd` at the queue offset its answer gave; `fd` counts as a slave's read (it must be in `fm`).
Without a kill no promotion ever happens, so 11 and 12 answers must be in `fm` (**stored**).
Usage: campaign_java.py --seeds A-B [--variants java-slave,java-master] [--planted
[--expect-violations]] [--broker B --ctl C --client X] [--work DIR] [--keep]
Exit: 0 every seed as expected, 1 otherwise, 77 when it cannot run here (not root, no `ip
netns`, no nft, no Java distribution or java), 2 on a usage error.
"""

import argparse
import collections
import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types

import campaign_check
import campaign_run as cr

VARIANTS = {"java-slave": ("uringmq", "java"), "java-master": ("java", "uringmq")}
# The slave's read while its master is dead is a slave's read for the checker's **slave**.
campaign_check.SLAVE_LABELS = campaign_check.SLAVE_LABELS + ("fd",)


class RestartRun(cr.Run):
    """One seed: campaign_run.Run's pieces; a killed master is restarted, never replaced."""

    def marks(self):
        """How often the uringmq side logged a slave streaming, over all its starts: the
        uringmq master logs each slave's first report, a uringmq slave each connection."""
        role, text = ("M", " asked for offset ") if self.impl["M"] == "uringmq" \
            else ("S", " connected to master ")
        n = 0
        for i in range(self.starts(role)):
            with open(os.path.join(self.work, "%s-%d.log" % (role, i)), errors="replace") as f:
                n += f.read().count(text)
        return n

    def wait_marks(self, above, bound_s=30):
        t0 = time.time()
        while time.time() - t0 < bound_s:
            if self.marks() > above:
                return
            time.sleep(0.05)
        raise RuntimeError("the slave did not stream from the restarted master in %d s" % bound_s)

    def settle(self, bound_s=10):
        """Waits until the slave's log end stops moving (its master is dead), then a moment
        for its ConsumeQueues (a Java slave dispatches on its own thread)."""
        last, t0 = None, time.time()
        while time.time() - t0 < bound_s:
            _, out = self.ctl("c", "ha", "lag", "--master", "%s:%d" % (cr.M_FOR_C, cr.PORT),
                              "--slave", "%s:%d" % (cr.S_FOR_C, cr.PORT))
            m = re.search(r"slave \S+: commitLogMaxOffset (\d+)", out)
            end = int(m.group(1)) if m else None
            if end is not None and end == last:
                break
            last = end
            time.sleep(0.3)
        time.sleep(0.3)
        self.log("masterdown slave end=%s" % last)

    def master_down(self):
        """M was killed with -9 at the end of the load: the slave's read, then M restarted."""
        self.settle()
        self.client("read", "--addr", "%s:%d" % (cr.S_FOR_C, cr.PORT), "--label", "fd")
        before = self.marks()
        self.stopped.discard("M")
        self.heal(restart=False)
        self.start("M")
        self.log("masterdown restarted M in place")
        self.wait_marks(before)

    def main(self):
        # The draws of campaign_run.Run.main, in its order: seed N has campaign.sh's schedule.
        kill_master = self.a.planted or self.rng.random() < 0.5
        kill_at = cr.LOAD_MS - 300
        faults = self.schedule(kill_at - 1300 if kill_master else cr.LOAD_MS - 700)
        partition_first = self.a.planted or self.rng.random() < 0.5
        kill = (kill_at, partition_first) if kill_master else None
        self.log("run seed=%d planted=%d failover=0 restart=%d m=%s s=%s" % (
            self.a.seed, self.a.planted, kill_master, self.impl["M"], self.impl["S"]))
        self.topology()
        self.conf("M")
        self.conf("S", slave_of="%s:%d" % (cr.M_FOR_S, cr.HA_PORT))
        self.start("M")
        if self.impl["S"] == "java":   # before S starts: its first SlaveSynchronize copies it
            self.ctl("c", "topic", "create", "--addr", "%s:%d" % (cr.M_FOR_C, cr.PORT), "-t",
                     cr.TOPIC, "-r", "4", "-w", "4")
        self.start("S")
        self.wait_replicating("M", "S")
        if self.impl["S"] == "java":
            # A Java slave serves a topic's pulls once its SlaveSynchronize (3 s after its
            # start, then every 10 s, from a live master) copied it: the read while the
            # master is dead needs it.
            self.wait_topic("S")
        self.load("e0", cr.M_FOR_C, cr.S_FOR_C, "m0", "s0", cr.LOAD_MS, faults, kill)
        if kill_master:
            self.master_down()
            self.load("e1", cr.M_FOR_C, cr.S_FOR_C, "m1", "s1", 1200)
        else:
            self.heal()
        return self.final(cr.M_FOR_C, cr.S_FOR_C, "M", "S")


class Checker(campaign_check.Checker):
    """campaign_check's properties, and every SEND_OK of the first load in `fd`."""

    def check_acked(self):
        super().check_acked()
        if not any(d[:2] == ["masterdown", "slave"] for d in self.h.driver):
            return
        fm, fs, fd = (self.logs.get(x, {}) for x in ("fm", "fs", "fd"))
        lost = set()
        for key in sorted(self.acked):
            _, q, off = self.h.answers[key]
            if fm.get((q, off)) != key or fs.get((q, off)) != key:
                lost.add(key)   # counted by campaign_check already
            elif key.startswith("e0-") and fd.get((q, off)) != key:
                lost.add(key)
                self.bad("lost", "SEND_OK %s at queue %d offset %d: the slave, its master "
                         "dead, holds %s" % (key, q, off, fd.get((q, off), "nothing")))
        self.lost_keys = max(self.lost_keys, len(lost))


def run_seed(a, variant, seed, work):
    """One seed in this process: 0 when it ran to the end, 3 when the driver failed."""
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    m, s = VARIANTS[variant]
    args = types.SimpleNamespace(seed=seed, work=work, broker=a.broker, ctl=a.ctl,
                                 client=a.client, planted=a.planted, master_impl=m,
                                 slave_impl=s, faultfs=None)
    run = RestartRun(args)
    try:
        run.main()
        run.log("end")
        return 0
    except Exception as e:  # a driver failure: the seed is void, the verdict says so
        run.log("driver-error %s" % str(e).replace("\n", " "))
        return 3
    finally:
        run.cleanup()


def judge(variant, seed, history):
    """campaign_check's verdict of one history: (exit status, its lines, variant added)."""
    h = campaign_check.History(history)
    c = Checker(h)
    c.run()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = campaign_check.verdict(h, c, seed)
    state, _, rest = out.getvalue().partition(" ")
    return status, ("%s variant=%s %s" % (state, variant, rest)).rstrip("\n").splitlines()


def totals(lines, seconds):
    """The campaign's totals, one line of sums and one of faults per variant."""
    runs = collections.Counter()
    sums = collections.defaultdict(collections.Counter)
    faults = collections.defaultdict(collections.Counter)
    for line in lines:
        words = line.split()
        variant = words[1].partition("=")[2]
        runs["%s %s" % (variant, words[0])] += 1
        for k, _, v in (w.partition("=") for w in words[2:]):
            if k == "faults":
                for kind in v.split(",") if v != "-" else []:
                    faults[variant][kind.partition(":")[0]] += int(kind.partition(":")[2])
            elif k != "seed":
                sums[variant][k] += int(v)
    print("campaign_java: %d seeds (%s) in %d s" % (
        len(lines), ", ".join("%s=%d" % kv for kv in sorted(runs.items())), seconds))
    for variant in sorted(sums):
        print("campaign_java: %s %s" % (variant, " ".join(
            "%s=%d" % kv for kv in sums[variant].items())))
        print("campaign_java: %s faults %s" % (variant, " ".join(
            "%s=%d" % kv for kv in sorted(faults[variant].items()))))


def skip_reason():
    """Why the campaign cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables)"
    for tool in ("ip", "nft", "java"):
        if shutil.which(tool) is None:
            return "no %s" % tool
    probe = "umqj-probe-%d" % os.getpid()
    if subprocess.run(["ip", "netns", "add", probe], stderr=subprocess.DEVNULL).returncode:
        return "ip netns add failed (no network namespaces here)"
    nft = subprocess.run(["ip", "netns", "exec", probe, "nft", "add", "table", "inet", "probe"],
                         stderr=subprocess.DEVNULL).returncode
    subprocess.run(["ip", "netns", "del", probe])
    if nft:
        return "nft cannot add a table inside a network namespace"
    if subprocess.run([os.path.join(cr.ROOT, "tools", "find-rocketmq-java.sh")],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
        return "no RocketMQ 4.9.8 Java distribution (tools/find-rocketmq-java.sh)"
    return None


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1-2", help="A-B")
    p.add_argument("--variants", default="java-slave,java-master")
    p.add_argument("--planted", action="store_true",
                   help="the uringmq master acknowledges early (java-slave only)")
    p.add_argument("--expect-violations", action="store_true",
                   help="every seed must fail the checker (the proof that it can)")
    p.add_argument("--broker", default=os.path.join(cr.ROOT, "build/tools/uringmq-broker"))
    p.add_argument("--ctl", default=os.path.join(cr.ROOT, "build/tools/uringmq-ctl"))
    p.add_argument("--client",
                   default=os.path.join(cr.ROOT, "build/tests/uringmq-campaign-client"))
    p.add_argument("--keep", action="store_true", help="keep every seed's work dir")
    p.add_argument("--work", default="/tmp/uringmq-campaign-java-%d" % os.getpid())
    a = p.parse_args()
    a.variants = a.variants.split(",")
    if any(v not in VARIANTS for v in a.variants) or not re.fullmatch(r"\d+-\d+", a.seeds):
        p.error("--variants takes %s; --seeds A-B" % ",".join(VARIANTS))
    if a.planted and a.variants != ["java-slave"]:
        p.error("--planted needs a uringmq master: --variants java-slave")
    return a


def main():
    a = parse()
    why = skip_reason()
    if why:
        print("campaign_java: SKIPPED: " + why)
        return 77
    for f in (a.broker, a.ctl, a.client):
        if not os.access(f, os.X_OK):
            print("campaign_java: %s is not built" % f, file=sys.stderr)
            return 2

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)   # the running seed cleans up in its finally

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    first, last = (int(x) for x in a.seeds.split("-"))
    started, lines, unexpected = time.time(), [], 0
    for variant in a.variants:
        for seed in range(first, last + 1):
            work = os.path.join(a.work, "%s-seed-%d" % (variant, seed))
            run_seed(a, variant, seed, work)
            status, out = judge(variant, seed, os.path.join(work, "history.txt"))
            lines.append(out[0])
            print(out[0], flush=True)
            if status == (1 if a.expect_violations else 0):
                if a.expect_violations:
                    print("\n".join(out[1:4]))
                if not a.keep:
                    shutil.rmtree(work)
                continue
            unexpected += 1
            print("\n".join(out[1:]))
            print("  kept %s; reproduce: %s --variants %s --seeds %d-%d%s --work %s-repro"
                  % (work, os.path.abspath(__file__), variant, seed, seed,
                     " --planted" if a.planted else "", a.work), flush=True)
    totals(lines, time.time() - started)
    if unexpected:
        print("campaign_java: %d seed(s) not as expected (work dir %s)" % (unexpected, a.work))
        return 1
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
