#pragma once
// uringmq-ctl ha rejoin: the prefix check a former master runs, stopped, before it starts as a
// slave of the new master (docs/cluster.md, "Failover"; tools/README.md has why it is a command and
// not a broker start-up step). Per shard:
//   1. recover the local log (as an open would: an interrupted truncation finished, a torn tail
//      cut) and hold the shard's lock while comparing, so no broker starts on the store;
//      only the segments from the compared start on are scanned (where their blanks are);
//   2. connect to the new master's HA port as a slave does and ask for its bytes from a common
//      segment start (the first report 0 gives the start of the master's last segment; when
//      the local log ends before it, the start of the local log's last segment is asked
//      instead), and compare them with the local log (after a blank record both count as
//      zeros, as the master streams them) up to min(local end, master end): the master's end
//      is where its stream stops (its heartbeat's offset);
//   3. equal, and the local log no longer: nothing to do. Equal, and the local log longer: the
//      tail past the master's end was never acknowledged by it; it is cut (engine's crash-safe
//      truncate_log) and reported: offset range, record count, and each message's topic, queue,
//      queue offset, msgId (UNIQ_KEY), offsetMsgId and keys, on stdout and in
//      <storePathRootDir>/rejoin-<shard>-<unix ms>.txt. Different: refused, naming the first
//      differing offset and the local record holding it; the slave must start empty.
// Blocking sockets, one thread; memory: one chunk (at most 4 MiB) and one segment window.

#include <cstdint>
#include <cstdio>
#include <string>

namespace uringmq::ctl {

struct RejoinOptions {
  std::string dir;              // storePathRootDir of the stopped former master
  std::string masters;          // the new master's HA address per shard: "host:port;host:port"
  bool dry_run = false;         // compare and report only; cut nothing
  int64_t timeout_ms = 30'000;  // for the master's answer (its heartbeat comes every 5 s)
  uint32_t max_body_bytes = 4u << 20;  // maxMessageSize the log was written with
};

// Exit codes: kExitOk (a prefix: nothing cut, or its tail cut), kExitFailure (differs, the
// master cannot be reached or refused, the store is in use or damaged), kExitUsage.
int run_ha_rejoin(const RejoinOptions& o, std::FILE* out = stdout);

}  // namespace uringmq::ctl
