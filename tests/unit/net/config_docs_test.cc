// docs/configuration.md against the broker's own key table: every key broker.conf accepts
// (broker_config_keys(), from the parser's tables) has exactly one row there, every row names a
// key the broker accepts, ignored keys say so, and each documented default is the value the
// broker takes from an empty broker.conf (describe_broker_config, what it logs at start). The
// manual and the parser cannot drift apart.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "net/ops/broker_config.h"

namespace uringmq::net {
namespace {

struct DocRow {
  std::string default_cell;
  std::string meaning;
  int count = 0;
};

// The rows "| `key` | default | meaning |" of the manual's tables, by key.
std::map<std::string, DocRow> documented_keys() {
  std::ifstream file(std::string(URINGMQ_SOURCE_DIR) + "/docs/configuration.md");
  EXPECT_TRUE(file.good()) << "docs/configuration.md is missing";
  std::map<std::string, DocRow> rows;
  std::string line;
  while (std::getline(file, line)) {
    if (!line.starts_with("| `")) continue;
    const size_t key_end = line.find('`', 3);
    const size_t cell_end = line.find(" | ", key_end + 4);
    const size_t meaning_end = line.rfind(" |");
    if (key_end == std::string::npos || cell_end == std::string::npos || meaning_end <= cell_end) {
      ADD_FAILURE() << "a table row of docs/configuration.md is malformed: " << line;
      continue;
    }
    DocRow& row = rows[line.substr(3, key_end - 3)];
    row.default_cell = line.substr(key_end + 4, cell_end - key_end - 4);
    row.meaning = line.substr(cell_end + 3, meaning_end - cell_end - 3);
    row.count++;
  }
  return rows;
}

// key -> value of each "key=value" line of a description.
void add_lines(std::map<std::string, std::string>& out, const std::string& description) {
  std::istringstream lines(description);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
}

// key -> the value the broker takes for it from an empty broker.conf: every line
// describe_broker_config gives (what it logs at start). With TLS disabled that names only
// tls.server.mode, so the other tls.server.* defaults come from describing the default TlsConfig
// with a mode set; it leaves out keyPassword and trustCertPath while they are empty.
std::map<std::string, std::string> defaults() {
  io::Result<BrokerConfig> config = parse_broker_config("", "/etc/uringmq/broker.conf");
  EXPECT_TRUE(config.is_ok()) << config.status().to_string();
  std::map<std::string, std::string> out;
  TlsConfig tls = config->tls;
  tls.mode = TlsMode::permissive;
  add_lines(out, describe_tls_config(tls));
  for (std::string_view key : kTlsServerKeys) out.try_emplace(std::string(key));
  add_lines(out, describe_broker_config(*config));  // tls.server.mode: the real default
  return out;
}

TEST(ConfigDocs, EveryAcceptedKeyHasOneRowAndEveryRowIsAccepted) {
  std::map<std::string, DocRow> rows = documented_keys();
  std::map<std::string, bool> accepted;
  for (const BrokerConfigKey& k : broker_config_keys()) accepted[std::string(k.key)] = k.ignored;
  ASSERT_GT(accepted.size(), 60u);
  for (const auto& [key, ignored] : accepted) {
    auto it = rows.find(key);
    if (it == rows.end()) {
      ADD_FAILURE() << "broker.conf key " << key << " is not in docs/configuration.md";
      continue;
    }
    EXPECT_EQ(it->second.count, 1) << key << " has " << it->second.count << " rows";
    if (ignored) {
      EXPECT_EQ(it->second.default_cell, "(ignored)") << key;
      EXPECT_NE(it->second.meaning.find("ignored"), std::string::npos) << key;
    }
    EXPECT_FALSE(it->second.meaning.empty()) << key << " has no meaning written";
  }
  for (const auto& [key, row] : rows) {
    EXPECT_TRUE(accepted.contains(key))
        << "docs/configuration.md documents " << key << ", which broker.conf does not accept";
  }
}

// Every tls.server.* key broker.conf accepts is one set_tls_key takes (the parser refuses the
// ones it does not list).
TEST(ConfigDocs, EveryListedTlsKeyIsTaken) {
  for (std::string_view key : kTlsServerKeys) {
    TlsConfig tls;
    EXPECT_NE(set_tls_key(tls, key, "x"), "unknown") << key;
  }
}

// The defaults test below covers every key: each one the broker acts on has its value in the
// description (and so in the startup log).
TEST(ConfigDocs, EveryAcceptedKeyHasABrokerDefault) {
  std::map<std::string, std::string> values = defaults();
  for (const BrokerConfigKey& k : broker_config_keys()) {
    if (k.ignored) continue;
    EXPECT_TRUE(values.contains(std::string(k.key)))
        << k.key << " is accepted but describe_broker_config does not give its value";
  }
}

// A default is written `value` (a code span), or (none) where the broker's value is empty.
// aclFilePath's depends on where broker.conf is, and is said in words.
TEST(ConfigDocs, DocumentedDefaultsAreTheBrokersOwn) {
  std::map<std::string, DocRow> rows = documented_keys();
  for (const auto& [key, value] : defaults()) {
    if (key == "aclFilePath") continue;
    auto it = rows.find(key);
    if (it == rows.end()) continue;  // reported by the test above
    const std::string want = value.empty() ? "(none)" : "`" + value + "`";
    EXPECT_EQ(it->second.default_cell, want)
        << key << ": docs/configuration.md says " << it->second.default_cell
        << ", the broker's default is " << value;
  }
}

}  // namespace
}  // namespace uringmq::net
