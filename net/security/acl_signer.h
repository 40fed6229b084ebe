#pragma once
// AclSigner: RocketMQ's plain-ACL request signature (AclClientRPCHook, AclUtils, AclSigner):
//   base64(HmacSHA1(secretKey, the request's extFields values in key order, then its body))
// where the values are concatenated without separators (their UTF-8 bytes), the `Signature`
// field is left out, keys sort as Java's TreeMap sorts them (byte order for the ASCII keys of
// headers), and a key sent twice counts once with its last value (a JSON object read into a
// Java map keeps the last). The server leaves `_UNIQUE_KEY_QUERY` out too (PlainAccessValidator),
// which the caller asks for with `skip_key`.
// One instance per thread: it keeps HMAC's inner and outer SHA-1 states for the last secret (up
// to 128 bytes; a signature with the same secret starts from copies of them) and a bounded
// scratch of field indices (kAclMaxSignedFields), so signing allocates nothing after
// construction. The last sort's order is kept: a request with the last one's keys in the same
// order (distinct in their first 8 bytes) is not sorted again. The hash is OpenSSL's low-level
// SHA-1 (SHA-NI where the CPU has it), not EVP, whose dispatch cost more than the hash itself
// for a request (acl_signer.cc).

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
  struct SortKey {
    uint64_t prefix;  // the key's first 8 bytes, big-endian, zero-padded
    uint16_t index;   // into the fields
  };
  std::vector<SortKey> order_;             // the last sort's order, capacity kAclMaxSignedFields
  std::vector<uint64_t> prefixes_;         // this request's key prefixes, in arrival order
  std::vector<uint64_t> sorted_prefixes_;  // the last sort's, in arrival order
  bool sorted_distinct_ = false;           // ... were all distinct
};

// Compares in time independent of where they differ.
bool acl_signature_equal(const AclSignature& a, std::string_view b);

}  // namespace uringmq::net
