#include "net/core/pop_journal.h"

#include <algorithm>
#include <optional>
#include <variant>

#include "engine/log/byte_order.h"

namespace uringmq::net {
namespace {

constexpr size_t kEntryBytes = 4 + 8 + 8 + 2 + 8 + 8;

io::Status bad(const std::string& why) {
  return io::Status::error(io::Code::invalid_argument, "POP journal record: " + why);
}

struct Reader {
  std::span<const std::byte> in;
  size_t at = 0;
  bool ok = true;
  bool has(size_t n) {
    ok = ok && at + n <= in.size();
    return ok;
  }
  uint64_t u(size_t n) {
    if (!has(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v = (v << 8) | static_cast<uint8_t>(in[at + i]);
    at += n;
    return v;
  }
  std::string text() {
    const size_t n = u(1);
    if (!has(n)) return {};
    std::string s(reinterpret_cast<const char*>(in.data() + at), n);
    at += n;
    return s;
  }
};

void put(std::vector<std::byte>* out, uint64_t v, size_t n) {
  for (size_t i = n; i > 0; i--) out->push_back(static_cast<std::byte>(v >> (8 * (i - 1))));
}

void put_text(std::vector<std::byte>* out, const std::string& s) {
  put(out, s.size(), 1);
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out->insert(out->end(), p, p + s.size());
}

}  // namespace

std::vector<std::byte> encode_journal(const JournalRecord& record) {
  std::vector<std::byte> out;
  out.reserve(32 + record.key.group.size() + record.key.topic.size() +
              record.entries.size() * kEntryBytes);
  put(&out, static_cast<uint8_t>(record.kind), 1);
  put_text(&out, record.key.group);
  put_text(&out, record.key.topic);
  put(&out, static_cast<uint32_t>(record.key.queue_id), 4);
  put(&out, static_cast<uint64_t>(record.next_offset), 8);
  put(&out, record.entries.size(), 2);
  for (const JournalEntry& e : record.entries) {
    put(&out, e.slot, 4);
    put(&out, static_cast<uint64_t>(e.message.queue_offset), 8);
    put(&out, e.message.store_offset, 8);
    put(&out, e.message.attempt, 2);
    put(&out, e.message.handing_id, 8);
    put(&out, static_cast<uint64_t>(e.message.deadline_ms), 8);
  }
  return out;
}

io::Status decode_journal(std::span<const std::byte> body, JournalRecord* out) {
  Reader r{body};
  const uint64_t kind = r.u(1);
  if (kind < 1 || kind > 3) return bad("unknown kind " + std::to_string(kind));
  out->kind = static_cast<JournalKind>(kind);
  out->key.group = r.text();
  out->key.topic = r.text();
  out->key.queue_id = static_cast<int32_t>(r.u(4));
  out->next_offset = static_cast<int64_t>(r.u(8));
  const size_t count = r.u(2);
  if (!r.ok) return bad("shorter than its header");
  if (out->key.group.empty() || out->key.topic.empty() || out->key.queue_id < 0) {
    return bad("no group, topic or queue");
  }
  if (count > kMaxJournalEntries || r.at + count * kEntryBytes != body.size()) {
    return bad(std::to_string(count) + " entries do not fill " + std::to_string(body.size()) +
               " bytes");
  }
  out->entries.resize(count);
  for (JournalEntry& e : out->entries) {
    e.slot = static_cast<uint32_t>(r.u(4));
    e.message.queue_offset = static_cast<int64_t>(r.u(8));
    e.message.store_offset = r.u(8);
    e.message.attempt = static_cast<uint16_t>(r.u(2));
    e.message.handing_id = r.u(8);
    e.message.deadline_ms = static_cast<int64_t>(r.u(8));
  }
  return io::Status::ok();
}

io::Status apply_journal(const JournalRecord& record, int64_t journal_offset,
                         PopQueueOptions options, PopTable* table) {
  std::optional<uint32_t> found = table->find_queue(record.key);
  if (!found && record.kind != JournalKind::take) return io::Status::ok();  // ended before
  if (!found) {
    // The queue's first hand-out since the replay's start: what is below it was ended.
    int64_t start = record.next_offset;
    for (const JournalEntry& e : record.entries) start = std::min(start, e.message.queue_offset);
    std::variant<Refusal, uint32_t> opened =
        table->open_queue(record.key, std::max<int64_t>(start, 0), options);
    if (const Refusal* refused = std::get_if<Refusal>(&opened)) return bad(refused->reason);
    found = std::get<uint32_t>(opened);
  }
  const uint32_t q = *found;
  for (const JournalEntry& e : record.entries) {
    PopTable::RestoredMessage m = e.message;
    m.journal_offset = journal_offset;
    switch (record.kind) {
      case JournalKind::take:
        if (auto refused = table->restore_taken(q, e.slot, m)) return bad(refused->reason);
        break;
      case JournalKind::end:
        table->restore_end(e.slot, q, m.queue_offset);
        break;
      case JournalKind::change:
        table->restore_change(e.slot, q, m);
        break;
    }
  }
  if (record.kind == JournalKind::take && record.next_offset >= 0) {
    table->restore_cursor(q, record.next_offset);
  }
  return io::Status::ok();
}

}  // namespace uringmq::net
