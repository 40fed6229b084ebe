"""Disk faults for the replication fault campaign (tests/faults/README.md, "Disk faults"):
each uringmq broker's store on its own uringmq-faultfs mount (faultfs.cc), the faults written
to its control file. Used by campaign_run.py when it is given --faultfs.

A mount per role: backing <work>/<R>.backing, mounted at <work>/<R> (the store is
<work>/<R>/store), control <work>/<R>.control, the file system's log <work>/<R>.faultfs.log.
Mounted before the brokers start (a broker started with `ip netns exec` sees the mounts made
before it), unmounted at cleanup after the brokers are gone.
"""

import os
import subprocess
import time

KINDS = ["disk_fail_m", "disk_fail_s", "disk_slow_m", "disk_slow_s"]


class Disks:
    def __init__(self, faultfs, work, log):
        self.faultfs = faultfs
        self.work = work
        self.log = log          # the driver's history logger
        self.mounted = []       # mount points
        self.failed = set()     # roles whose store failed: restarted at the heal

    def paths(self, role):
        base = os.path.join(self.work, role)
        return base + ".backing", base, base + ".control", base + ".faultfs.log"

    def mount(self, role):
        backing, mnt, control, log = self.paths(role)
        for d in (backing, mnt):
            os.makedirs(d, exist_ok=True)
        open(control, "w").close()
        with open(log, "a") as f:   # daemonizes once the mount is up
            r = subprocess.run([self.faultfs, backing, mnt, control], stdout=f, stderr=f,
                               timeout=30)
        if r.returncode != 0:
            raise RuntimeError("uringmq-faultfs %s failed (%d): see %s" % (mnt, r.returncode, log))
        self.mounted.append(mnt)

    def unmount_all(self):
        for mnt in self.mounted:
            subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)
        self.mounted = []

    def control(self, role, text):
        """Replaces the role's rules (temp file, rename) and waits for the file system to say
        it loaded them."""
        _, _, control, log = self.paths(role)
        before = open(log, errors="replace").read().count(" loaded: ")
        tmp = control + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, control)
        deadline = time.time() + 5
        while time.time() < deadline:
            if open(log, errors="replace").read().count(" loaded: ") > before:
                return
            time.sleep(0.01)
        raise RuntimeError("uringmq-faultfs did not load %s: see %s" % (control, log))

    def apply(self, kind, param):
        """disk_fail_<r>: every CommitLog fdatasync (param 0) or write (1) of r's store fails
        with EIO; disk_slow_<r>: every fdatasync of r's store waits `param` ms. Logged once in
        force."""
        role = kind[-1].upper()
        if kind.startswith("disk_fail_"):
            op = ["fail-fsync", "fail-write"][param]
            self.control(role, "%s /commitlog/ EIO\n" % op)
            self.failed.add(role)
            self.log("fault %s %d %s" % (kind, param, op))
        else:
            self.control(role, "delay-fsync / %d\n" % param)
            self.log("fault %s %d" % (kind, param))

    def heal(self, roles):
        """Clears the rules of every mounted role; returns the roles whose store failed (the
        caller restarts those brokers: a fail-stop is sticky until a restart)."""
        for role in roles:
            if os.path.join(self.work, role) in self.mounted:
                self.control(role, "clear\n")
        failed, self.failed = self.failed, set()
        return failed
