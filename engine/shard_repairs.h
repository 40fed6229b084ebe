#pragma once
// ShardRepairs: a shard's repairs of damaged records from a replica (corruptRecordPolicy=repair;
// engine/README.md, "Repair from the replica"). A read or the scrub that finds a damaged record
// asks here first; the ask goes to the Store's RepairMailbox, the embedder's answerer fetches
// the peer's copy and answers with a shard_request::Repair; the copy is checked (its CRCs and
// every check of check_stored_record, its PHYSICALOFFSET equal to its offset, its size equal to
// the ConsumeQueue unit's, or within the scrub's damaged span) and written back in place
// (engine/log/record_repair.h). Whoever waits on it (pulls) hears the end through `on_ended`:
// repaired (read it again) or not (quarantine it, as before).
//
// Bounds: at most kMaxPending asks per shard; an ask unanswered after kAnswerWaitMs ends
// unrepaired; one write-back at a time (an answer that finds it busy waits in its ring). A
// record repaired and found damaged again (its bytes are damaged where a write cannot reach,
// say in the page cache) is not asked for again: it is quarantined. A failed write or fdatasync
// of a write-back stops repairs on the shard for good (logged; never retried).
// Threading: the shard's thread.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/log/record_repair.h"
#include "engine/shard_core.h"
#include "engine/shard_request.h"

namespace uringmq {

namespace engine {
class RepairMailbox;
}  // namespace engine

class ShardRepairs {
 public:
  static constexpr uint32_t kMaxPending = 64;
  // How long an ask waits for its answer: a reader's (a pull waits on it), the scrub's (nobody
  // waits; a replica just restarted may take that long to be known again).
  static constexpr int64_t kAnswerWaitMs = 10'000;
  static constexpr int64_t kScrubAnswerWaitMs = 60'000;
  // The scrub's damaged bytes kept while its asks wait (to quarantine them if no copy comes).
  static constexpr size_t kScrubBytesMax = 8u << 20;
  static constexpr uint32_t kRepairedKept = 64;
  enum class Asked : uint8_t { waiting, unavailable };
  // An ask ended: repaired, or not; an unrepaired scrub's find comes with its bytes and failed
  // check (to be quarantined as the scrub would have).
  using Ended = std::function<void(uint64_t log_offset, bool repaired,
                                   std::span<const std::byte> scrub_bytes, const char* reason)>;

  explicit ShardRepairs(ShardCore& core) : core_(core) {}
  ShardRepairs(const ShardRepairs&) = delete;
  ShardRepairs& operator=(const ShardRepairs&) = delete;

  // Before the shard starts: where asks go (nullptr: none; every ask is unavailable).
  void set_mailbox(engine::RepairMailbox* mailbox) { mailbox_ = mailbox; }
  void set_on_ended(Ended on_ended) { on_ended_ = std::move(on_ended); }
  // Once the shard's disk exists (after recovery); close() before the disk goes.
  void open();
  void close() { writer_.reset(); }

  // A damaged record at log_offset, size_bytes long (a ConsumeQueue unit's), found by a read.
  // waiting: asked (now or before); on_ended follows. A read meeting the scrub's ask for it asks
  // again with a reader's bounds (the answerer may wait longer for a scrub's), and whichever
  // answer comes first ends both. unavailable: no replica can be asked (none
  // enabled, the asks full, repaired before, repairs stopped).
  Asked ask(uint64_t log_offset, uint32_t size_bytes, const char* found_by);
  // The scrub's find: its bytes up to the next whole record (kept, within kScrubBytesMax, until
  // the ask ends) and its failed check.
  Asked ask_scrubbed(uint64_t log_offset, std::span<const std::byte> bytes, const char* reason);
  bool pending(uint64_t log_offset) const;
  // The answer to an ask. False: a write-back is running; the request waits in its ring.
  bool handle(uint32_t slot_index, const shard_request::Repair& request);
  void submit_work() {
    if (writer_ != nullptr) writer_->submit_work();
  }
  void complete(const io::IoCompletion& completion);
  // Asks unanswered past kAnswerWaitMs end unrepaired.
  void expire(int64_t now_ms);
  int64_t next_deadline_ms() const;
  // A write-back in flight (a stop waits for it; retention deletes no segment meanwhile).
  bool busy() const { return writer_ != nullptr && writer_->busy(); }

 private:
  struct Pending {
    uint64_t log_offset = 0;
    uint32_t size_bytes = 0;
    bool exact_size = true;
    bool reader_asked = false;  // a read met the scrub's ask: asked again as a reader's
    int64_t deadline_ms = 0;
    std::vector<std::byte> scrub_bytes;
    const char* reason = nullptr;
  };
  Asked push(Pending pending, const char* found_by);
  size_t index_of(uint64_t log_offset) const;  // in pending_; pending_.size() when none
  // The ask to the embedder's answerer; false when the mailbox is full.
  bool post(const Pending& p, const char* found_by);
  // The checks a copy passes before it is written; nullptr when it passes, else the reason.
  const char* check_copy(const Pending& ask, std::span<const std::byte> copy) const;
  // Where the copy may be written; nullptr when it may, else the reason.
  const char* check_place(uint64_t log_offset, uint32_t size_bytes) const;
  void answer(uint32_t slot_index, uint64_t tag, io::Code code);
  // The ask for log_offset ends (removed), and its waiters hear it.
  void end(uint64_t log_offset, bool repaired);
  void log_failure(uint64_t log_offset, std::string_view peer, std::string_view why) const;
  void writer_ended(engine::RecordRepair::Ended how);

  ShardCore& core_;
  engine::RepairMailbox* mailbox_ = nullptr;
  Ended on_ended_;
  std::vector<Pending> pending_;
  size_t scrub_bytes_kept_ = 0;
  std::unique_ptr<engine::RecordRepair> writer_;
  // The write-back running: whose answer, and what it writes.
  uint32_t writing_slot_ = 0;
  uint64_t writing_tag_ = 0;
  uint64_t writing_offset_ = 0;
  uint32_t writing_size_ = 0;
  std::string writing_peer_;
  // Records repaired lately (a ring): found damaged again, they are not asked for again.
  std::array<uint64_t, kRepairedKept> repaired_{};
  uint32_t repaired_count_ = 0;
  uint32_t repaired_next_ = 0;
  bool stopped_ = false;  // a write-back's write or fdatasync failed
};

}  // namespace uringmq
