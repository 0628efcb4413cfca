// SHA-256 against known digests (FIPS 180-4 examples and padding-boundary
// lengths), and the API key check built on it.
#include <gtest/gtest.h>

#include <string>

#include "server/api_key.h"
#include "server/sha256.h"

namespace omnibus::server {
namespace {

std::string hex(const Sha256Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// Bytes (i * 7 + 3) mod 256, so no length is all zeros or one repeated byte.
std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + 3) % 256);
  return s;
}

TEST(Sha256Test, MatchesTheStandardExamples) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, PaddingBoundaries) {
  // Digests from Python's hashlib of pattern(n).
  const std::pair<size_t, const char*> cases[] = {
      {1, "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5"},
      {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
      {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
      {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
      {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
      {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
      {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
      {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
      {4097, "225270fa091dc75bf959a0e3bbcb897fc3ae8e7fa128ae1394cf5614e15505f5"},
  };
  for (const auto& [n, digest] : cases) EXPECT_EQ(hex(sha256(pattern(n))), digest) << n << " bytes";
}

TEST(ApiKeyCheckTest, AcceptsOnlyTheBearerKey) {
  const ApiKeyCheck check("s3cret-Key");
  EXPECT_TRUE(check.enabled());
  EXPECT_TRUE(check.allows("Bearer s3cret-Key"));
  EXPECT_TRUE(check.allows("bearer s3cret-Key"));
  EXPECT_TRUE(check.allows("  BEARER   s3cret-Key  "));
  EXPECT_FALSE(check.allows(""));
  EXPECT_FALSE(check.allows("Bearer"));
  EXPECT_FALSE(check.allows("Bearer "));
  EXPECT_FALSE(check.allows("s3cret-Key"));
  EXPECT_FALSE(check.allows("Basic s3cret-Key"));
  EXPECT_FALSE(check.allows("Bearer s3cret-key"));   // case matters in the key
  EXPECT_FALSE(check.allows("Bearer s3cret-Ke"));    // a prefix
  EXPECT_FALSE(check.allows("Bearer s3cret-Key2"));  // longer
  EXPECT_FALSE(check.allows(std::string("Bearer s3cret-Key\0", 18)));
}

TEST(ApiKeyCheckTest, EmptyKeyAllowsEverything) {
  const ApiKeyCheck check("");
  EXPECT_FALSE(check.enabled());
  EXPECT_TRUE(check.allows(""));
  EXPECT_TRUE(check.allows("Bearer anything"));
}

TEST(ApiKeyCheckTest, DigestComparisonSeesEveryByte) {
  Sha256Digest a = sha256("x");
  for (size_t i = 0; i < a.size(); ++i) {
    Sha256Digest b = a;
    b[i] ^= 0x40;
    EXPECT_FALSE(digests_equal(a, b)) << i;
  }
  EXPECT_TRUE(digests_equal(a, sha256("x")));
}

}  // namespace
}  // namespace omnibus::server
