#include "server/api_key.h"

#include <cctype>

namespace omnibus::server {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool starts_with_bearer(std::string_view s) {
  static constexpr std::string_view kScheme = "bearer ";
  if (s.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != kScheme[i]) return false;
  }
  return true;
}

}  // namespace

ApiKeyCheck::ApiKeyCheck(const std::string& key) : enabled_(!key.empty()), key_digest_(sha256(key)) {}

bool ApiKeyCheck::allows(std::string_view authorization) const {
  if (!enabled_) return true;
  authorization = trim(authorization);
  // Whether the header has the Bearer form is not secret; the key is.
  if (!starts_with_bearer(authorization)) return false;
  const std::string_view given = trim(authorization.substr(7));
  return digests_equal(sha256(given), key_digest_);
}

bool digests_equal(const Sha256Digest& a, const Sha256Digest& b) {
  // volatile keeps the compiler from turning the loop back into an early exit.
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = static_cast<uint8_t>(diff | (a[i] ^ b[i]));
  return diff == 0;
}

}  // namespace omnibus::server
