// The KV handover blob (kv_transfer.h): what the encoder writes, the decoder
// reads back; every field the receiver depends on is checked, with a message
// that names it, even when the checksum is right; and no prefix of a blob,
// nor any one damaged byte, gets through.
#include "engine/kv_transfer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace omnibus {
namespace {

KvTransferShape shape() {
  KvTransferShape s;
  s.model_fingerprint = 0x1234abcd5678ef00ull;
  s.kv_type = KvCacheType::kQ8_0;
  s.block_size = 4;
  s.n_layer = 2;
  s.n_head_kv = 3;
  s.head_dim = 32;
  s.block_bytes = 24;  // any size: the decoder only counts them
  return s;
}

std::vector<int32_t> tokens(int n) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 37 + 11) % 100;
  return t;
}

std::string blocks(int n, int64_t block_bytes) {
  std::string b(static_cast<size_t>(n * block_bytes), '\0');
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 7 + 3);
  return b;
}

std::string error_of(std::string_view blob, const KvTransferShape& expected, int32_t vocab = 100) {
  Result<KvTransferContents> r = decode_kv_transfer(blob, expected, vocab);
  EXPECT_FALSE(r.is_ok());
  return r.is_ok() ? std::string() : r.status().message();
}

TEST(KvTransfer, RoundTrip) {
  const KvTransferShape s = shape();
  const std::vector<int32_t> t = tokens(8);
  const std::string b = blocks(2, s.block_bytes);
  const std::string blob = encode_kv_transfer(s, t, b);
  Result<KvTransferContents> back = decode_kv_transfer(blob, s, 100);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->tokens, t);
  EXPECT_EQ(back->blocks, b);
}

TEST(KvTransfer, NamesTheFieldThatDoesNotMatch) {
  const KvTransferShape s = shape();
  const std::vector<int32_t> t = tokens(8);
  const std::string blob = encode_kv_transfer(s, t, blocks(2, s.block_bytes));
  auto expect_with = [&](auto change, const char* words) {
    KvTransferShape expected = s;
    change(expected);
    EXPECT_NE(error_of(blob, expected).find(words), std::string::npos) << words;
  };
  expect_with([](KvTransferShape& e) { e.model_fingerprint ^= 1; }, "another model");
  expect_with([](KvTransferShape& e) { e.kv_type = KvCacheType::kF16; }, "cache type");
  expect_with([](KvTransferShape& e) { e.block_size = 8; }, "block size");
  expect_with([](KvTransferShape& e) { e.n_layer = 3; }, "shape");
  expect_with([](KvTransferShape& e) { e.n_head_kv = 1; }, "shape");
  expect_with([](KvTransferShape& e) { e.head_dim = 64; }, "shape");
  expect_with([](KvTransferShape& e) { e.block_bytes = 48; }, "bytes per block");
  EXPECT_NE(error_of(blob, s, 50).find("outside the vocabulary"), std::string::npos);
}

TEST(KvTransfer, RefusesAnotherFormatVersion) {
  const KvTransferShape s = shape();
  std::string blob = encode_kv_transfer(s, tokens(8), blocks(2, s.block_bytes));
  // Version 2 in the header, with the checksum made right again.
  std::string body = blob.substr(0, blob.size() - 8);
  body[4] = 3;
  const uint64_t sum = kv_transfer_checksum(body);
  body.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  EXPECT_NE(error_of(body, s).find("format version is 3"), std::string::npos);
}

// A blob whose window layers hold only the last window cannot go to a
// receiver that keeps every layer whole (it would cache the zeros); a
// receiver with a window group takes blobs of either kind.
TEST(KvTransfer, WindowTailBlobsGoOnlyToWindowReceivers) {
  KvTransferShape windowed = shape();
  windowed.window_tail = 512;
  const KvTransferShape whole = shape();
  const std::string from_windowed = encode_kv_transfer(windowed, tokens(8), blocks(2, windowed.block_bytes));
  const std::string from_whole = encode_kv_transfer(whole, tokens(8), blocks(2, whole.block_bytes));
  EXPECT_NE(error_of(from_windowed, whole).find("keeps every layer whole"), std::string::npos);
  EXPECT_TRUE(decode_kv_transfer(from_windowed, windowed, 100).is_ok());
  EXPECT_TRUE(decode_kv_transfer(from_whole, windowed, 100).is_ok());
  KvTransferShape other_window = windowed;
  other_window.window_tail = 256;
  EXPECT_NE(error_of(from_windowed, other_window).find("sliding window"), std::string::npos);
}

TEST(KvTransfer, RefusesWrongCountsEvenWithAGoodChecksum) {
  const KvTransferShape s = shape();
  // Not whole blocks, no tokens, and blocks that do not add up: each
  // encoded (so the checksum is right) and refused by the count checks.
  EXPECT_NE(error_of(encode_kv_transfer(s, tokens(7), blocks(2, s.block_bytes)), s).find("whole number"),
            std::string::npos);
  EXPECT_NE(error_of(encode_kv_transfer(s, {}, ""), s).find("whole number"), std::string::npos);
  EXPECT_NE(error_of(encode_kv_transfer(s, tokens(8), blocks(1, s.block_bytes)), s).find("bytes of blocks"),
            std::string::npos);
  EXPECT_NE(error_of(encode_kv_transfer(s, tokens(8), blocks(3, s.block_bytes)), s).find("bytes of blocks"),
            std::string::npos);
}

TEST(KvTransfer, NoPrefixAndNoDamagedByteGetsThrough) {
  const KvTransferShape s = shape();
  const std::string blob = encode_kv_transfer(s, tokens(8), blocks(2, s.block_bytes));
  for (size_t n = 0; n < blob.size(); ++n) error_of(blob.substr(0, n), s);
  for (size_t i = 0; i < blob.size(); ++i) {
    std::string damaged = blob;
    damaged[i] ^= 0x01;
    error_of(damaged, s);
  }
  EXPECT_NE(error_of(std::string(200, 'x'), s).find("OMKV"), std::string::npos);
}

}  // namespace
}  // namespace omnibus
