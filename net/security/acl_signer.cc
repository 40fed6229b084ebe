#include "net/security/acl_signer.h"

// SHA1_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, but EVP's per-call
// dispatch (provider lookup, context duplication for HMAC's inner and outer hash) costs more
// than hashing a request: measured by uringmq-acl-bench, about 0.9 us a signature through
// EVP_MAC against the low-level hash's own cost (SHA-NI). They are still built and exported.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

#include "io/assert.h"

namespace uringmq::net {

// HMAC (RFC 2104) over SHA-1 with the key's inner and outer pads hashed once per secret:
// a signature starts from copies of the two states.
struct AclSigner::State {
  SHA_CTX inner{};  // after SHA1(key ^ ipad)
  SHA_CTX outer{};  // after SHA1(key ^ opad)
  // The secret the states were made for (when it fits): another secret rebuilds them.
  std::array<char, 128> key{};
  size_t key_bytes = 0;
  bool keyed = false;
};

namespace {
constexpr std::string_view kSignatureKey = "Signature";
constexpr size_t kShaBlockBytes = 64;

// The key's first 8 bytes as a big-endian integer, zero-padded. Shifted in from registers: a
// copy into a zeroed stack buffer read back as one word stalls on store forwarding, which
// cost about a third of a signature (perf, 2026-12-02).
uint64_t key_prefix(const std::string& key) {
  const size_t n = std::min<size_t>(key.size(), 8);
  uint64_t prefix = 0;
  for (size_t i = 0; i < n; ++i) prefix = (prefix << 8) | static_cast<unsigned char>(key[i]);
  return n == 0 ? 0 : prefix << (8 * (8 - n));
}
}  // namespace

AclSigner::AclSigner() : state_(new State) {
  order_.reserve(kAclMaxSignedFields);
  prefixes_.reserve(kAclMaxSignedFields);
  sorted_prefixes_.reserve(kAclMaxSignedFields);
}

AclSigner::~AclSigner() {
  OPENSSL_cleanse(state_, sizeof(State));
  delete state_;
}

bool AclSigner::sign(std::string_view secret_key,
                     std::span<const std::pair<std::string, std::string>> fields,
                     std::span<const std::byte> body, std::string_view skip_key,
                     AclSignature* out) {
  if (fields.size() > kAclMaxSignedFields) return false;
  // By key, then by arrival: of equal keys the last one is the one signed. A key's first 8
  // bytes, big-endian, order most pairs with one integer compare (header keys are short).
  prefixes_.clear();
  for (const auto& field : fields) prefixes_.push_back(key_prefix(field.first));
  // A client sends the same keys in the same order request after request: when the prefixes,
  // in arrival order, are those of the last sort and that sort found them all distinct (so
  // they alone decide the order and there is no key twice), its order stands. The sort's
  // mispredicted branches cost a fifth of a signature.
  if (!(sorted_distinct_ && prefixes_ == sorted_prefixes_)) {
    order_.clear();
    for (size_t i = 0; i < fields.size(); ++i) {
      order_.push_back(SortKey{prefixes_[i], static_cast<uint16_t>(i)});
    }
    std::sort(order_.begin(), order_.end(), [&](const SortKey& a, const SortKey& b) {
      if (a.prefix != b.prefix) return a.prefix < b.prefix;
      const int c = fields[a.index].first.compare(fields[b.index].first);
      return c != 0 ? c < 0 : a.index < b.index;
    });
    sorted_distinct_ = true;
    for (size_t i = 1; i < order_.size(); ++i) {
      if (order_[i].prefix == order_[i - 1].prefix) sorted_distinct_ = false;
    }
    std::swap(sorted_prefixes_, prefixes_);  // prefixes_ is rebuilt by the next call
  }
  if (!init(secret_key)) return false;
  SHA_CTX ctx = state_->inner;
  for (size_t i = 0; i < order_.size(); ++i) {
    const auto& [key, value] = fields[order_[i].index];
    if (i + 1 < order_.size() && order_[i + 1].prefix == order_[i].prefix &&
        fields[order_[i + 1].index].first == key) {
      continue;
    }
    if (key.size() == kSignatureKey.size() && key == kSignatureKey) continue;
    if (!skip_key.empty() && key == skip_key) continue;
    SHA1_Update(&ctx, value.data(), value.size());
  }
  if (!body.empty()) SHA1_Update(&ctx, body.data(), body.size());
  unsigned char mac[SHA_DIGEST_LENGTH];
  SHA1_Final(mac, &ctx);
  ctx = state_->outer;
  SHA1_Update(&ctx, mac, sizeof(mac));
  SHA1_Final(mac, &ctx);
  OPENSSL_cleanse(&ctx, sizeof(ctx));
  unsigned char text[kAclSignatureChars + 1];
  const int n = EVP_EncodeBlock(text, mac, 20);
  UMQ_ASSERT(n == static_cast<int>(kAclSignatureChars));
  std::copy_n(text, kAclSignatureChars, out->begin());
  return true;
}

bool AclSigner::init(std::string_view secret_key) {
  State& st = *state_;
  if (st.keyed && secret_key.size() == st.key_bytes &&
      std::equal(secret_key.begin(), secret_key.end(), st.key.begin())) {
    return true;
  }
  st.keyed = false;
  // A key longer than a block is hashed first (RFC 2104); a shorter one is padded with zeros.
  unsigned char block[kShaBlockBytes] = {};
  if (secret_key.size() > kShaBlockBytes) {
    SHA1(reinterpret_cast<const unsigned char*>(secret_key.data()), secret_key.size(), block);
  } else {
    std::memcpy(block, secret_key.data(), secret_key.size());
  }
  unsigned char pad[kShaBlockBytes];
  for (size_t i = 0; i < kShaBlockBytes; ++i) pad[i] = block[i] ^ 0x36;
  if (SHA1_Init(&st.inner) != 1 || SHA1_Update(&st.inner, pad, sizeof(pad)) != 1) return false;
  for (size_t i = 0; i < kShaBlockBytes; ++i) pad[i] = block[i] ^ 0x5c;
  if (SHA1_Init(&st.outer) != 1 || SHA1_Update(&st.outer, pad, sizeof(pad)) != 1) return false;
  OPENSSL_cleanse(block, sizeof(block));
  OPENSSL_cleanse(pad, sizeof(pad));
  if (secret_key.size() <= st.key.size()) {
    std::copy(secret_key.begin(), secret_key.end(), st.key.begin());
    st.key_bytes = secret_key.size();
    st.keyed = true;
  }
  return true;
}

bool acl_signature_equal(const AclSignature& a, std::string_view b) {
  if (b.size() != a.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace uringmq::net
