// Fuzz target: the plain ACL's verification path (net/security/acl_validator.h) on arbitrary rules
// and requests: a plain_acl.yml, a request's ext fields, its body and the peer's address, separated
// by NUL bytes (yml \0 code \n key=value lines \0 body \0 peer).
// Invariants checked (abort on violation):
//  - parse_acl_rules returns rules or an error naming the source ("fuzz.yml...");
//  - check() lets the request through or refuses it with a Java AclException remark;
//  - the same request signed as AclClientRPCHook signs it, with the first account's keys, never
//    fails its signature check (whatever the fields, duplicates and body);
//  - the signature does not depend on the order of distinct fields.
// Built two ways (fuzz/README.md): as a libFuzzer binary, and #included by
// tests/unit/fuzz_replay/acl_signature_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY defined.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz/fuzz_entry.h"
#include "io/assert.h"
#include "net/security/acl_validator.h"

namespace uringmq::fuzz {

// The next NUL-separated part of *rest (all of it when there is no NUL).
inline std::string_view acl_fuzz_part(std::string_view* rest) {
  const size_t nul = rest->find('\0');
  std::string_view part = rest->substr(0, nul);
  *rest = nul == std::string_view::npos ? std::string_view() : rest->substr(nul + 1);
  return part;
}

// "code\nk=v\nk=v..." -> a request.
inline net::RemotingCommand acl_fuzz_request(std::string_view text) {
  net::RemotingCommand r;
  size_t start = 0;
  bool first = true;
  while (start <= text.size() && r.ext_fields.size() < 300) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (first) {
      first = false;
      int32_t code = 0;
      for (char ch : line.substr(0, 6)) {
        if (ch >= '0' && ch <= '9') code = code * 10 + (ch - '0');
      }
      r.code = code;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    r.ext_fields.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return r;
}

inline void acl_fuzz_check_signing(const net::AclRules& rules, net::AclValidator& validator,
                                   net::RemotingCommand request, std::span<const std::byte> body,
                                   std::string_view peer) {
  if (rules.accounts.empty() || request.ext_fields.size() > 200) return;
  const net::AclAccount& account = rules.accounts.begin()->second;
  std::erase_if(request.ext_fields,
                [](const auto& f) { return f.first == "AccessKey" || f.first == "Signature"; });
  request.ext_fields.emplace_back("AccessKey", account.access_key);
  net::AclSigner signer;
  net::AclSignature sig;
  UMQ_ASSERT(signer.sign(account.secret_key, request.ext_fields, body, {}, &sig));
  // Distinct keys: the order of the fields does not matter.
  std::vector<std::string> keys;
  for (const auto& f : request.ext_fields) keys.push_back(f.first);
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) == keys.end()) {
    std::vector<std::pair<std::string, std::string>> reversed(request.ext_fields.rbegin(),
                                                              request.ext_fields.rend());
    net::AclSignature again;
    UMQ_ASSERT(signer.sign(account.secret_key, reversed, body, {}, &again));
    UMQ_ASSERT(again == sig);
  }
  request.ext_fields.emplace_back("Signature", std::string(sig.data(), sig.size()));
  std::optional<std::string> refusal = validator.check(request, body, peer);
  UMQ_ASSERT_MSG(!refusal || refusal->find("Check signature failed") == std::string::npos,
                 refusal->c_str());
}

inline int acl_signature_fuzz_one(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string_view yml = acl_fuzz_part(&rest);
  const std::string_view fields = acl_fuzz_part(&rest);
  const std::string_view body_text = acl_fuzz_part(&rest);
  const std::string_view peer = acl_fuzz_part(&rest);
  io::Result<net::AclRules> rules = net::parse_acl_rules(yml, "fuzz.yml");
  if (!rules.is_ok()) {
    UMQ_ASSERT_MSG(rules.status().message().starts_with("fuzz.yml"),
                   rules.status().message().c_str());
    return 0;
  }
  const net::RemotingCommand request = acl_fuzz_request(fields);
  const std::span<const std::byte> body = net::as_bytes(body_text);
  net::AclValidator validator(*rules);
  std::optional<std::string> refusal = validator.check(request, body, peer);
  UMQ_ASSERT_MSG(!refusal || refusal->starts_with("org.apache.rocketmq.acl.common.AclException: "),
                 refusal->c_str());
  acl_fuzz_check_signing(*rules, validator, request, body, peer);
  return 0;
}

}  // namespace uringmq::fuzz

URINGMQ_FUZZ_ENTRY(uringmq::fuzz::acl_signature_fuzz_one)
