// The --api-key check: does an Authorization header carry the configured
// key? The comparison leaks nothing through timing: the client's key and
// the configured one are both reduced to SHA-256 digests (the work depends
// only on the length of what the client sent, which the client knows) and
// the 32-byte digests are compared with no early exit. Immutable after
// construction; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "server/sha256.h"

namespace omnibus::server {

class ApiKeyCheck {
 public:
  // An empty key turns the check off: every request is allowed.
  explicit ApiKeyCheck(const std::string& key);

  bool enabled() const { return enabled_; }

  // True when the check is off, or `authorization` is "Bearer <key>" (the
  // scheme in any case, spaces around the key ignored) with the right key.
  bool allows(std::string_view authorization) const;

 private:
  bool enabled_ = false;
  Sha256Digest key_digest_{};
};

// Byte-wise equality of two digests in time independent of their contents.
bool digests_equal(const Sha256Digest& a, const Sha256Digest& b);

}  // namespace omnibus::server
