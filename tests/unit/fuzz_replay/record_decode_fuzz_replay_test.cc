// Goal: the record_decode fuzz target's logic (fuzz/record_decode_fuzz.cc) runs in every ordinary
// test run over its seed corpus, and the seeds are what their names say (so the corpus keeps
// leading the fuzzer to whole records).
// Method: include the target without its libFuzzer entry point (URINGMQ_FUZZ_NO_ENTRY), replay
// every corpus file and every prefix of each (corpus_replay.h), then decode named seeds.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/record_decode_fuzz.cc"

#include <gtest/gtest.h>

#include "tests/unit/fuzz_replay/corpus_replay.h"

namespace uringmq::engine {
namespace {

std::vector<uint8_t> seed(const char* name) {
  return testing::read_corpus_file(testing::fuzz_corpus_dir("record_decode") / name);
}

std::span<const std::byte> bytes_of(const std::vector<uint8_t>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}

TEST(RecordDecodeFuzzReplayTest, SeedCorpusRunsClean) {
  EXPECT_GE(testing::replay_fuzz_corpus("record_decode", fuzz::record_decode_fuzz_one), 8u);
}

TEST(RecordDecodeFuzzReplayTest, SeedsAreWholeRecords) {
  for (const char* name : {"simple.bin", "no_user_properties.bin", "ipv6_hosts.bin", "body_300.bin",
                           "multi_tags.bin"}) {
    std::vector<uint8_t> data = seed(name);
    DecodeResult r = decode(bytes_of(data), DecodeOptions{});
    EXPECT_EQ(r.outcome, DecodeOutcome::ok) << name << ": " << r.reason;
    EXPECT_EQ(r.size, data.size()) << name;
  }
  std::vector<uint8_t> simple = seed("simple.bin");
  DecodeResult r = decode(bytes_of(simple), DecodeOptions{});
  ASSERT_EQ(r.outcome, DecodeOutcome::ok);
  EXPECT_EQ(r.view.topic, "TopicTest");
  EXPECT_EQ(r.view.user_properties, std::string_view("TAGS\x01TagA\x02KEYS\x01k1"));
}

TEST(RecordDecodeFuzzReplayTest, SeedsReachTheOtherOutcomes) {
  std::vector<uint8_t> no_crc = seed("rocketmq_no_crc.bin");
  EXPECT_EQ(decode(bytes_of(no_crc), DecodeOptions{}).outcome, DecodeOutcome::corrupt);
  DecodeOptions lax;
  lax.require_record_crc = false;
  EXPECT_EQ(decode(bytes_of(no_crc), lax).outcome, DecodeOutcome::ok);
  EXPECT_EQ(decode(bytes_of(seed("bad_record_crc.bin")), DecodeOptions{}).outcome,
            DecodeOutcome::corrupt);
  EXPECT_EQ(decode(bytes_of(seed("blank.bin")), DecodeOptions{}).outcome, DecodeOutcome::blank);
  EXPECT_EQ(decode(bytes_of(seed("zeros.bin")), DecodeOptions{}).outcome, DecodeOutcome::end);
  EXPECT_EQ(decode(bytes_of(seed("truncated.bin")), DecodeOptions{}).outcome,
            DecodeOutcome::truncated);
  // Two records, then the blank record.
  std::vector<uint8_t> two = seed("two_records_then_blank.bin");
  std::span<const std::byte> rest = bytes_of(two);
  for (int i = 0; i < 2; i++) {
    DecodeOptions placed;
    placed.expected_physical_offset = static_cast<int64_t>(two.size() - rest.size());
    DecodeResult r = decode(rest, placed);
    ASSERT_EQ(r.outcome, DecodeOutcome::ok) << i << ": " << r.reason;
    rest = rest.subspan(r.size);
  }
  EXPECT_EQ(decode(rest, DecodeOptions{}).outcome, DecodeOutcome::blank);
}

}  // namespace
}  // namespace uringmq::engine
