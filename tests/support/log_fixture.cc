#include "tests/support/log_fixture.h"

#include <array>
#include <cstring>

#include "engine/log/properties.h"

namespace uringmq::testing {

engine::CommitLogOptions small_log_options(const std::string& dir) {
  engine::CommitLogOptions options;
  options.dir = dir;
  options.segment_size_bytes = 128u << 10;
  options.write_buffer_bytes = 64u << 10;
  options.write_buffer_count = 4;
  options.max_unsynced_bytes = 256u << 10;
  options.limits.max_body_bytes = 8u << 10;
  options.zero_fill_chunk_bytes = 32u << 10;
  options.max_pending_acks = 4096;
  return options;
}

engine::MessageInput TestMessage::input() const {
  engine::MessageInput in;
  in.topic = topic;
  in.queue_id = 0;
  in.body = body;
  in.properties = properties;
  in.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 40000);
  in.store_host = engine::HostAddress::ipv4(127, 0, 0, 1, 10911);
  return in;
}

static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

TestMessage make_message(uint32_t producer, uint64_t seq, uint32_t body_bytes) {
  TestMessage m;
  m.topic = "TopicTest";
  engine::append_property(m.properties, "P", std::to_string(producer));
  engine::append_property(m.properties, "S", std::to_string(seq));
  m.body.resize(body_bytes);
  uint64_t state = mix((uint64_t{producer} << 40) ^ seq);
  for (uint32_t i = 0; i < body_bytes; i++) {
    if (i % 8 == 0) state = mix(state);
    m.body[i] = static_cast<std::byte>(state >> (8 * (i % 8)));
  }
  return m;
}

bool parse_message(const engine::MessageView& view, uint32_t* producer, uint64_t* seq) {
  auto p = engine::find_property(view.user_properties, "P");
  auto s = engine::find_property(view.user_properties, "S");
  if (!p || !s) return false;
  *producer = static_cast<uint32_t>(std::stoul(std::string(*p)));
  *seq = std::stoull(std::string(*s));
  TestMessage expected = make_message(*producer, *seq, static_cast<uint32_t>(view.body.size()));
  return view.topic == expected.topic &&
         std::memcmp(view.body.data(), expected.body.data(), view.body.size()) == 0;
}

io::Result<engine::AppendResult> append_retrying(engine::CommitLog& log,
                                                 const engine::MessageInput& input, uint64_t tag,
                                                 int max_polls) {
  for (int i = 0; i < max_polls; i++) {
    io::Result<engine::AppendResult> r = log.append(input, 0, tag);
    if (r.is_ok() || r.status().code() != io::Code::busy) return r;
    log.poll(io::Wait::at_least_one);
  }
  return io::Status::error(io::Code::busy, "append stayed busy");
}

void drain_acks(engine::CommitLog& log, std::vector<engine::Ack>* acks, int max_polls) {
  std::array<engine::Ack, 256> batch;
  for (int i = 0; i < max_polls; i++) {
    log.poll(io::Wait::at_least_one);
    size_t n;
    while ((n = log.take_acks(batch)) > 0)
      acks->insert(acks->end(), batch.begin(), batch.begin() + n);
    if (log.pending_work() == 0) return;
  }
}

io::Result<std::vector<StoredRecord>> read_log(io::Disk& disk,
                                               const engine::CommitLogOptions& options) {
  std::vector<StoredRecord> out;
  bool foreign = false;
  io::Result<engine::ScanEnd> end =
      engine::scan_log(disk, options, [&](uint64_t offset, const engine::MessageView& view) {
        StoredRecord r;
        r.offset = offset;
        if (!parse_message(view, &r.producer, &r.seq)) foreign = true;
        out.push_back(r);
      });
  if (!end.is_ok()) return end.status();
  if (foreign) return io::Status::error(io::Code::corruption, "a record has a foreign payload");
  return out;
}

}  // namespace uringmq::testing
