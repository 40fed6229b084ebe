// Goal: the broker_conf fuzz target's logic (fuzz/broker_conf_fuzz.cc) runs in every ordinary
// test run over its seed corpus, and the seeds parse (or fail) as their names say.
// Method: include the target without its libFuzzer entry point (URINGMQ_FUZZ_NO_ENTRY), replay
// every corpus file and every prefix of each (corpus_replay.h), then parse named seeds.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/broker_conf_fuzz.cc"

#include <gtest/gtest.h>

#include "tests/unit/fuzz_replay/corpus_replay.h"

namespace uringmq::net {
namespace {

io::Result<BrokerConfig> parse_seed(const char* name) {
  std::vector<uint8_t> v =
      testing::read_corpus_file(testing::fuzz_corpus_dir("broker_conf") / name);
  return parse_broker_config(std::string_view(reinterpret_cast<const char*>(v.data()), v.size()),
                             name);
}

TEST(BrokerConfFuzzReplayTest, SeedCorpusRunsClean) {
  EXPECT_GE(testing::replay_fuzz_corpus("broker_conf", fuzz::broker_conf_fuzz_one), 6u);
}

TEST(BrokerConfFuzzReplayTest, SeedsParseAsNamed) {
  for (const char* name : {"tools_broker.conf", "minimal.conf", "comments.conf",
                           "ignored_keys.conf", "delay_levels.conf", "numbers.conf"}) {
    io::Result<BrokerConfig> c = parse_seed(name);
    EXPECT_TRUE(c.is_ok()) << name << ": " << c.status().message();
  }
  EXPECT_FALSE(parse_seed("bad.conf").is_ok());
}

}  // namespace
}  // namespace uringmq::net
