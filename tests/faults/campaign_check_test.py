#!/usr/bin/env python3
"""Goal: each property of the fault campaign's checker (campaign_check.py) fails when its
violation is in a history, and a clean history passes. Method: a small synthetic history of a
run without a failover, then one change per property (a SEND_OK missing from the final read, a
phantom, a slave serving what the master lacks, an 11 not stored, an acknowledgement from a
failed disk, an unclean stop, a failed catch-up or prefix check, a refused rejoin, a cut
acknowledged message, a run that never ended); each must make the checker exit as expected and
name the property. Needs neither root nor brokers, so it runs everywhere (the campaign's own
tests are Skipped without root). Usage: campaign_check_test.py (exit 0: all as expected).
"""

import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "campaign_check.py")

BASE = """\
1 driver run seed=1 planted=0 failover=0 m=uringmq s=uringmq
2 driver start M pid=10
3 driver start S pid=11
10 c0 invoke k-0-0 0
11 c0 answer k-0-0 0 0 0 ID0
12 c0 invoke k-0-1 1
13 c0 answer k-0-1 11 1 0 ID1
14 c1 invoke k-1-0 2
15 c1 noanswer k-1-0 timeout
20 r read m0 0 0 k-0-0 1
21 r read s0 0 0 k-0-0 1
30 driver heal
31 driver check caughtup ok 5 ms end=300
40 r read fm 0 0 k-0-0 1
41 r read fm 1 0 k-0-1 1
42 r maxoffset fm 0 1
43 r read fs 0 0 k-0-0 1
44 r read fs 1 0 k-0-1 1
45 r maxoffset fs 0 1
46 r minoffset fs 0 0
50 driver stop M rc=0 impl=uringmq
51 driver stop S rc=0 impl=uringmq
52 driver check prefix ok bytes=300
53 driver end
"""


def without(text, line):
    assert line in text, line
    return text.replace(line + "\n", "")


def replaced(text, old, new):
    assert old in text, old
    return text.replace(old, new)


def added(text, after, line):
    return replaced(text, after + "\n", after + "\n" + line + "\n")


# (name, history, expected exit, text the output must hold)
CASES = [
    ("clean", BASE, 0, "PASS"),
    ("lost", without(BASE, "40 r read fm 0 0 k-0-0 1"), 1, "lost: SEND_OK k-0-0"),
    ("lost on the slave", without(BASE, "43 r read fs 0 0 k-0-0 1"), 1, "fs holds nothing"),
    ("phantom", added(BASE, "21 r read s0 0 0 k-0-0 1", "22 r read s0 3 0 never-sent 1"), 1,
     "phantom:"),
    ("damaged", replaced(BASE, "21 r read s0 0 0 k-0-0 1", "21 r read s0 0 0 ? 0"), 1,
     "phantom:"),
    ("slave ahead", added(BASE, "21 r read s0 0 0 k-0-0 1", "22 r read s0 2 0 k-1-0 1"), 1,
     "slave: s0 served k-1-0"),
    ("master changed", added(BASE, "21 r read s0 0 0 k-0-0 1", "22 r read m0 2 0 k-1-0 1"), 1,
     "master: m0 served k-1-0"),
    ("duplicate", added(BASE, "41 r read fm 1 0 k-0-1 1", "41 r read fm 2 0 k-0-0 1"), 1,
     "duplicate:"),
    ("11 not stored", without(BASE, "41 r read fm 1 0 k-0-1 1"), 1, "stored: k-0-1"),
    ("ack from a failed disk", added(BASE, "3 driver start S pid=11",
                                     "4 driver fault disk_fail_m 0 fail-fsync"), 1, "disk: k-0-0"),
    ("unclean stop", replaced(BASE, "50 driver stop M rc=0", "50 driver stop M rc=-9"), 1,
     "unclean_stop:"),
    ("not caught up", replaced(BASE, "check caughtup ok 5 ms", "check caughtup fail 5 ms"), 1,
     "caughtup:"),
    ("max offsets differ", replaced(BASE, "45 r maxoffset fs 0 1", "45 r maxoffset fs 0 0"), 1,
     "final max offsets differ"),
    ("not a prefix", replaced(BASE, "check prefix ok bytes=300", "check prefix fail offset=7"),
     1, "prefix:"),
    ("rejoin refused", added(BASE, "30 driver heal", "30 driver rejoin refused rc=1 reason=x"),
     1, "rejoin: refused although"),
    ("acknowledged and cut", added(BASE, "30 driver heal", "30 driver rejoin cutkey k-0-0"), 1,
     "cut: the rejoin cut k-0-0"),
    ("final read failed", added(BASE, "45 r maxoffset fs 0 1", "46 r readfail fs 1"), 1,
     "read: the final read"),
    ("run never ended", without(BASE, "53 driver end"), 3, "VOID"),
]


def run(history):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(history)
    try:
        r = subprocess.run([sys.executable, CHECKER, f.name], stdout=subprocess.PIPE, text=True)
        return r.returncode, r.stdout
    finally:
        os.unlink(f.name)


def main():
    failures = 0
    for name, history, want_rc, want_text in CASES:
        rc, out = run(history)
        ok = rc == want_rc and want_text in out
        failures += not ok
        print("%s %s (exit %d)" % ("ok  " if ok else "FAIL", name, rc))
        if not ok:
            print("  expected exit %d and %r; got:\n%s" % (want_rc, want_text, out))
    print("campaign_check_test: %d of %d cases as expected" % (len(CASES) - failures, len(CASES)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
