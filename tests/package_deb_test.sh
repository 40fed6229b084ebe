#!/usr/bin/env bash
# Goal: the .deb CPack makes installs a working broker: binaries, the systemd unit whose paths
# are the ones installed, /etc/uringmq/broker.conf as a conffile, the library, headers, CMake
# and pkg-config files, LICENSE; the installed broker starts from the installed config, answers
# the installed uringmq-ctl, logs with sd-daemon priorities on a journal stream, and stops.
# Method: cpack -G DEB in the build tree, install it with dpkg into a scratch root (--root with
# an empty package database there; --force-script-chrootless runs the postinst on the host with
# DPKG_ROOT set, which only creates the root's store directory; --force-depends: the root has no
# liburing2 package, the host's library serves), check dpkg records it installed, the files and
# control data, then run <root>/usr/bin/uringmq-broker on a copy of the installed config with
# only the store directory and ports changed (a free port). Fails if any step fails.
# Usage: package_deb_test.sh <build dir>
set -euo pipefail
build_dir=$1
work=$(mktemp -d "${build_dir}/deb-test-XXXXXX")
pid=
fail() { echo "FAIL: $*" >&2; [[ -f $work/log ]] && tail -20 "$work/log" >&2; exit 1; }
cleanup() { [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

(cd "$build_dir" && cpack -G DEB -B "$work/pkg" > "$work/cpack.log" 2>&1) ||
  fail "cpack: $(tail -20 "$work/cpack.log")"
deb=$(ls "$work"/pkg/uringmq_*.deb)
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-script-chrootless --force-depends -i "$deb" >"$work/dpkg.log" 2>&1 ||
  fail "dpkg -i into $root: $(tail -20 "$work/dpkg.log")"
dpkg --root="$root" -s uringmq 2>/dev/null | grep -qx "Status: install ok installed" ||
  fail "dpkg does not record uringmq as installed in $root"
[[ -d $root/var/lib/uringmq ]] || fail "the postinst did not create /var/lib/uringmq in $root"
dpkg-deb -e "$deb" "$work/control"
for f in usr/bin/uringmq-broker usr/bin/uringmq-ctl etc/uringmq/broker.conf \
         usr/lib/systemd/system/uringmq-broker.service usr/include/uringmq/store.h \
         usr/include/uringmq/version.h usr/lib/cmake/uringmq/uringmqConfig.cmake \
         usr/share/doc/uringmq/LICENSE; do
  [[ -f $root/$f ]] || fail "the package lacks /$f"
done
for f in pkgconfig/uringmq.pc liburingmq_engine.a; do  # lib/ or lib/<multiarch>/
  [[ -n $(find "$root/usr/lib" -path "*/$f") ]] || fail "the package lacks $f"
done
pc=$(find "$root/usr/lib" -name uringmq.pc)
inc=$(pkg-config --variable=includedir "$pc")
[[ -f $inc/uringmq/store.h && $(cd "$inc" && pwd -P) == $(cd "$root/usr/include" && pwd -P) ]] ||
  fail "pkg-config's includedir is $inc, not the package's"
grep -qx "/etc/uringmq/broker.conf" "$work/control/conffiles" || fail "broker.conf not a conffile"
grep -q "adduser --system" "$work/control/postinst" || fail "no postinst creating the user"
grep -q "^Depends:.*liburing" "$work/control/control" || fail "no liburing dependency"

# The unit runs what the package installs, on the config it installs.
unit=$root/usr/lib/systemd/system/uringmq-broker.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $exec_start == "/usr/bin/uringmq-broker -c /etc/uringmq/broker.conf" ]] ||
  fail "unit ExecStart is '$exec_start'"
grep -q "^storePathRootDir=/var/lib/uringmq$" "$root/etc/uringmq/broker.conf" ||
  fail "broker.conf's store is not the unit's StateDirectory"
grep -q "^StateDirectory=uringmq$" "$unit" || fail "unit has no StateDirectory=uringmq"

# A port free with its neighbours and below the ephemeral range (free-ports.sh): a port the
# kernel handed out could have its HA neighbour (+ 1) taken by some client socket.
port=$("$(dirname "$0")/../tools/free-ports.sh" 1)  # shardCount=1 below
sed -e "s|^storePathRootDir=.*|storePathRootDir=$work/store|" \
    -e "s|^listenPort=.*|listenPort=$port|" \
    -e "s|^namesrvListenPort=.*|namesrvListenPort=0|" -e "s|^shardCount=.*|shardCount=1|" \
    "$root/etc/uringmq/broker.conf" > "$work/broker.conf"
touch "$work/log"
# stderr is "the journal" for the broker: JOURNAL_STREAM names the file's device and inode.
JOURNAL_STREAM=$(stat -c '%d:%i' "$work/log") "$root/usr/bin/uringmq-broker" \
  -c "$work/broker.conf" 2>> "$work/log" &
pid=$!
for _ in $(seq 1 300); do
  grep -q "ready" "$work/log" && break
  kill -0 "$pid" 2>/dev/null || fail "the installed broker exited"
  sleep 0.1
done
grep -q "^<6>.* INFO uringmq-broker ready" "$work/log" || fail "no <6>-prefixed ready line"
"$root/usr/bin/uringmq-ctl" produce --addr "127.0.0.1:$port" --topic T hello > /dev/null ||
  fail "the installed uringmq-ctl could not send to the installed broker"
"$root/usr/bin/uringmq-ctl" --version | grep "^uringmq-ctl " > /dev/null || fail "ctl --version"
kill -TERM "$pid"
wait "$pid" || fail "the installed broker did not stop cleanly"
pid=
echo "1 passed, 0 failed"
