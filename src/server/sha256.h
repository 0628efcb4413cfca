// SHA-256 (FIPS 180-4), used to compare API keys in constant time: both the
// configured key and the one a client sends are hashed to 32 bytes, and the
// digests are compared with no early exit, so neither a differing byte nor
// a differing length shows in the timing. Pure function; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace omnibus::server {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view data);
// The digest as 64 lowercase hex digits (what sha256sum prints).
std::string sha256_hex(std::string_view data);

}  // namespace omnibus::server
