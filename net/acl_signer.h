#pragma once
// AclSigner: RocketMQ's plain-ACL request signature (AclClientRPCHook, AclUtils, AclSigner):
//   base64(HmacSHA1(secretKey, the request's extFields values in key order, then its body))
// where the values are concatenated without separators (their UTF-8 bytes), the `Signature`
// field is left out, keys sort as Java's TreeMap sorts them (byte order for the ASCII keys of
// headers), and a key sent twice counts once with its last value (a JSON object read into a
// Java map keeps the last). The server leaves `_UNIQUE_KEY_QUERY` out too (PlainAccessValidator),
// which the caller asks for with `skip_key`.
// One instance per thread: it keeps one OpenSSL HMAC context and a bounded scratch of field
// indices (kAclMaxSignedFields), so signing allocates nothing after construction. The context
// stays keyed with the last secret (up to 128 bytes), so signing again with the same secret skips
// OpenSSL's digest and key set-up (half of a signature's cost).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uringmq::net {

inline constexpr size_t kAclSignatureChars = 28;    // base64 of the 20-byte HmacSHA1
inline constexpr size_t kAclMaxSignedFields = 256;  // RemotingLimits::max_ext_fields

using AclSignature = std::array<char, kAclSignatureChars>;

class AclSigner {
 public:
  AclSigner();
  ~AclSigner();
  AclSigner(const AclSigner&) = delete;
  AclSigner& operator=(const AclSigner&) = delete;

  // False when there are more than kAclMaxSignedFields fields or OpenSSL fails.
  bool sign(std::string_view secret_key,
            std::span<const std::pair<std::string, std::string>> fields,
            std::span<const std::byte> body, std::string_view skip_key, AclSignature* out);

 private:
  bool init(std::string_view secret_key);  // ctx ready for a signature with this key

  struct State;
  State* state_;
  std::vector<uint16_t> order_;  // scratch, capacity kAclMaxSignedFields
};

// Compares in time independent of where they differ.
bool acl_signature_equal(const AclSignature& a, std::string_view b);

}  // namespace uringmq::net
