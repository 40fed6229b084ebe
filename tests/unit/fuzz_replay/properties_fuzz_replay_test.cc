// Goal: the properties fuzz target's logic (fuzz/properties_fuzz.cc) runs in every ordinary test
// run over its seed corpus.
// Method: include the target without its libFuzzer entry point (URINGMQ_FUZZ_NO_ENTRY), replay
// every corpus file and every prefix of each (corpus_replay.h), then check two named seeds.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/properties_fuzz.cc"

#include <gtest/gtest.h>

#include "tests/unit/fuzz_replay/corpus_replay.h"

namespace uringmq::engine {
namespace {

std::string seed(const char* name) {
  std::vector<uint8_t> v = testing::read_corpus_file(testing::fuzz_corpus_dir("properties") / name);
  return std::string(v.begin(), v.end());
}

TEST(PropertiesFuzzReplayTest, SeedCorpusRunsClean) {
  EXPECT_GE(testing::replay_fuzz_corpus("properties", fuzz::properties_fuzz_one), 5u);
}

TEST(PropertiesFuzzReplayTest, SeedsParseAsNamed) {
  std::string two = seed("two.txt");
  fuzz::PropertyList list = fuzz::properties_collect(two);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, "TAGS");
  EXPECT_EQ(list[1].second, "k1");
  // Malformed entries are skipped, well-formed ones around them kept.
  std::string malformed = seed("malformed.txt");
  EXPECT_EQ(find_property(malformed, "TAGS"), std::optional<std::string_view>("t"));
  EXPECT_EQ(find_property(malformed, "a"), std::optional<std::string_view>("b\x01"
                                                                           "c"));
}

}  // namespace
}  // namespace uringmq::engine
