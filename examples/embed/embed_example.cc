// The smallest program embedding uringmq: open a store, send durably, read the messages back
// decoded, close. Built against the installed package (see CMakeLists.txt beside it): it
// includes only the public headers, <uringmq/...>.
#include <uringmq/reader.h>
#include <uringmq/store.h>

#include <cstdio>
#include <span>
#include <string>

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
  // Properties are RocketMQ's string: name \x01 value, joined by \x02.
  const std::string properties = std::string("TAGS\x01greeting\x02KEYS\x01") + "hello-1";
  const std::string texts[] = {"hello from an embedded uringmq", "and a second message"};
  for (const std::string& text : texts) {
    uringmq::Message message;
    message.topic = "ExampleTopic";
    message.queue_id = 0;
    message.body = std::as_bytes(std::span(text.data(), text.size()));
    message.properties = properties;
    uringmq::Completion sent = (*session)->send(message);  // durable once it returns ok
    if (sent.code != uringmq::io::Code::ok) return 1;
    std::printf("sent to shard %u at queue offset %lld\n", uringmq::shard_of_offset(sent.offset),
                static_cast<long long>(sent.queue_offset.value));
  }
  uringmq::MessageReader reader(**store, **session);
  uringmq::ReadRequest request;
  request.topic = "ExampleTopic";
  request.queue_id = 0;
  request.tag_filter = "greeting";
  auto batch = reader.read(request);
  if (!batch.is_ok()) {
    std::fprintf(stderr, "read: %s\n", batch.status().to_string().c_str());
    return 1;
  }
  bool same = batch->messages.size() == 2;
  for (size_t i = 0; i < batch->messages.size(); i++) {
    const uringmq::ReadMessage& m = batch->messages[i];
    std::printf("read %.*s/%d@%lld store offset %llu tags=%.*s keys=%.*s stored at %lld: %.*s\n",
                static_cast<int>(m.topic.size()), m.topic.data(), m.queue_id,
                static_cast<long long>(m.queue_offset.value),
                static_cast<unsigned long long>(m.store_offset.value),
                static_cast<int>(m.tags.size()), m.tags.data(), static_cast<int>(m.keys.size()),
                m.keys.data(), static_cast<long long>(m.store_timestamp_ms),
                static_cast<int>(m.body.size()), reinterpret_cast<const char*>(m.body.data()));
    same = same && i < 2 && m.body_text() == texts[i];
  }
  std::printf("read back: %s\n", same ? "ok" : "MISMATCH");
  session->reset();
  return (*store)->close().is_ok() && same ? 0 : 1;
}
