#include "net/security/acl_rules.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "net/security/acl_yaml.h"

namespace uringmq::net {
namespace {

constexpr std::string_view kRetryPrefix = "%RETRY%";

io::Status rule_error(std::string_view source, size_t line, const std::string& what) {
  return io::Status::error(io::Code::invalid_argument,
                           std::string(source) + ":" + std::to_string(line) + ": " + what);
}

// A scalar's text; an absent or null value is empty.
io::Result<std::string> scalar_text(const YamlNode* node, std::string_view source,
                                    std::string_view key) {
  if (node == nullptr || node->kind == YamlNode::Kind::null) return std::string();
  if (node->kind != YamlNode::Kind::scalar) {
    return rule_error(source, node->line, std::string(key) + " must be a single value");
  }
  return node->text;
}

io::Result<uint8_t> parse_perm(std::string_view word, std::string_view source, size_t line) {
  if (word == "DENY") return kAclDeny;
  if (word == "PUB") return kAclPub;
  if (word == "SUB") return kAclSub;
  if (word == "PUB|SUB" || word == "SUB|PUB") return static_cast<uint8_t>(kAclPub | kAclSub);
  return rule_error(
      source, line,
      "permission '" + std::string(word) + "' is not one of DENY, PUB, SUB, PUB|SUB, SUB|PUB");
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// topicPerms / groupPerms: a list of "name=PERM".
io::Status parse_resources(const YamlNode* list, bool topics, std::string_view source,
                           AclAccount* account) {
  if (list == nullptr || list->kind == YamlNode::Kind::null) return {};
  const char* what = topics ? "topicPerms" : "groupPerms";
  if (list->kind != YamlNode::Kind::list) {
    return rule_error(source, list->line, std::string(what) + " must be a list of name=PERM");
  }
  for (const YamlNode& item : list->items) {
    const size_t eq = item.text.find('=');
    if (item.kind != YamlNode::Kind::scalar || eq == std::string::npos ||
        item.text.find('=', eq + 1) != std::string::npos) {
      return rule_error(source, item.line,
                        std::string(what) + " entry '" + item.text +
                            "' is not name=PERM (for example topicA=SUB)");
    }
    std::string name(trim(std::string_view(item.text).substr(0, eq)));
    if (name.empty()) {
      return rule_error(source, item.line, std::string(what) + " entry has no name");
    }
    io::Result<uint8_t> perm =
        parse_perm(trim(std::string_view(item.text).substr(eq + 1)), source, item.line);
    if (!perm.is_ok()) return perm.status();
    if (topics && name.starts_with(kRetryPrefix)) {
      account->group_perms[name.substr(kRetryPrefix.size())] = *perm;
    } else {
      (topics ? account->topic_perms : account->group_perms)[name] = *perm;
    }
  }
  return {};
}

io::Status parse_account_fields(const YamlNode& node, std::string_view source,
                                AclAccount* account) {
  for (const char* key : {"defaultTopicPerm", "defaultGroupPerm"}) {
    io::Result<std::string> word = scalar_text(node.find(key), source, key);
    if (!word.is_ok()) return word.status();
    if (word->empty()) continue;  // absent: DENY, as Java
    io::Result<uint8_t> perm = parse_perm(trim(*word), source, node.find(key)->line);
    if (!perm.is_ok()) return perm.status();
    (key[7] == 'T' ? account->default_topic_perm : account->default_group_perm) = *perm;
  }
  if (const YamlNode* admin = node.find("admin");
      admin != nullptr && admin->kind != YamlNode::Kind::null) {
    std::string lower = admin->text;
    for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    if (admin->kind != YamlNode::Kind::scalar || admin->quoted ||
        (lower != "true" && lower != "false")) {
      return rule_error(source, admin->line, "admin must be true or false");
    }
    account->admin = lower == "true";
  }
  io::Result<std::string> white =
      scalar_text(node.find("whiteRemoteAddress"), source, "whiteRemoteAddress");
  if (!white.is_ok()) return white.status();
  io::Result<AclAddressPattern> pattern = AclAddressPattern::parse(*white);
  if (!pattern.is_ok()) {
    return rule_error(source, node.find("whiteRemoteAddress")->line, pattern.status().message());
  }
  account->white_remote_address = std::move(*pattern);
  UMQ_RETURN_IF_ERROR(parse_resources(node.find("groupPerms"), false, source, account));
  return parse_resources(node.find("topicPerms"), true, source, account);
}

io::Status parse_account(const YamlNode& node, std::string_view source, AclRules* rules) {
  if (node.kind != YamlNode::Kind::map) {
    return rule_error(source, node.line, "an account must be a map (accessKey: ..., ...)");
  }
  AclAccount account;
  io::Result<std::string> ak = scalar_text(node.find("accessKey"), source, "accessKey");
  if (!ak.is_ok()) return ak.status();
  io::Result<std::string> sk = scalar_text(node.find("secretKey"), source, "secretKey");
  if (!sk.is_ok()) return sk.status();
  // Java's checkPlainAccessConfig; its message names the secret, this one does not.
  if (ak->size() <= 6 || sk->size() <= 6) {
    return rule_error(
        source, node.line,
        "account '" + *ak + "': accessKey and secretKey must both be longer than 6 characters");
  }
  if (rules->accounts.contains(*ak)) {
    return rule_error(source, node.line, "accessKey '" + *ak + "' appears twice");
  }
  account.access_key = *ak;
  account.secret_key = std::move(*sk);
  UMQ_RETURN_IF_ERROR(parse_account_fields(node, source, &account));
  rules->accounts.emplace(std::move(*ak), std::move(account));
  return {};
}

}  // namespace

bool acl_permits(uint8_t needed, uint8_t owned) {
  if ((owned & kAclDeny) != 0) return false;
  if ((needed & kAclAny) != 0) return (owned & (kAclPub | kAclSub)) != 0;
  return (needed & owned) != 0;
}

io::Result<AclRules> parse_acl_rules(std::string_view text, std::string_view source) {
  io::Result<YamlNode> root = parse_yaml(text, source);
  if (!root.is_ok()) return root.status();
  AclRules rules;
  if (root->kind == YamlNode::Kind::null) return rules;  // an empty file grants nothing
  if (root->kind != YamlNode::Kind::map) {
    return rule_error(source, root->line,
                      "the file must be a map (globalWhiteRemoteAddresses, "
                      "accounts)");
  }
  if (const YamlNode* white = root->find("globalWhiteRemoteAddresses");
      white != nullptr && white->kind != YamlNode::Kind::null) {
    if (white->kind != YamlNode::Kind::list) {
      return rule_error(source, white->line, "globalWhiteRemoteAddresses must be a list");
    }
    for (const YamlNode& item : white->items) {
      io::Result<AclAddressPattern> p = AclAddressPattern::parse(item.text);
      if (item.kind != YamlNode::Kind::scalar || !p.is_ok()) {
        return rule_error(
            source, item.line,
            p.is_ok() ? "an address pattern must be a single value" : p.status().message());
      }
      rules.global_white_remote_addresses.push_back(std::move(*p));
    }
  }
  if (const YamlNode* accounts = root->find("accounts");
      accounts != nullptr && accounts->kind != YamlNode::Kind::null) {
    if (accounts->kind != YamlNode::Kind::list) {
      return rule_error(source, accounts->line, "accounts must be a list of maps");
    }
    for (const YamlNode& node : accounts->items) {
      UMQ_RETURN_IF_ERROR(parse_account(node, source, &rules));
    }
  }
  return rules;
}

io::Result<AclRules> load_acl_rules(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return io::Status::error(io::Code::not_found, "open " + path + ": " + std::strerror(errno));
  }
  std::string text;
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file)) > 0) {
    text.append(chunk, n);
    if (text.size() > kAclYamlMaxBytes) {
      std::fclose(file);
      return io::Status::error(io::Code::too_large, path + " is larger than 1 MiB");
    }
  }
  const int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) {
    return io::Status::error(io::Code::io_error, "read " + path + ": " + std::strerror(read_errno));
  }
  return parse_acl_rules(text, path);
}

}  // namespace uringmq::net
