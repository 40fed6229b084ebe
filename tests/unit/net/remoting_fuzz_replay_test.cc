// Goal: the remoting_frame fuzz target's logic (fuzz/remoting_frame_fuzz.cc) runs in every
// ordinary test run, over its whole seed corpus, with the invariants it asserts.
// Method: include the target with its libFuzzer entry point left out (URINGMQ_FUZZ_NO_ENTRY),
// locate fuzz/corpus/remoting_frame/ from this file's path, and feed each file, plus every
// prefix of each file (the stream decoder's need_more paths). An invariant violation aborts
// the test binary, which CTest reports as a failure.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/remoting_frame_fuzz.cc"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace uringmq::net {
namespace {

std::filesystem::path corpus_dir() {
  // tests/unit/net/<this file> -> <repo>/fuzz/corpus/remoting_frame
  return std::filesystem::path(__FILE__).parent_path() / ".." / ".." / ".." / "fuzz" / "corpus" /
         "remoting_frame";
}

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(RemotingFuzzReplayTest, SeedCorpusRunsClean) {
  std::filesystem::path dir = corpus_dir();
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::vector<uint8_t> data = read_file(entry.path());
    SCOPED_TRACE(entry.path().filename().string());
    for (size_t n = 0; n <= data.size(); n++) {
      // An exact-size copy, so ASan builds catch a read past the prefix.
      std::vector<uint8_t> prefix(data.begin(), data.begin() + static_cast<ptrdiff_t>(n));
      EXPECT_EQ(fuzz::remoting_frame_fuzz_one(prefix.data(), prefix.size()), 0);
    }
    files++;
  }
  EXPECT_GE(files, 6u) << "seed corpus missing from " << dir;
}

// The replayed target really decodes: the ali-ons seed yields one whole frame.
TEST(RemotingFuzzReplayTest, AliOnsSeedIsAWholeFrame) {
  std::vector<uint8_t> data = read_file(corpus_dir() / "alions_send_310.bin");
  ASSERT_FALSE(data.empty());
  DecodedFrame frame;
  std::string error;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data.data()), data.size());
  ASSERT_EQ(decode_frame(in, RemotingLimits{}, &frame, &error), DecodeStatus::ok) << error;
  EXPECT_EQ(frame.frame_bytes, data.size());
  EXPECT_EQ(frame.command.code, request_code::kSendMessageV2);
}

}  // namespace
}  // namespace uringmq::net
