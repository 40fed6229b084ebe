#!/usr/bin/env python3
"""One run (one seed) of the replication fault campaign (tests/faults/README.md).

Builds three network namespaces (master M, slave S, clients C) joined by one veth pair per link,
starts a uringmq SYNC_MASTER in M and its SLAVE in S, runs the workload client in C while a
schedule of faults drawn from the seed is applied (nftables rules inside the namespaces, links
set down, SIGSTOP/SIGCONT, kill -9 and restart, with --faultfs a failing or slow disk), heals,
waits for the slave to catch up, runs the failover runbook for some seeds (kill -9 of M,
`ha lag`, S promoted, `ha rejoin` of M, M restarted as S's slave, a second load), reads
everything from both brokers and compares their CommitLogs. Everything goes to
<work>/history.txt; campaign_check.py judges it.
Cleanup (processes, namespaces and with them their nft tables and veths) runs on every exit,
SIGTERM and SIGINT included. Usage: campaign_run.py --seed N --work DIR --broker B --ctl C
--client X [--planted] [--master-impl java] [--slave-impl java] [--faultfs F]
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import campaign_disk

PORT = 10911
HA_PORT = PORT + 1
# (namespace, interface, address, peer namespace, peer interface, peer address) per link.
LINKS = [("m", "ms0", "10.77.1.1", "s", "sm0", "10.77.1.2"),
         ("m", "mc0", "10.77.2.1", "c", "cm0", "10.77.2.2"),
         ("s", "sc0", "10.77.3.1", "c", "cs0", "10.77.3.2")]
M_FOR_S, S_FOR_M = "10.77.1.1", "10.77.1.2"   # addresses on the replication link
M_FOR_C, S_FOR_C = "10.77.2.1", "10.77.3.1"   # addresses the clients reach
C_IP_M = "10.77.2.2"                          # the clients' address on the master's link
FAULT_KINDS = ["part_ms", "part_m2s", "part_s2m", "part_cm", "loss", "link_down",
               "pause_m", "pause_s", "kill_m", "kill_s"]
LOAD_MS = 4000
TOPIC = "CampaignTopic"   # the client's default
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A Java broker refuses sends from 90% disk use and deletes CommitLog files early from 85%
# (system properties its store reads); the campaign is not about a full disk (as
# tests/support/java_lib.sh).
JAVA_DISK_RATIOS = ("-Drocketmq.broker.diskSpaceWarningLevelRatio=0.99 "
                    "-Drocketmq.broker.diskSpaceCleanForciblyRatio=0.99")


def now_us():
    return int(time.time() * 1_000_000)


class Run:
    """The namespaces, brokers and history of one seed."""

    def __init__(self, args):
        self.a = args
        self.rng = random.Random(args.seed)
        self.work = args.work
        tag = "umqf%d-%d" % (os.getpid(), args.seed)
        self.ns = {k: "%s-%s" % (tag, k) for k in ("m", "s", "c")}
        self.procs = {}     # role name -> Popen of a broker
        self.stopped = set()
        self.clients = []   # Popen of every workload client started
        self.impl = {"M": args.master_impl, "S": args.slave_impl}   # role -> uringmq | java
        # Disk faults under the uringmq brokers only (a Java broker's mmap'd files are not
        # put on FUSE).
        self.disks = campaign_disk.Disks(args.faultfs, self.work, self.log) \
            if args.faultfs else None
        self.kinds = FAULT_KINDS + [k for k in campaign_disk.KINDS if self.disks
                                    and self.impl[k[-1].upper()] == "uringmq"]
        self.history = open(os.path.join(self.work, "history.txt"), "a")

    # ---- plumbing -------------------------------------------------------------------------
    def log(self, text):
        self.history.write("%d driver %s\n" % (now_us(), text))
        self.history.flush()

    def sh(self, *cmd, check=True, ns=None, timeout=60, capture=False):
        full = (["ip", "netns", "exec", self.ns[ns]] if ns else []) + list(cmd)
        r = subprocess.run(full, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                           stderr=subprocess.STDOUT if capture else subprocess.DEVNULL,
                           text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError("failed (%d): %s" % (r.returncode, " ".join(full)))
        return r

    def topology(self):
        for name in self.ns.values():
            self.sh("ip", "netns", "add", name)
            self.sh("ip", "-n", name, "link", "set", "lo", "up")
        for a, ia, aa, b, ib, ab in LINKS:
            self.sh("ip", "-n", self.ns[a], "link", "add", ia, "type", "veth", "peer", "name",
                    ib, "netns", self.ns[b])
            for n, i, addr in ((a, ia, aa), (b, ib, ab)):
                self.sh("ip", "-n", self.ns[n], "addr", "add", addr + "/24", "dev", i)
                self.sh("ip", "-n", self.ns[n], "link", "set", i, "up")
        for role in ("M", "S") if self.disks else []:
            if self.impl[role] == "uringmq":
                self.disks.mount(role)
        for n in ("m", "s"):
            self.nft(n, "add table inet campaign")
            for hook in ("input", "output"):
                self.nft(n, "add chain inet campaign %s { type filter hook %s priority 0; }"
                         % (hook, hook))

    def nft(self, n, rule):
        self.sh("nft", rule, ns=n)

    def cleanup(self):
        for p in self.clients:
            if p.poll() is None:
                p.kill()
                p.wait()
        for name, p in list(self.procs.items()):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()
        if self.disks:
            self.disks.unmount_all()
        for name in self.ns.values():
            subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)

    # ---- brokers --------------------------------------------------------------------------
    def conf(self, role, slave_of=None):
        """Writes <work>/<role>.conf; slave_of: the master's HA address (a SLAVE) or None (a
        SYNC_MASTER)."""
        store = os.path.join(self.work, role, "store")
        os.makedirs(store, exist_ok=True)
        ip = M_FOR_S if role == "M" else S_FOR_M   # reachable from the other broker
        lines = ["brokerClusterName=Campaign", "brokerName=broker-f", "listenPort=%d" % PORT,
                 "storePathRootDir=" + store, "brokerIP1=" + ip, "flushDiskType=SYNC_FLUSH",
                 "mappedFileSizeCommitLog=1048576", "maxMessageSize=65536",
                 "haSendHeartbeatInterval=500", "haHousekeepingInterval=3000"]
        if slave_of:
            lines += ["brokerId=1", "brokerRole=SLAVE", "haMasterAddress=" + slave_of]
        else:
            lines += ["brokerId=0", "brokerRole=SYNC_MASTER"]
        if self.impl[role] == "java":
            # Java learns its master (SlaveSynchronize: the topic table) from a NameServer:
            # the uringmq master's built-in one.
            lines += ["storePathCommitLog=" + os.path.join(store, "commitlog"),
                      "mappedFileSizeConsumeQueue=60000", "syncFlushTimeout=1000",
                      "diskMaxUsedSpaceRatio=99"]
            if slave_of and self.impl["M"] == "uringmq":
                lines += ["namesrvAddr=%s:9876" % M_FOR_S]
        else:
            java_slave = self.impl["S"] == "java" and role == "M" and not slave_of
            lines += ["bindAddress=0.0.0.0", "shardCount=1", "defaultTopicQueueNums=4",
                      "diskSpaceWarningLevelRatio=100", "slaveTimeout=1000",
                      "namesrvListenPort=%d" % (9876 if java_slave else 0)]
        path = os.path.join(self.work, role + ".conf")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def command(self, role):
        conf = os.path.join(self.work, role + ".conf")
        if self.impl[role] == "java":
            return [os.path.join(ROOT, "tools", "rocketmq-java.sh"), "broker", conf,
                    os.path.join(self.work, role)], "boot success", 90
        return [self.a.broker, "-c", conf], " ready: ", 20

    def starts(self, role):
        """How many times `role` was started: its logs are <role>-<n>.log."""
        return len([x for x in os.listdir(self.work)
                    if x.startswith(role + "-") and x[2:-4].isdigit() and x.endswith(".log")])

    def start(self, role):
        """Starts broker `role` (M or S) in its namespace and waits for its ready line."""
        n = role.lower()
        starts = self.starts(role)
        err = os.path.join(self.work, "%s-%d.log" % (role, starts))
        env = dict(os.environ)
        env.pop("URINGMQ_TEST_PLANT_EARLY_ACK", None)
        if self.a.planted:
            env["URINGMQ_TEST_PLANT_EARLY_ACK"] = "1"
        # No hsperfdata file: a JVM killed with -9 would leave its /tmp/hsperfdata_<user>/<pid>.
        env.update({"BROKER_HEAP": "-Xms256m -Xmx256m -Xmn128m", "BROKER_DIRECT": "256m",
                    "BROKER_PRETOUCH": "0",
                    "JAVA_OPT_EXT": "-XX:-UsePerfData " + JAVA_DISK_RATIOS})
        cmd, ready, wait_s = self.command(role)
        with open(err, "w") as f:
            p = subprocess.Popen(["ip", "netns", "exec", self.ns[n]] + cmd,
                                 stdout=f, stderr=subprocess.STDOUT, env=env)
        self.procs[role] = p
        self.stopped.discard(role)
        deadline = time.time() + wait_s
        while time.time() < deadline:
            with open(err, errors="replace") as f:
                if ready in f.read():
                    self.log("start %s pid=%d" % (role, p.pid))
                    return
            if p.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError("broker %s did not start: see %s" % (role, err))

    def wait_replicating(self, master, slave, bound_s=30):
        """Waits until the slave's first report reached the master (a uringmq master logs it;
        under a Java master the uringmq slave logs its connection), so that an empty slave
        starts at offset 0, not at the newest segment of a log already loaded."""
        role, text = (master, " asked for offset ") if self.impl[master] == "uringmq" \
            else (slave, " connected to master ")
        t0 = time.time()
        while time.time() - t0 < bound_s:
            n = self.starts(role)
            log = os.path.join(self.work, "%s-%d.log" % (role, n - 1))   # its latest start
            if text in open(log, errors="replace").read():
                return
            time.sleep(0.05)
        raise RuntimeError("the slave did not connect to its master in %d s" % bound_s)

    def signal(self, role, sig):
        p = self.procs.get(role)
        if p is not None and p.poll() is None:
            os.kill(p.pid, sig)

    def kill9(self, role):
        p = self.procs.pop(role, None)
        if p is not None:
            self.signal_proc(p, signal.SIGKILL)
        self.stopped.add(role)

    def stop(self, role):
        p = self.procs.pop(role, None)
        if p is not None:
            rc = self.signal_proc(p, signal.SIGTERM)
            self.log("stop %s rc=%d impl=%s" % (role, rc, self.impl[role]))
        self.stopped.add(role)

    @staticmethod
    def signal_proc(p, sig):
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            os.kill(p.pid, sig)
        try:
            return p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            return -999   # did not stop within 30 s

    # ---- faults ---------------------------------------------------------------------------
    def schedule(self, end_ms):
        """The seed's faults, all healed by end_ms: (start ms into the load, [(kind,
        parameter)], duration ms), one after the other; a quarter of them two kinds at once
        (e.g. loss on the replication link while the slave is paused), healed together."""
        faults, t = [], 400 + self.rng.randrange(400)
        for _ in range(self.rng.randint(1, 3)):
            kinds = [self.rng.choice(self.kinds)]
            if self.rng.random() < 0.25:
                kinds.append(self.rng.choice([k for k in self.kinds if k != kinds[0]]))
            duration = 300 + self.rng.randrange(1200)
            if t + duration > end_ms:
                break
            faults.append((t, [(k, self.parameter(k)) for k in kinds], duration))
            t += duration + 200 + self.rng.randrange(400)
        return faults

    def parameter(self, kind):
        if kind == "loss":
            return self.rng.choice([10, 30, 50])   # percent of packets
        if kind.startswith("disk_slow_"):
            return self.rng.choice([20, 50, 200])  # ms per fdatasync
        if kind.startswith("disk_fail_"):
            return self.rng.randrange(2)           # 0: fdatasync fails, 1: write fails
        return 0

    def apply(self, kind, param):
        rules = {
            "part_ms": [("m", "add rule inet campaign input ip saddr %s drop" % S_FOR_M),
                        ("m", "add rule inet campaign output ip daddr %s drop" % S_FOR_M)],
            "part_m2s": [("m", "add rule inet campaign output ip daddr %s drop" % S_FOR_M)],
            "part_s2m": [("s", "add rule inet campaign output ip daddr %s drop" % M_FOR_S)],
            "part_cm": [("m", "add rule inet campaign input ip saddr %s drop" % C_IP_M),
                        ("m", "add rule inet campaign output ip daddr %s drop" % C_IP_M)],
            "loss": [("m", "add rule inet campaign input iifname ms0 numgen random mod 100 < %d"
                      " drop" % param),
                     ("m", "add rule inet campaign output oifname ms0 numgen random mod 100 < %d"
                      " drop" % param)],
        }
        if kind.startswith("disk_"):
            return self.disks.apply(kind, param)   # logged once in force
        self.log("fault %s %d" % (kind, param))
        kind = kind.removeprefix("fo_")  # the failover's own partition and kill
        if kind in rules:
            for n, rule in rules[kind]:
                self.nft(n, rule)
        elif kind == "link_down":
            self.sh("ip", "-n", self.ns["m"], "link", "set", "ms0", "down")
        elif kind.startswith("pause_"):
            self.signal(kind[-1].upper(), signal.SIGSTOP)
        elif kind.startswith("kill_"):
            self.kill9(kind[-1].upper())

    def heal(self, restart=True):
        for n in ("m", "s"):
            for hook in ("input", "output"):
                self.nft(n, "flush chain inet campaign " + hook)
        self.sh("ip", "-n", self.ns["m"], "link", "set", "ms0", "up")
        for role in ("M", "S"):
            self.signal(role, signal.SIGCONT)
        for role in sorted(self.disks.heal(["M", "S"])) if self.disks else []:
            self.stop(role)   # a fail-stopped store serves again only after a restart
        for role in sorted(self.stopped) if restart else []:
            self.start(role)
        self.log("heal")

    # ---- phases ---------------------------------------------------------------------------
    def client(self, *args, wait=True):
        cmd = ["ip", "netns", "exec", self.ns["c"], self.a.client] + list(args) + [
            "--out", os.path.join(self.work, "history.txt")]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.work, "client.err"), "a"))
        self.clients.append(p)
        if wait:
            p.wait()
        return p

    def load(self, prefix, master, slave, lm, ls, duration_ms, faults=(), kill=None):
        """Runs the load for duration_ms with `faults` applied at their times; kill (None or
        (ms, partition first)): kill -9 of M then, after a master->slave partition from 1 s
        before when asked. slave None: the load reads the master only."""
        reads = ["--slave", "%s:%d" % (slave, PORT), "--label-slave", ls] if slave else []
        p = self.client("load", "--master", "%s:%d" % (master, PORT), "--label-master", lm,
                        "--prefix", prefix, "--threads", "4", "--duration-ms", str(duration_ms),
                        *reads, wait=False)
        t0 = time.time()
        events = []
        for start, kinds, duration in faults:
            events += [(start, "apply", kind, param) for kind, param in kinds]
            events.append((start + duration, "heal", "", 0))
        if kill is not None:
            if kill[1]:
                events.append((kill[0] - 1000, "apply", "fo_part_m2s", 0))
            events.append((kill[0], "apply", "fo_kill_m", 0))
        for at, what, kind, param in sorted(events):
            time.sleep(max(0.0, t0 + at / 1000.0 - time.time()))
            if what == "apply":
                self.apply(kind, param)
            else:
                self.heal()
        p.wait()

    def ctl(self, ns, *args, timeout=60):
        r = self.sh(self.a.ctl, *args, ns=ns, check=False, capture=True, timeout=timeout)
        return r.returncode, r.stdout.strip()

    def caught_up(self, master_ip, slave_ip, bound_s=20):
        """Waits until `ha lag` shows equal log ends; logs the outcome."""
        t0 = time.time()
        out = ""
        while time.time() - t0 < bound_s:
            rc, out = self.ctl("c", "ha", "lag", "--master", "%s:%d" % (master_ip, PORT),
                               "--slave", "%s:%d" % (slave_ip, PORT))
            ends = [line.split()[-1] for line in out.splitlines() if "commitLogMaxOffset" in line]
            if rc == 0 and len(ends) == 2 and ends[0] == ends[1]:
                self.log("check caughtup ok %d ms end=%s" % ((time.time() - t0) * 1000, ends[0]))
                return int(ends[0])
            time.sleep(0.2)
        self.log("check caughtup fail after %d s: %s" % (bound_s, out.replace("\n", " | ")))
        return None

    def failover(self, write_first):
        """The runbook (docs/cluster.md, "Failover") after kill -9 of M: fence (no NameServer
        here: the clients address M directly, and it is dead), `ha lag` twice, S promoted,
        `ha rejoin` of M against S; M then starts as S's slave. write_first: S takes sends
        before the rejoin (against the runbook), so a rejoin of M with a tail must refuse; M
        then starts empty, its store moved aside, as the refusal says."""
        self.log("failover begin")
        lags = [self.ctl("c", "ha", "lag", "--master", "%s:%d" % (M_FOR_C, PORT), "--slave",
                         "%s:%d" % (S_FOR_C, PORT))[1] for _ in range(2) if not time.sleep(0.5)]
        self.log("failover lag %s" % " | ".join(x.replace("\n", " ") for x in lags))
        self.stop("S")
        # Healed only now: the dead M's kernel still retransmits what its HA socket held (a
        # process killed, not a machine), which would reach S while it is still a slave.
        self.heal(restart=False)
        self.conf("S")
        self.start("S")
        self.log("failover promoted S")
        if write_first:
            self.log("failover writefirst")
            self.load("e1w", S_FOR_C, None, "m1", None, 600)
        if self.impl["M"] == "java":
            self.log("rejoin skipped reason=ha_rejoin_reads_uringmq_stores_only:_M_stays_down")
            return False
        rc, out = self.ctl("m", "ha", "rejoin", "--dir", os.path.join(self.work, "M", "store"),
                           "--master", "%s:%d" % (S_FOR_M, HA_PORT))
        with open(os.path.join(self.work, "rejoin.txt"), "w") as f:
            f.write(out + "\n")
        cut = [x for x in out.splitlines() if x.startswith("  offset=")]
        for line in cut:   # what the rejoin cut: never a message answered SEND_OK
            keys = [w[5:] for w in line.split() if w.startswith("keys=")]
            self.log("rejoin cutkey %s" % (keys[0] if keys else "-"))
        if rc != 0:
            reason = out.splitlines()[-1] if out else "(no reason printed)"
            self.log("rejoin refused rc=%d reason=%s" % (rc, reason.replace(" ", "_")))
            if not write_first:
                return False
            store = os.path.join(self.work, "M", "store")
            os.rename(store, store + ".refused")
            self.log("rejoin moved M's store aside: M starts empty")
        else:
            self.log("rejoin ok cut=%d" % len(cut))
        self.conf("M", slave_of="%s:%d" % (S_FOR_M, HA_PORT))
        self.start("M")
        return True

    def final(self, master_ip, slave_ip, master_role, slave_role):
        """Final reads of both brokers (fm, fs), then both stopped and their logs compared."""
        end = self.caught_up(master_ip, slave_ip) if slave_role else None
        if slave_role and self.impl[slave_role] == "java":
            self.wait_topic(slave_role)
        self.client("read", "--addr", "%s:%d" % (master_ip, PORT), "--label", "fm")
        if slave_role:
            self.client("read", "--addr", "%s:%d" % (slave_ip, PORT), "--label", "fs")
        for role in ("M", "S"):
            self.stop(role)
        if slave_role and end is not None:
            self.compare_logs(master_role, slave_role, end)

    def wait_topic(self, role, bound_s=20):
        """A Java slave serves pulls of the topics its SlaveSynchronize copied only."""
        path = os.path.join(self.work, role, "store", "config", "topics.json")
        t0 = time.time()
        while time.time() - t0 < bound_s:
            if os.path.exists(path) and TOPIC in open(path, errors="replace").read():
                return
            time.sleep(0.2)
        self.log("check topicsync fail: %s has no %s after %d s" % (path, TOPIC, bound_s))

    def compare_logs(self, master_role, slave_role, end):
        """The slave's CommitLog is a byte prefix of the master's: every segment of the slave
        equal to the master's file of the same name up to the common end `end`."""
        dirs = [os.path.join(self.work, r, "store", "commitlog") if self.impl[r] == "java"
                else os.path.join(self.work, r, "store", "shard-0", "commitlog")
                for r in (master_role, slave_role)]
        compared = 0
        for name in sorted(os.listdir(dirs[1])):
            start = int(name)
            if start >= end:
                continue
            if not os.path.exists(os.path.join(dirs[0], name)):
                self.log("check prefix fail the master has no segment %s" % name)
                return
            size = min(os.path.getsize(os.path.join(dirs[1], name)), end - start)
            with open(os.path.join(dirs[0], name), "rb") as fm, \
                    open(os.path.join(dirs[1], name), "rb") as fs:
                a, b = fm.read(size), fs.read(size)
            if a != b:
                at = next(i for i in range(min(len(a), len(b))) if a[i] != b[i]) \
                    if len(a) == len(b) else min(len(a), len(b))
                self.log("check prefix fail segment=%s offset=%d" % (name, start + at))
                return
            compared += size
        self.log("check prefix ok bytes=%d" % compared)

    def main(self):
        do_failover = self.a.planted or self.rng.random() < 0.5
        kill_at = LOAD_MS - 300
        faults = self.schedule(kill_at - 1300 if do_failover else LOAD_MS - 700)
        # The failover's variants: a master->slave partition before the kill (M then holds a
        # tail S lacks; always with the planted bug), and sends to S before the rejoin.
        partition_first = self.a.planted or self.rng.random() < 0.5
        write_first = not self.a.planted and self.rng.random() < 0.3
        kill = (kill_at, partition_first) if do_failover else None
        self.log("run seed=%d planted=%d failover=%d m=%s s=%s" % (
            self.a.seed, self.a.planted, do_failover, self.impl["M"], self.impl["S"]))
        self.topology()
        self.conf("M")
        self.conf("S", slave_of="%s:%d" % (M_FOR_S, HA_PORT))
        self.start("M")
        if self.impl["S"] == "java":   # created before S starts: its first sync copies it
            self.ctl("c", "topic", "create", "--addr", "%s:%d" % (M_FOR_C, PORT), "-t", TOPIC,
                     "-r", "4", "-w", "4")
        self.start("S")
        self.wait_replicating("M", "S")
        self.load("e0", M_FOR_C, S_FOR_C, "m0", "s0", LOAD_MS, faults, kill)
        if not do_failover:
            self.heal()
            return self.final(M_FOR_C, S_FOR_C, "M", "S")
        self.stopped.discard("M")
        if not self.failover(write_first):
            return self.final(S_FOR_C, None, "S", None)
        self.wait_replicating("S", "M")
        self.load("e1", S_FOR_C, M_FOR_C, "m1", "s1", 1200)
        return self.final(S_FOR_C, M_FOR_C, "S", "M")


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--broker", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--client", required=True)
    p.add_argument("--planted", action="store_true",
                   help="run the master with the planted early-acknowledgement bug")
    p.add_argument("--master-impl", choices=["uringmq", "java"], default="uringmq")
    p.add_argument("--slave-impl", choices=["uringmq", "java"], default="uringmq")
    p.add_argument("--faultfs", help="uringmq-faultfs: adds disk faults under uringmq brokers")
    a = p.parse_args()
    if a.planted and a.master_impl == "java":
        p.error("--planted needs a uringmq master")
    return a


def main():
    args = parse()
    if os.path.exists(args.work):
        shutil.rmtree(args.work)
    os.makedirs(args.work)
    run = Run(args)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        run.main()
        run.log("end")
        return 0
    except Exception as e:  # a driver failure: the run is void, the caller reports it
        run.log("driver-error %s" % str(e).replace("\n", " "))
        print("campaign_run: seed %d: %s" % (args.seed, e), file=sys.stderr)
        return 3
    finally:
        run.cleanup()


if __name__ == "__main__":
    sys.exit(main())
