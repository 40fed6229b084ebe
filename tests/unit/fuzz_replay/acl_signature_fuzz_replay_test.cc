// Goal: the acl_signature fuzz target's logic (fuzz/acl_signature_fuzz.cc) runs in every ordinary
// test run over its seed corpus, with the invariants it asserts.
// Method: include the target without its libFuzzer entry point (URINGMQ_FUZZ_NO_ENTRY), replay
// every corpus file and every prefix of each (corpus_replay.h), then check that the seeds reach
// the paths they were written for.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/acl_signature_fuzz.cc"

#include <gtest/gtest.h>

#include "tests/unit/fuzz_replay/corpus_replay.h"

namespace uringmq::net {
namespace {

std::string seed_refusal(const char* name) {
  std::vector<uint8_t> v =
      testing::read_corpus_file(testing::fuzz_corpus_dir("acl_signature") / name);
  std::string_view rest(reinterpret_cast<const char*>(v.data()), v.size());
  const std::string_view yml = fuzz::acl_fuzz_part(&rest);
  const std::string_view fields = fuzz::acl_fuzz_part(&rest);
  const std::string_view body = fuzz::acl_fuzz_part(&rest);
  const std::string_view peer = fuzz::acl_fuzz_part(&rest);
  io::Result<AclRules> rules = parse_acl_rules(yml, "seed.yml");
  if (!rules.is_ok()) return rules.status().message();
  AclValidator validator(std::move(*rules));
  return validator.check(fuzz::acl_fuzz_request(fields), as_bytes(body), peer).value_or("OK");
}

TEST(AclSignatureFuzzReplayTest, SeedCorpusRunsClean) {
  EXPECT_GE(testing::replay_fuzz_corpus("acl_signature", fuzz::acl_signature_fuzz_one), 10u);
}

TEST(AclSignatureFuzzReplayTest, SeedsReachTheirPaths) {
  EXPECT_NE(seed_refusal("send_v2.bin").find("Check signature failed"), std::string::npos);
  EXPECT_NE(seed_refusal("send_denied.bin").find("Check signature failed"), std::string::npos);
  EXPECT_EQ(seed_refusal("pull.bin"), "OK");  // global white address
  EXPECT_NE(seed_refusal("admin.bin").find("Check signature failed"), std::string::npos);
  EXPECT_NE(seed_refusal("unique_key.bin").find("No accessKey"), std::string::npos);
  EXPECT_NE(seed_refusal("bad_rules.bin").find("seed.yml:3:"), std::string::npos);
}

}  // namespace
}  // namespace uringmq::net
