#!/usr/bin/env python3
"""The fault campaign's checker (tests/faults/README.md, "Properties"): reads one run's
history.txt (client and driver lines) and checks
  lost      every SEND_OK key is in the final master's read (fm), intact, at the queue offset
            its answer gave, and in the final slave's (fs) when there is one;
  phantom   every message read anywhere was sent by a client and is intact; no key is stored
            at two places;
  slave     everything a slave served (s0, s1, fs) is in the final master's log at the same
            queue offset; the driver's byte comparison of the CommitLogs found a prefix;
  master    what a master served is still there at the end, except, after a failover, a key
            never acknowledged (the old master's unacknowledged tail, cut by the rejoin);
  catch-up  after healing the slave caught up within the bound (driver's `check caughtup`), the
            final max offsets are equal, or `ha rejoin` refused naming a reason.
Prints one verdict line (key=value counts) and up to 20 violations; exit 0 when none, 1 on
violations, 3 when the run itself did not complete (driver error: neither pass nor fail).
Usage: campaign_check.py HISTORY [--seed N]
"""

import argparse
import collections
import sys

SLAVE_LABELS = ("s0", "s1", "fs")


class History:
    def __init__(self, path):
        self.invoked = {}        # key -> queue
        self.invoked_at = {}     # key -> us
        self.answers = {}        # key -> (code, queue, offset)
        self.answered_at = {}    # key -> us
        self.noanswer = set()
        self.reads = []          # (label, queue, offset, key, intact)
        self.maxoffset = collections.defaultdict(dict)  # label -> queue -> offset
        self.minoffset = collections.defaultdict(dict)  # label -> queue -> offset
        self.driver = []         # driver lines' words
        self.driver_at = []      # their times, us
        self.readfail = []       # (label, queue): a final read that could not complete
        with open(path, errors="replace") as f:
            for line in f:
                self.parse(line.split())

    def parse(self, w):
        if len(w) < 3:
            return
        actor, what = w[1], w[2]
        if actor == "driver":
            self.driver.append(w[2:])
            self.driver_at.append(int(w[0]))
        elif what == "invoke" and len(w) >= 5:
            self.invoked[w[3]] = int(w[4])
            self.invoked_at[w[3]] = int(w[0])
        elif what == "answer" and len(w) >= 7:
            self.answers[w[3]] = (int(w[4]), int(w[5]), int(w[6]))
            self.answered_at[w[3]] = int(w[0])
        elif what == "noanswer":
            self.noanswer.add(w[3])
        elif what == "read" and len(w) >= 8:
            self.reads.append((w[3], int(w[4]), int(w[5]), w[6], w[7] == "1"))
        elif what == "undecodable":
            self.reads.append((w[3], int(w[4]), -1, "?", False))
        elif what == "readfail" and len(w) >= 5:
            self.readfail.append((w[3], int(w[4])))
        elif what == "maxoffset" and len(w) >= 6:
            self.maxoffset[w[3]][int(w[4])] = int(w[5])
        elif what == "minoffset" and len(w) >= 6:
            self.minoffset[w[3]][int(w[4])] = int(w[5])

    def driver_lines(self, first):
        return [d for d in self.driver if d and d[0] == first]


class Checker:
    def __init__(self, h):
        self.h = h
        self.violations = []
        self.counts = collections.Counter()
        self.logs = collections.defaultdict(dict)   # label -> (queue, offset) -> key
        for label, q, off, key, _ in h.reads:
            self.logs[label][(q, off)] = key
        self.failover = any(d[:2] == ["failover", "begin"] for d in h.driver)
        self.acked = {k for k, a in h.answers.items() if a[0] == 0}
        self.lost_keys = 0

    def bad(self, kind, text):
        self.counts[kind] += 1
        self.violations.append("%s: %s" % (kind, text))

    def check_acked(self):
        lost = set()
        for label in ("fm", "fs"):
            if label == "fs" and not self.logs.get("fs") and "fs" not in self.h.maxoffset:
                continue
            log = self.logs.get(label, {})
            # A slave started empty (its old store moved aside) begins at the master's newest
            # segment: it holds each queue from its min offset only. The master holds it all.
            first = self.h.minoffset.get(label, {}) if label == "fs" else {}
            for key in sorted(self.acked):
                _, q, off = self.h.answers[key]
                if off < first.get(q, 0):
                    continue
                if log.get((q, off)) != key:
                    lost.add(key)
                    self.bad("lost", "SEND_OK %s at queue %d offset %d: %s holds %s"
                             % (key, q, off, label, log.get((q, off), "nothing")))
        self.lost_keys = len(lost)

    def check_stored(self):
        """11 and 12 mean stored on the master: without a failover, the final master holds
        them (after one, they may be in the cut tail)."""
        if self.failover:
            return
        fm = self.logs.get("fm", {})
        for key, (code, q, off) in sorted(self.h.answers.items()):
            if code in (11, 12) and fm.get((q, off)) != key:
                self.bad("stored", "%s answered %d at queue %d offset %d: fm holds %s"
                         % (key, code, q, off, fm.get((q, off), "nothing")))

    def check_disk(self):
        """A failed disk fail-stops its broker until a restart: a send invoked after the fault
        was in force (its `fault disk_fail_<r>` line) is never answered SEND_OK while r's
        failed process lives (until r is stopped or killed): its bytes cannot be durable on
        r. (Answered later, after r's restart, it may be: the new process made it durable.)
        Every uringmq broker stopped with SIGTERM exits by itself: 0, or 1 after its store
        failed (uringmq-broker's exit status for a fail-stop), never by a signal or a hang."""
        windows, open_at, failed = [], {}, set()
        for at, d in zip(self.h.driver_at, self.h.driver):
            if d[0] == "fault" and d[1].startswith("disk_fail_"):
                open_at.setdefault(d[1][-1].upper(), at)
                failed.add(d[1][-1].upper())
            elif d[0] in ("stop", "start") or d[:2] in (["fault", "kill_m"], ["fault", "kill_s"],
                                                        ["fault", "fo_kill_m"]):
                role = d[1] if d[0] != "fault" else d[1][-1].upper()
                if role in open_at:
                    windows.append((role, open_at.pop(role), at))
            if d[0] == "stop" and "impl=uringmq" in d:
                rc = int(d[2].split("=")[1])
                if rc not in (0, 1) or (rc == 1 and d[1] not in failed):
                    self.bad("unclean_stop", " ".join(d))
                failed.discard(d[1])
        windows += [(r, t, float("inf")) for r, t in open_at.items()]
        for role, begin, end in windows:
            for key in self.acked:
                if self.h.invoked_at.get(key, 0) > begin and self.h.answered_at[key] < end:
                    self.bad("disk", "%s acknowledged while %s's failed disk could not make it "
                             "durable" % (key, role))

    def check_reads(self):
        places = collections.defaultdict(set)
        for label, q, off, key, intact in self.h.reads:
            if not intact or key not in self.h.invoked:
                self.bad("phantom", "%s queue %d offset %d: %s (intact=%d)"
                         % (label, q, off, key, intact))
            if label == "fm":
                places[key].add((q, off))
        for key, where in places.items():
            if len(where) > 1:
                self.bad("duplicate", "%s stored at %s" % (key, sorted(where)))

    def check_served(self):
        fm = self.logs.get("fm", {})
        for label, q, off, key, _ in self.h.reads:
            if label == "fm" or fm.get((q, off)) == key:
                continue
            if label in SLAVE_LABELS:
                self.bad("slave", "%s served %s at queue %d offset %d; the master holds %s"
                         % (label, key, q, off, fm.get((q, off), "nothing")))
            elif label == "m0" and self.failover and key not in self.acked:
                self.counts["cut_served"] += 1
            else:
                self.bad("master", "%s served %s at queue %d offset %d; at the end: %s"
                         % (label, key, q, off, fm.get((q, off), "nothing")))

    def check_driver(self):
        for label, q in self.h.readfail:
            self.bad("read", "the final read of queue %d from %s did not complete" % (q, label))
        for d in self.h.driver_lines("check"):
            if len(d) >= 3 and d[2] != "ok":
                self.bad(d[1], " ".join(d[2:]))
        for d in self.h.driver_lines("rejoin"):
            if d[1] == "cutkey":
                if d[2] in self.acked:
                    self.bad("cut", "the rejoin cut %s, answered SEND_OK" % d[2])
                continue
            self.counts["rejoin_" + d[1]] += 1
            if d[1] == "ok" and len(d) >= 3:
                self.counts["cut"] += int(d[2].split("=")[1])
            if d[1] == "refused" and "(no_reason_printed)" in " ".join(d):
                self.bad("rejoin", "refused without a reason")
            elif d[1] == "refused" and ["failover", "writefirst"] not in self.h.driver:
                self.bad("rejoin", "refused although the promoted slave took no sends first: "
                         + " ".join(d[2:]))
        fm, fs = self.h.maxoffset.get("fm"), self.h.maxoffset.get("fs")
        if fm is not None and fs is not None and fm != fs:
            self.bad("caughtup", "final max offsets differ: master %s slave %s" % (fm, fs))
        refused = bool(self.h.driver_lines("rejoin")) and not self.counts["rejoin_ok"]
        if not refused and not any(d[:2] == ["check", "caughtup"] for d in self.h.driver):
            self.bad("caughtup", "the driver never checked the slave caught up")

    def run(self):
        self.check_acked()
        self.check_stored()
        self.check_disk()
        self.check_reads()
        self.check_served()
        self.check_driver()


def verdict(h, c, seed):
    codes = collections.Counter(a[0] for a in h.answers.values())
    faults = collections.Counter(d[1] for d in h.driver_lines("fault"))
    void = any(d[0] == "driver-error" for d in h.driver) or not h.driver_lines("end")
    lost = c.lost_keys
    phantom = c.counts["phantom"] + c.counts["duplicate"]
    state = "VOID" if void else ("FAIL" if c.violations else "PASS")
    fields = [("seed", seed), ("sends", len(h.invoked)), ("send_ok", codes[0]),
              ("c11", codes[11]), ("c12", codes[12]),
              ("refused", sum(n for k, n in codes.items() if k not in (0, 11, 12))),
              ("noanswer", len(h.noanswer)), ("lost", lost), ("phantom", phantom),
              ("violations", len(c.violations)), ("failover", int(c.failover)),
              ("rejoin_refused", c.counts["rejoin_refused"]), ("cut", c.counts["cut"]),
              ("faults", ",".join("%s:%d" % kv for kv in sorted(faults.items())) or "-")]
    print("%s %s" % (state, " ".join("%s=%s" % kv for kv in fields)))
    for v in c.violations[:20]:
        print("  " + v)
    if void:
        for d in h.driver:
            if d[0] == "driver-error":
                print("  driver error: " + " ".join(d[1:]))
        return 3
    return 1 if c.violations else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("history")
    p.add_argument("--seed", default="?")
    a = p.parse_args()
    h = History(a.history)
    c = Checker(h)
    c.run()
    return verdict(h, c, a.seed)


if __name__ == "__main__":
    sys.exit(main())
