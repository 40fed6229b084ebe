// Goal: the SQL92 filter fuzz target's logic (fuzz/sql_filter_fuzz.cc) runs in every ordinary
// test run over its seed corpus.
// Method: include the target without its libFuzzer entry point (URINGMQ_FUZZ_NO_ENTRY), replay
// every corpus file and every prefix of each (corpus_replay.h), then check one named seed.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/sql_filter_fuzz.cc"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/fuzz_replay/corpus_replay.h"

namespace uringmq::engine {
namespace {

TEST(SqlFilterFuzzReplayTest, SeedCorpusRunsClean) {
  EXPECT_GE(testing::replay_fuzz_corpus("sql_filter", fuzz::sql_filter_fuzz_one), 9u);
}

TEST(SqlFilterFuzzReplayTest, TheFirstSeedMatches) {
  std::vector<uint8_t> v =
      testing::read_corpus_file(testing::fuzz_corpus_dir("sql_filter") / "and_in.txt");
  std::string text(v.begin(), v.end());
  const size_t zero = text.find('\0');
  ASSERT_NE(zero, std::string::npos);
  io::Result<SqlFilter> filter = SqlFilter::compile(text.substr(0, zero));
  ASSERT_TRUE(filter.is_ok()) << filter.status().message();
  EXPECT_TRUE(filter->matches(text.substr(zero + 1)));
}

}  // namespace
}  // namespace uringmq::engine
