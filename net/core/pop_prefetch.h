#pragma once
// PopPrefetch: the records of POP messages about to come back, read ahead of their deadline.
// A message whose invisibility runs out is handed out again by a receive that was waiting for
// it; without its record at hand that receive reads it from the store first (a device read:
// the record was written an invisible time ago), then stores its TAKE record. PopTable lists
// each message PopTable::kLookAheadMs before its deadline (`PopTable::expire`'s soon list);
// Pop passes them here, the records are read (one view request per presented broker at a time,
// up to Session::kMaxViewRecords each) and held until a receive takes them or they are stale.
// So a message coming back waits for one store request (its TAKE record), as a delayed message
// arriving does.
//
// Bounds: at most kMaxHeldBytes of records held, kMaxWanted messages waiting to be read per
// presented broker; past them a message is not read ahead and its receive reads it as before.
// A record is held until kKeepMs after its message's deadline (an ack before the deadline, or a
// receive that never came, leaves it to that). Records are immutable once stored, so a record
// held is the one a view would read (a record gone to retention meanwhile is still handed out:
// it was readable when its deadline neared).
//
// Threading: the reactor thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "net/core/pop_table.h"
#include "net/core/store_calls.h"

namespace uringmq::net {

class PopPrefetch {
 public:
  static constexpr size_t kMaxHeldBytes = 4u << 20;
  static constexpr size_t kMaxWanted = 4096;
  static constexpr int64_t kKeepMs = 1'000;
  // A view's buffer: a record larger than this is not read ahead.
  static constexpr uint32_t kReadBytes = 256u << 10;

  explicit PopPrefetch(StoreCalls& calls) : calls_(calls) {}
  PopPrefetch(const PopPrefetch&) = delete;
  PopPrefetch& operator=(const PopPrefetch&) = delete;

  // Messages of presented broker `shard` whose deadline is near: their records are read.
  void want(uint32_t shard, std::span<const PopSoon> soon);
  // A read's completion (BrokerOp::Kind::pop_prefetch): its records are held; the caller ends
  // the op.
  void read(uint32_t index, const Completion& c);
  // The records at `offsets` copied into `buffer` one after another in that order, as a view
  // answers them, and let go: their total size. nullopt when any of them is not held (the
  // caller reads them all from the store; nothing is taken).
  std::optional<size_t> take(std::span<const StoreOffset> offsets, std::span<std::byte> buffer);
  // Lets go of records kept kKeepMs past their message's deadline.
  void forget(int64_t now_ms);

  size_t held_bytes() const { return bytes_; }
  // Per presented broker: records read ahead, and those a receive took (the rest were acked,
  // changed or not taken within kKeepMs).
  struct Figures {
    uint64_t read = 0;
    uint64_t taken = 0;
  };
  Figures figures(uint32_t shard) const {
    return shard < shards_.size() ? shards_[shard].figures : Figures{};
  }

 private:
  struct Held {
    int64_t deadline_ms = 0;
    std::vector<std::byte> record;
  };
  struct Shard {
    std::deque<PopSoon> wanted;  // to read, in deadline order
    std::vector<StoreOffset> asked;
    std::vector<int64_t> asked_deadlines;
    bool reading = false;
    Figures figures;
  };
  void post(uint32_t shard);

  StoreCalls& calls_;
  std::vector<Shard> shards_;
  std::unordered_map<uint64_t, Held> held_;         // by store offset
  std::deque<std::pair<int64_t, uint64_t>> order_;  // (deadline, store offset) as held
  size_t bytes_ = 0;
};

}  // namespace uringmq::net
