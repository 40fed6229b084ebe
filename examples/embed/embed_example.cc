// The smallest program embedding uringmq: open a store, send durably, read back, close.
// Built against the installed package (see CMakeLists.txt beside it).
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "engine/store.h"  // installed under include/uringmq/

int main(int argc, char** argv) {
  uringmq::StoreOptions options;
  options.data_dir = argc > 1 ? argv[1] : "./embed-data";
  options.shard_count = 2;
  options.log.segment_size_bytes = 64ull << 20;  // small segments for an example
  auto store = uringmq::Store::open(options);
  if (!store.is_ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().to_string().c_str());
    return 1;
  }
  auto session = (*store)->open_session();
  if (!session.is_ok()) return 1;
  const std::string text = "hello from an embedded uringmq";
  uringmq::Message message;
  message.topic = "ExampleTopic";
  message.queue_id = 0;
  message.body = std::as_bytes(std::span(text.data(), text.size()));
  uringmq::Completion sent = (*session)->send(message);  // durable once it returns ok
  if (sent.code != uringmq::io::Code::ok) return 1;
  std::vector<std::byte> record(4096);
  if (!(*session)->read_async(sent.offset, sent.size_bytes, record.data(), 1).is_ok()) return 1;
  uringmq::Completion read;
  (*session)->take_completions(std::span(&read, 1), true);
  bool found = std::search(record.begin(), record.end(),
                           reinterpret_cast<const std::byte*>(text.data()),
                           reinterpret_cast<const std::byte*>(text.data()) + text.size()) !=
               record.end();
  std::printf("sent to shard %u at queue offset %lld, read back: %s\n",
              uringmq::shard_of_offset(sent.offset), static_cast<long long>(sent.queue_offset),
              found ? "ok" : "MISMATCH");
  session->reset();
  return (*store)->close().is_ok() && found ? 0 : 1;
}
