#include "net/acl_signer.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>

#include "io/assert.h"

namespace uringmq::net {

struct AclSigner::State {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* ctx = nullptr;
  // The secret ctx was last keyed with (when it fits): the same secret again re-initialises ctx
  // with its key as it is, without setting the digest and the key anew (OpenSSL's parameter
  // lookup, about half of a signature's cost for a short request).
  std::array<char, 128> key{};
  size_t key_bytes = 0;
  bool keyed = false;
};

namespace {
constexpr std::string_view kSignatureKey = "Signature";
}  // namespace

AclSigner::AclSigner() : state_(new State) {
  state_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (state_->mac != nullptr) state_->ctx = EVP_MAC_CTX_new(state_->mac);
  order_.reserve(kAclMaxSignedFields);
}

AclSigner::~AclSigner() {
  OPENSSL_cleanse(state_->key.data(), state_->key.size());
  EVP_MAC_CTX_free(state_->ctx);
  EVP_MAC_free(state_->mac);
  delete state_;
}

bool AclSigner::sign(std::string_view secret_key,
                     std::span<const std::pair<std::string, std::string>> fields,
                     std::span<const std::byte> body, std::string_view skip_key,
                     AclSignature* out) {
  if (state_->ctx == nullptr || fields.size() > kAclMaxSignedFields) return false;
  order_.clear();
  for (size_t i = 0; i < fields.size(); ++i) order_.push_back(static_cast<uint16_t>(i));
  // By key, then by arrival: of equal keys the last one is the one signed.
  std::sort(order_.begin(), order_.end(), [&](uint16_t a, uint16_t b) {
    const std::string& x = fields[a].first;
    const std::string& y = fields[b].first;
    // The first bytes decide most pairs (header keys are short and distinct): no memcmp call.
    if (!x.empty() && !y.empty() && x[0] != y[0]) {
      return static_cast<unsigned char>(x[0]) < static_cast<unsigned char>(y[0]);
    }
    const int c = x.compare(y);
    return c != 0 ? c < 0 : a < b;
  });
  if (!init(secret_key)) return false;
  EVP_MAC_CTX* ctx = state_->ctx;
  for (size_t i = 0; i < order_.size(); ++i) {
    const auto& [key, value] = fields[order_[i]];
    if (i + 1 < order_.size() && fields[order_[i + 1]].first == key) continue;
    if (key == kSignatureKey || (!skip_key.empty() && key == skip_key)) continue;
    if (EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(value.data()), value.size()) !=
        1) {
      return false;
    }
  }
  if (!body.empty() &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(body.data()), body.size()) != 1) {
    return false;
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t mac_bytes = 0;
  if (EVP_MAC_final(ctx, mac, &mac_bytes, sizeof(mac)) != 1 || mac_bytes != 20) return false;
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
    if (EVP_MAC_init(st.ctx, nullptr, 0, nullptr) == 1) return true;
  }
  st.keyed = false;
  char digest_name[] = "SHA1";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
                         OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(st.ctx, reinterpret_cast<const unsigned char*>(secret_key.data()),
                   secret_key.size(), params) != 1) {
    return false;
  }
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
