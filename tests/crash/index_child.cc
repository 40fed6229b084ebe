// Child of index_kill9_test: sends messages with KEYS "ik-<n>" and UNIQ_KEY "iu-<n>" for n from
// its first argument on, through a real Store with small index files (they roll), printing
// "A <n>" once each send is acknowledged. Runs until killed.
// Usage: uringmq_index_child <data dir> <first n>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/store.h"
#include "tests/crash/index_store_options.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  auto store = uringmq::Store::open(uringmq::testing::index_crash_options(argv[1]));
  if (!store.is_ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().to_string().c_str());
    return 1;
  }
  auto session = (*store)->open_session();
  if (!session.is_ok()) return 1;
  uringmq::Session& s = **session;
  for (long long n = std::atoll(argv[2]);; n++) {
    const std::string n_text = std::to_string(n);
    const std::string props = "KEYS\x01ik-" + n_text + " all\x02UNIQ_KEY\x01iu-" + n_text + "\x02";
    const std::string body = "index body " + n_text;
    uringmq::Message m;
    m.topic = "IndexTopic";
    m.queue_id = static_cast<int32_t>(n % 4);
    m.body = std::as_bytes(std::span(body));
    m.properties = props;
    if (s.send(m).code != uringmq::io::Code::ok) return 1;
    std::printf("A %lld\n", n);
    std::fflush(stdout);
  }
}
