// Goal: the checkpoint fuzz target's logic (fuzz/checkpoint_fuzz.cc) runs in every ordinary test
// run over its seed corpus, and the valid seed is a valid checkpoint.
// Method: include the target without its libFuzzer entry point (URINGMQ_FUZZ_NO_ENTRY), replay
// every corpus file and every prefix of each (corpus_replay.h), then decode named seeds.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/checkpoint_fuzz.cc"

#include <gtest/gtest.h>

#include "tests/unit/fuzz_replay/corpus_replay.h"

namespace uringmq::engine {
namespace {

io::Result<Checkpoint> decode_seed(const char* name) {
  std::vector<uint8_t> v = testing::read_corpus_file(testing::fuzz_corpus_dir("checkpoint") / name);
  return decode_checkpoint({reinterpret_cast<const std::byte*>(v.data()), v.size()});
}

TEST(CheckpointFuzzReplayTest, SeedCorpusRunsClean) {
  EXPECT_GE(testing::replay_fuzz_corpus("checkpoint", fuzz::checkpoint_fuzz_one), 6u);
}

TEST(CheckpointFuzzReplayTest, SeedsDecodeAsNamed) {
  io::Result<Checkpoint> valid = decode_seed("valid.bin");
  ASSERT_TRUE(valid.is_ok()) << valid.status().message();
  EXPECT_EQ(valid->durable_offset, uint64_t{1} << 20);
  EXPECT_EQ(valid->durable_store_timestamp_ms, 1764460800123);
  EXPECT_EQ(valid->segment_size_bytes, uint64_t{1} << 30);
  EXPECT_TRUE(decode_seed("flags_set.bin").is_ok());  // reserved bytes are not checked
  for (const char* name : {"bad_crc.bin", "version_2.bin", "short.bin", "long.bin"}) {
    io::Result<Checkpoint> bad = decode_seed(name);
    ASSERT_FALSE(bad.is_ok()) << name;
    EXPECT_EQ(bad.status().code(), io::Code::corruption) << name;
  }
}

}  // namespace
}  // namespace uringmq::engine
