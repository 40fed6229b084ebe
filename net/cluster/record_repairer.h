#pragma once
// RecordRepairer: fetches a replica's copy of a damaged CommitLog record for the store's
// shards (corruptRecordPolicy=repair; engine/README.md, "Repair from the replica"). A shard's
// ask (Store::wait_repair_ask: shard, log offset, size) is answered by VIEW_MESSAGE_BY_ID (33,
// header `offset` = the log offset, which is the wire offset of presented broker `shard`) to
// that broker's peer: a Java 4.9.8 broker answers the stored record bytes; a uringmq broker does
// when asked with kStoredBytesField. The bytes go back to the shard with
// Session::repair_record_async, which checks them and writes them back; any failure (no peer,
// unreachable, an error answer, no bytes) is answered too, with its reason, and the shard
// quarantines the record.
//
// Peers come from the reactor (set_peer: the address, or none yet and whether one is expected:
// a slave always has a master, a SYNC_MASTER a slave, a master with a slave streaming has one).
// An ask whose peer is not known waits for it while one is expected, up to kReaderWaitMs (a
// pull waits on it) or kScrubWaitMs (the scrub's: nobody waits, and a peer just restarted
// takes a few seconds to be known again), and also before the reactor first says what it
// knows (the scrub can meet damage before the reactor's first turn); otherwise it fails at
// once. In the first kScrubStartGraceMs after start the scrub's asks wait as if one were
// expected: a master just restarted knows of its slave only once the slave reconnects, and the
// scrub may reach a damaged record in its first milliseconds (a pull meeting that record asks
// again itself).
//
// Threading: one thread of its own makes the blocking remoting calls (RemotingClient, 3 s
// timeouts), so neither the reactor nor a shard waits on a peer; one request at a time, to any
// peer. The reactor calls set_peer (a mutex). Bounded: the store's mailbox holds at most
// Store::kMaxRepairAsks asks; those taken and waiting for a peer are at most that many per
// shard (each shard bounds its own asks); an answer is at most the remoting frame limit.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/store.h"

namespace uringmq::net {

// VIEW_MESSAGE_BY_ID at `offset` on `peer` (ip:port), asking for the stored bytes
// (kStoredBytesField): the record's bytes, or an error naming the peer and what failed.
// Blocking: RecordRepairer::kTimeoutMs to connect and again for the answer.
io::Result<std::string> fetch_stored_record(const std::string& peer, uint64_t offset);

// GET_BROKER_CLUSTER_INFO (106) on `namesrv`: for each of `names`, the address of its master
// (brokerId 0) when `master`, else of its slave of the lowest brokerId above 0 ("" when none
// is listed); empty when the NameServer did not answer. Blocking, as fetch_stored_record.
std::vector<std::string> listed_brokers(const std::string& namesrv,
                                        const std::vector<std::string>& names, bool master);

class RecordRepairer {
 public:
  static constexpr int64_t kReaderWaitMs = 3'000;
  static constexpr int64_t kScrubWaitMs = 45'000;
  static constexpr int64_t kScrubStartGraceMs = 10'000;
  static constexpr int kTimeoutMs = 3'000;  // connect, and the request's answer

  // Opens a session of its own, enables the store's repairs and starts the thread.
  static io::Result<std::unique_ptr<RecordRepairer>> start(Store& store, uint32_t brokers);
  ~RecordRepairer();  // stop()
  RecordRepairer(const RecordRepairer&) = delete;
  RecordRepairer& operator=(const RecordRepairer&) = delete;

  // Disables the store's repairs (asks waiting in the mailbox are dropped: their shards time
  // them out), joins the thread and closes the session. Before the store closes.
  void stop();
  // Reactor: presented broker `broker`'s peer remoting address ("" while unknown) and whether a
  // peer is expected (an ask then waits for it to be known).
  void set_peer(uint32_t broker, const std::string& address, bool expected);
  // A master whose slaves register with other NameServers: the presented brokers' names and
  // those NameServers, asked with GET_BROKER_CLUSTER_INFO (106) on the thread when an ask's peer
  // is not known otherwise (at most every 5 s). Before the first ask.
  void set_namesrv_lookup(std::vector<std::string> names, std::vector<std::string> namesrvs);
  // Answers sent to shards since start (tests and logs).
  uint64_t answered() const;

 private:
  struct Peer {
    std::string address;
    bool expected = false;
    bool told = false;  // set_peer called: before, the ask waits as if a peer were expected
  };
  struct Waiting {
    RepairAsk ask;
    int64_t taken_ms = 0;  // steady clock
  };
  RecordRepairer(Store& store, std::unique_ptr<Session> session, uint32_t brokers);
  void run();
  // Serves what can be served now; false when every ask left waits for its peer.
  bool serve_ready(std::vector<Waiting>& waiting);
  void serve(const RepairAsk& ask, const std::string& peer);
  // Presented broker `broker`'s slave as the NameServers list it ("" when none).
  std::string slave_from_namesrvs(uint32_t broker);
  void answer(const RepairAsk& ask, const std::string& peer, const std::string& bytes,
              const std::string& failure);

  Store& store_;
  std::unique_ptr<Session> session_;  // the thread's only (one request at a time)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;         // guarded by mu_
  std::vector<Peer> peers_;   // guarded by mu_
  uint64_t answered_ = 0;     // guarded by mu_
  const int64_t started_ms_;  // steady clock
  // The NameServer lookup (the thread's own once it runs).
  std::vector<std::string> lookup_names_;
  std::vector<std::string> namesrvs_;
  std::vector<std::string> listed_;  // per broker, from the last lookup
  int64_t next_lookup_ms_ = 0;
  std::thread thread_;
};

}  // namespace uringmq::net
