// Goal: plain_acl.yml reads as RocketMQ 4.9.8 reads it (net/security/acl_yaml.h,
// net/security/acl_rules.h), and a malformed file is an error naming its line; remote address
// patterns match as Java's RemoteAddressStrategyFactory matches them (net/security/acl_address.h).
// Method: parse the file RocketMQ ships (conf/plain_acl.yml's shape) and small variants, compare
// the rules and the exact error messages; match addresses inside and just outside each pattern.
#include <gtest/gtest.h>

#include <string>

#include "net/security/acl_address.h"
#include "net/security/acl_rules.h"
#include "net/security/acl_yaml.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

// RocketMQ 4.9.8's distribution/conf/plain_acl.yml, with its comments.
constexpr std::string_view kShipped = R"(# Licensed to the Apache Software Foundation (ASF)
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
)";

std::string error_of(std::string_view text) {
  io::Result<AclRules> rules = parse_acl_rules(text, "plain_acl.yml");
  return rules.is_ok() ? "parsed" : rules.status().message();
}

TEST(AclYamlTest, ReadsMapsListsAndScalars) {
  io::Result<YamlNode> root = parse_yaml(
      "a: 1\nb:\n- x\n- 'y z' # comment\nc:\n  d: \"q\\\"uote\"\n  e: []\n  f: [p, 'q, r']\n"
      "g:\n  - k: v\n    l: w\n  -\n    m: n\n",
      "t.yml");
  ASSERT_TRUE(root.is_ok()) << root.status().message();
  EXPECT_EQ(root->find("a")->text, "1");
  ASSERT_EQ(root->find("b")->items.size(), 2u);
  EXPECT_EQ(root->find("b")->items[1].text, "y z");
  EXPECT_EQ(root->find("c")->find("d")->text, "q\"uote");
  EXPECT_EQ(root->find("c")->find("e")->kind, YamlNode::Kind::list);
  EXPECT_TRUE(root->find("c")->find("e")->items.empty());
  ASSERT_EQ(root->find("c")->find("f")->items.size(), 2u);
  EXPECT_EQ(root->find("c")->find("f")->items[1].text, "q, r");
  const YamlNode* g = root->find("g");
  ASSERT_EQ(g->items.size(), 2u);
  EXPECT_EQ(g->items[0].find("l")->text, "w");
  EXPECT_EQ(g->items[1].find("m")->text, "n");
}

TEST(AclYamlTest, MalformedInputNamesTheLine) {
  auto error = [](std::string_view text) {
    io::Result<YamlNode> root = parse_yaml(text, "t.yml");
    return root.is_ok() ? std::string("parsed") : root.status().message();
  };
  EXPECT_EQ(error("a: 1\n\tb: 2\n"),
            "t.yml:2: a tab in the indentation (YAML indents with spaces)");
  EXPECT_EQ(error("a: 1\n    b: 2\n"), "t.yml:2: unexpected indentation");
  EXPECT_EQ(error("a: 1\njust text\n"), "t.yml:2: expected 'key: value' or 'key:'");
  EXPECT_EQ(error("a: 1\na: 2\n"), "t.yml:2: key 'a' appears twice in the same map");
  EXPECT_EQ(error("a: \"open\n"), "t.yml:1: a quoted value has no closing quote");
  EXPECT_EQ(error("a:\n  - x\n  y: 1\n"), "t.yml:3: unexpected indentation");
  EXPECT_EQ(error("a: 1\n- x\n"), "t.yml:2: a list item where a 'key: value' line was expected");
  EXPECT_NE(error("a: &anchor x\n").find("t.yml:1: '&' starts a YAML form"), std::string::npos);
  EXPECT_NE(error("a: [x, y\n").find("t.yml:1:"), std::string::npos);
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += std::string(2 * i, ' ') + "k:\n";
  deep += std::string(80, ' ') + "v: 1\n";
  EXPECT_NE(error(deep).find("nested deeper than 16 levels"), std::string::npos);
  EXPECT_EQ(parse_yaml(std::string(kAclYamlMaxBytes + 1, '#'), "t.yml").status().code(),
            io::Code::too_large);
}

TEST(AclRulesTest, ReadsTheShippedFile) {
  io::Result<AclRules> rules = parse_acl_rules(kShipped, "plain_acl.yml");
  ASSERT_TRUE(rules.is_ok()) << rules.status().message();
  ASSERT_EQ(rules->global_white_remote_addresses.size(), 2u);
  EXPECT_TRUE(rules->global_white_remote_addresses[0].matches("10.10.103.7"));
  ASSERT_EQ(rules->accounts.size(), 2u);
  const AclAccount& a = rules->accounts.at("RocketMQ");
  EXPECT_EQ(a.secret_key, "12345678");
  EXPECT_FALSE(a.admin);
  EXPECT_EQ(a.default_topic_perm, kAclDeny);
  EXPECT_EQ(a.default_group_perm, kAclSub);
  EXPECT_EQ(a.topic_perms.at("topicA"), kAclDeny);
  EXPECT_EQ(a.topic_perms.at("topicB"), kAclPub | kAclSub);
  EXPECT_EQ(a.group_perms.at("groupC"), kAclSub);
  EXPECT_FALSE(a.white_remote_address.matches("192.168.1.1"));  // blank: nothing
  const AclAccount& b = rules->accounts.at("rocketmq2");
  EXPECT_TRUE(b.admin);
  EXPECT_EQ(b.default_topic_perm, kAclDeny);  // absent: DENY
  EXPECT_TRUE(b.white_remote_address.matches("192.168.1.200"));
  EXPECT_FALSE(b.white_remote_address.matches("192.168.2.1"));
}

TEST(AclRulesTest, EmptyFileGrantsNothing) {
  io::Result<AclRules> rules = parse_acl_rules("# nothing yet\n", "plain_acl.yml");
  ASSERT_TRUE(rules.is_ok());
  EXPECT_TRUE(rules->accounts.empty());
}

TEST(AclRulesTest, MistakesAreErrorsNamingTheLine) {
  const std::string head = "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n";
  EXPECT_EQ(error_of(head + "    topicPerms:\n      - topicA=PUB|SUN\n"),
            "plain_acl.yml:5: permission 'PUB|SUN' is not one of DENY, PUB, SUB, PUB|SUB, SUB|PUB");
  EXPECT_EQ(error_of(head + "    groupPerms:\n      - groupA\n"),
            "plain_acl.yml:5: groupPerms entry 'groupA' is not name=PERM (for example topicA=SUB)");
  EXPECT_EQ(error_of(head + "    admin: maybe\n"), "plain_acl.yml:4: admin must be true or false");
  EXPECT_EQ(error_of(head + "    defaultTopicPerm: ALL\n"),
            "plain_acl.yml:4: permission 'ALL' is not one of DENY, PUB, SUB, PUB|SUB, SUB|PUB");
  EXPECT_EQ(error_of(head + "    whiteRemoteAddress: 192.168.*\n"),
            "plain_acl.yml:4: address pattern '192.168.*': a range needs four parts "
            "(192.168.*.*, 192.168.1.1-100)");
  EXPECT_EQ(error_of(head + head.substr(10)),
            "plain_acl.yml:4: accessKey 'RocketMQ' appears twice");
  // The secret is not in the message.
  const std::string short_secret =
      error_of("accounts:\n  - accessKey: RocketMQ\n    secretKey: s3cr\n");
  EXPECT_EQ(short_secret,
            "plain_acl.yml:2: account 'RocketMQ': accessKey and secretKey must both "
            "be longer than 6 characters");
  EXPECT_EQ(error_of("globalWhiteRemoteAddresses:\n  - 10.0.0.256\n"),
            "plain_acl.yml:2: address pattern '10.0.0.256': '10.0.0.256' is not an IPv4 address");
  EXPECT_EQ(error_of("accounts: 3\n"), "plain_acl.yml:1: accounts must be a list of maps");
}

TEST(AclRulesTest, RetryTopicPermsAreGroupPerms) {
  io::Result<AclRules> rules = parse_acl_rules(
      "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    topicPerms:\n"
      "      - '%RETRY%g1=SUB'\n",
      "plain_acl.yml");
  ASSERT_TRUE(rules.is_ok()) << rules.status().message();
  EXPECT_EQ(rules->accounts.at("RocketMQ").group_perms.at("g1"), kAclSub);
}

TEST(AclRulesTest, LoadNamesThePathAndLine) {
  testing::TempDir dir;
  const std::string path = dir.file("plain_acl.yml");
  io::Result<AclRules> missing = load_acl_rules(path);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(), "open " + path + ": No such file or directory");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const std::string bad = std::string(kShipped) + "admin true\n";
  std::fwrite(bad.data(), 1, bad.size(), f);
  std::fclose(f);
  io::Result<AclRules> malformed = load_acl_rules(path);
  ASSERT_FALSE(malformed.is_ok());
  EXPECT_EQ(malformed.status().message(), path + ":28: expected 'key: value' or 'key:'");
}

bool match(std::string_view pattern, std::string_view ip) {
  io::Result<AclAddressPattern> p = AclAddressPattern::parse(pattern);
  EXPECT_TRUE(p.is_ok()) << pattern << ": " << p.status().message();
  return p.is_ok() && p->matches(ip);
}

TEST(AclAddressTest, PatternsMatchAsJava) {
  EXPECT_FALSE(match("", "1.2.3.4"));
  EXPECT_TRUE(match("*", "1.2.3.4"));
  EXPECT_TRUE(match("*.*.*.*", "1.2.3.4"));
  EXPECT_TRUE(match("192.168.0.1", "192.168.0.1"));
  EXPECT_FALSE(match("192.168.0.1", "192.168.0.10"));
  EXPECT_TRUE(match("192.168.0.{1,2}", "192.168.0.2"));
  EXPECT_FALSE(match("192.168.0.{1,2}", "192.168.0.3"));
  EXPECT_TRUE(match("192.168.0.1,10.0.0.1", "10.0.0.1"));
  EXPECT_FALSE(match("192.168.0.1,10.0.0.1", "10.0.0.2"));
  EXPECT_TRUE(match("192.168.*.*", "192.168.77.1"));
  EXPECT_FALSE(match("192.168.*.*", "192.169.0.1"));
  EXPECT_TRUE(match("192.168.1.1-100", "192.168.1.100"));
  EXPECT_FALSE(match("192.168.1.1-100", "192.168.1.101"));
  EXPECT_FALSE(match("192.168.1.1-100", "192.168.1.0"));
  EXPECT_TRUE(match("10.1-5.*.*", "10.5.200.1"));
  EXPECT_FALSE(match("10.1-5.*.*", "10.6.0.1"));
  EXPECT_TRUE(match("192.168.0.*", "192.168.0.255"));
  EXPECT_FALSE(match("::1", "127.0.0.1"));  // IPv6 patterns never match an IPv4 peer
  for (std::string_view bad :
       {"192.168.*", "1.2.3.4-", "1.2.3.9-2", "1.2.3", "1.2.3.{1,x}", "01.2.3.4", "1.2.300.*"}) {
    EXPECT_FALSE(AclAddressPattern::parse(bad).is_ok()) << bad;
  }
}

}  // namespace
}  // namespace uringmq::net
