// Bad GGUF files: each must give a Status naming the problem, never a crash.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_parser.h"
#include "gguf/gguf_test_support.h"
#include "gguf/gguf_writer.h"

namespace omnibus {
namespace {

using gguf_test::parse_bytes;
using gguf_test::RawGguf;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;
constexpr uint32_t kTypeString = static_cast<uint32_t>(GgufType::kString);
constexpr uint32_t kTypeArray = static_cast<uint32_t>(GgufType::kArray);
constexpr uint32_t kTypeUint8 = static_cast<uint32_t>(GgufType::kUint8);

// Parses `bytes`, expects failure with `needle` in the message, and returns
// the message for further checks.
std::string expect_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
  auto r = parse_bytes(bytes);
  EXPECT_FALSE(r.is_ok()) << "parsed although it should fail with: " << needle;
  if (r.is_ok()) return "";
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
  return msg;
}

// A file with one f32 tensor of `dims` (whose info the caller supplies
// through `tensor_dims`/`type`/`offset`) and `data_bytes` of data.
std::vector<uint8_t> one_tensor_file(const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset,
                                     size_t data_bytes) {
  RawGguf f;
  f.header(3, 1, 1).kv_string("general.architecture", "llama");
  f.tensor("blk.0.w", dims, type, offset).pad_to(32).data(data_bytes);
  return f.bytes;
}

TEST(GgufParserTest, GoodOneTensorFileParses) {
  auto bytes = one_tensor_file({7, 3}, kF32, 0, 7 * 3 * 4);
  auto r = parse_bytes(bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const GgufTensorInfo* t = (*r)->find_tensor("blk.0.w");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->nbytes, 84u);
  EXPECT_EQ(t->element_count(), 21);
  EXPECT_EQ(t->data.data(), bytes.data() + (*r)->data_offset());
  EXPECT_EQ((*r)->data_offset() % 32, 0u);
}

TEST(GgufParserTest, RejectsBadMagicAndTinyFiles) {
  RawGguf f;
  f.bytes = {'G', 'G', 'U', 'X'};
  f.u32(3).u64(0).u64(0);
  std::string msg = expect_error(f.bytes, "not a GGUF file");
  EXPECT_NE(msg.find("47475558"), std::string::npos) << msg;
  expect_error({'G', 'G', 'U'}, "not a GGUF file: only 3 bytes");
  expect_error({}, "not a GGUF file: only 0 bytes");
}

TEST(GgufParserTest, RejectsUnsupportedVersions) {
  expect_error(RawGguf().header(1, 0, 0).bytes, "version 1 is obsolete");
  expect_error(RawGguf().header(4, 0, 0).bytes, "GGUF version 4 is not supported");
  expect_error(RawGguf().header(0, 0, 0).bytes, "GGUF version 0 is not supported");
  expect_error(RawGguf().header(0x03000000, 0, 0).bytes, "big-endian");
  EXPECT_TRUE(parse_bytes(RawGguf().header(2, 0, 0).bytes).is_ok());
  EXPECT_TRUE(parse_bytes(RawGguf().header(3, 0, 0).bytes).is_ok());
}

TEST(GgufParserTest, RejectsHugeCountsBeforeAllocating) {
  expect_error(RawGguf().header(3, 0, 1ull << 62).bytes, "metadata key count 4611686018427387904");
  std::string msg = expect_error(RawGguf().header(3, 0, ~0ull).bytes, "negative as int64");
  EXPECT_NE(msg.find("metadata key count"), std::string::npos);
  expect_error(RawGguf().header(3, 1ull << 62, 0).bytes, "tensor count 4611686018427387904");
  expect_error(RawGguf().header(3, 1ull << 63, 0).bytes, "negative as int64");
  // A count that merely exceeds what is present fails when the bytes run out.
  expect_error(RawGguf().header(3, 0, 3).kv_u32("a", 1).kv_u32("b", 2).u64(1000).bytes, "key #2: at byte");
  // An array element count larger than the file.
  RawGguf arr;
  arr.header(3, 0, 1).str("tokenizer.ggml.tokens").u32(kTypeArray).u32(kTypeString).u64(1ull << 61);
  arr.str("x");
  msg = expect_error(arr.bytes, "array of 2305843009213693952 string runs past the end");
  EXPECT_NE(msg.find("tokenizer.ggml.tokens"), std::string::npos) << msg;
}

TEST(GgufParserTest, RejectsLengthsPastTheEnd) {
  RawGguf key;
  key.header(3, 0, 1).u64(1000).str("some bytes that are not 1000 long");
  std::string msg = expect_error(key.bytes, "key name has length 1000, past the end of the file");
  EXPECT_NE(msg.find("key #0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at byte 24"), std::string::npos) << msg;

  RawGguf value;
  value.header(3, 0, 1).str("general.name").u32(kTypeString).u64(~0ull).str("abc");
  msg = expect_error(value.bytes, "string has length 18446744073709551615, past the end");
  EXPECT_NE(msg.find("'general.name'"), std::string::npos) << msg;
}

TEST(GgufParserTest, RejectsUnknownValueTypes) {
  RawGguf f;
  f.header(3, 0, 1).str("general.weird").u32(13).u32(0);
  expect_error(f.bytes, "key 'general.weird' has unknown value type 13");
  RawGguf arr;
  arr.header(3, 0, 1).str("general.list").u32(kTypeArray).u32(99).u64(1).u32(0);
  std::string msg = expect_error(arr.bytes, "array has unknown element type 99");
  EXPECT_NE(msg.find("general.list"), std::string::npos) << msg;
}

TEST(GgufParserTest, RejectsBoolOtherThanZeroOrOne) {
  RawGguf f;
  f.header(3, 0, 1).str("tokenizer.ggml.add_bos_token").u32(static_cast<uint32_t>(GgufType::kBool)).u8(2);
  expect_error(f.bytes, "bool value is 2, not 0 or 1");
}

TEST(GgufParserTest, RejectsDuplicateKeys) {
  RawGguf f;
  f.header(3, 0, 3).kv_u32("llama.block_count", 30).kv_u32("a", 1).kv_u32("llama.block_count", 31);
  expect_error(f.bytes, "duplicate key 'llama.block_count' (keys #0 and #2)");
}

TEST(GgufParserTest, LimitsArrayNesting) {
  auto nested = [](int depth) {
    RawGguf f;
    f.header(3, 0, 1).str("deep").u32(kTypeArray);
    for (int i = 1; i < depth; ++i) f.u32(kTypeArray).u64(1);
    f.u32(kTypeUint8).u64(1).u8(5);
    return f.bytes;
  };
  auto ok = parse_bytes(nested(kGgufMaxArrayDepth));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  const GgufValue* v = (*ok)->find("deep");
  for (int i = 0; i < kGgufMaxArrayDepth; ++i) {
    ASSERT_NE(v->array(), nullptr);
    ASSERT_EQ(v->array()->size(), 1u);
    v = &v->array()->front();
  }
  EXPECT_EQ(v->to_int().value(), 5);
  expect_error(nested(kGgufMaxArrayDepth + 1), "arrays nested more than 8 deep");
  // Millions of levels fail at the limit, without using the stack for each.
  RawGguf huge;
  huge.header(3, 0, 1).str("deep").u32(kTypeArray);
  for (int i = 0; i < 100000; ++i) huge.u32(kTypeArray).u64(1);
  expect_error(huge.bytes, "arrays nested more than 8 deep");
}

TEST(GgufParserTest, RejectsBadAlignment) {
  auto with_alignment = [](uint32_t a) {
    RawGguf f;
    f.header(3, 0, 1).kv_u32("general.alignment", a);
    return f.bytes;
  };
  expect_error(with_alignment(24), "general.alignment is 24; it must be a nonzero power of two");
  expect_error(with_alignment(0), "general.alignment is 0; it must be a nonzero power of two");
  expect_error(with_alignment(0x80000001u), "general.alignment is 2147483649");
  RawGguf wrong_type;
  wrong_type.header(3, 0, 1).kv_string("general.alignment", "32");
  expect_error(wrong_type.bytes, "general.alignment has type string; it must be uint32");
  auto good = parse_bytes(with_alignment(64));
  ASSERT_TRUE(good.is_ok()) << good.status().to_string();
  EXPECT_EQ((*good)->alignment(), 64u);
}

TEST(GgufParserTest, RejectsBadDimensions) {
  expect_error(one_tensor_file({2, 2, 2, 2, 2}, kF32, 0, 128), "tensor 'blk.0.w' has 5 dimensions; 1 to 4");
  expect_error(one_tensor_file({}, kF32, 0, 32), "tensor 'blk.0.w' has 0 dimensions");
  expect_error(one_tensor_file({4, 0}, kF32, 0, 32), "tensor 'blk.0.w' dimension 1 is 0");
  expect_error(one_tensor_file({4, 1ull << 63}, kF32, 0, 32), "dimension 1 is 9223372036854775808 (negative");
  expect_error(one_tensor_file({1ull << 32, 1ull << 32}, kF32, 0, 32),
               "tensor 'blk.0.w' has too many elements: the product of its dimensions overflows int64");
  // Elements fit in int64 but bytes do not fit in uint64 (4 bytes each).
  expect_error(one_tensor_file({1ull << 31, 1ull << 31, 1}, kF32, 0, 32), "overflows 64 bits");
  expect_error(one_tensor_file({33, 2}, kQ4_0, 0, 64), "row length 33 is not a multiple of the q4_0 block size 32");
}

TEST(GgufParserTest, RejectsUnknownTensorType) {
  std::string msg = expect_error(one_tensor_file({8}, 4, 0, 32), "tensor 'blk.0.w' has unknown type id 4");
  expect_error(one_tensor_file({8}, 1000, 0, 32), "unknown type id 1000");
  // MXFP4 (type 39, gpt-oss's experts) is read: 17 bytes a block of 32.
  EXPECT_TRUE(parse_bytes(one_tensor_file({32}, 39, 0, 32)).is_ok());
  expect_error(one_tensor_file({33, 1}, 39, 0, 64), "row length 33 is not a multiple of the mxfp4 block size 32");
  auto r = parse_bytes(one_tensor_file({8}, 4, 0, 32));
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}

TEST(GgufParserTest, RejectsMisalignedAndOutOfFileOffsets) {
  expect_error(one_tensor_file({8}, kF32, 4, 64), "tensor 'blk.0.w' data offset 4 is not a multiple of the alignment 32");
  expect_error(one_tensor_file({8}, kF32, 64, 64), "tensor 'blk.0.w' data (bytes");
  expect_error(one_tensor_file({8}, kF32, ~0ull - 31, 64), "overflows");
  // Size past the end: 16 floats need 64 bytes, only 63 are there.
  std::string msg = expect_error(one_tensor_file({16}, kF32, 0, 63), "runs past the end of the file");
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(GgufParserTest, RejectsDuplicateTensorNames) {
  RawGguf f;
  f.header(3, 2, 0).tensor("output.weight", {8}, kF32, 0).tensor("output.weight", {8}, kF32, 32);
  f.pad_to(32).data(64);
  expect_error(f.bytes, "duplicate tensor name 'output.weight' (tensors #0 and #1)");
}

TEST(GgufParserTest, RejectsEmptyTensorName) {
  RawGguf f;
  f.header(3, 1, 0).tensor("", {8}, kF32, 0).pad_to(32).data(32);
  expect_error(f.bytes, "tensor #0 has an empty name");
}

// A valid file with every kind of metadata value and three tensors, the last
// ending exactly at the end of the file (so every shorter prefix is bad).
std::vector<uint8_t> small_valid_file(uint32_t version) {
  GgufWriter w(version, 32);
  w.set_string("general.architecture", "llama");
  w.set("u8", GgufValue::of_uint(GgufType::kUint8, 200));
  w.set("i8", GgufValue::of_int(GgufType::kInt8, -5));
  w.set("u16", GgufValue::of_uint(GgufType::kUint16, 65000));
  w.set("i16", GgufValue::of_int(GgufType::kInt16, -30000));
  w.set_uint32("u32", 4000000000u);
  w.set_int32("i32", -7);
  w.set_uint64("u64", 1ull << 40);
  w.set("i64", GgufValue::of_int(GgufType::kInt64, -(1ll << 40)));
  w.set_float32("f32", 0.5f);
  w.set("f64", GgufValue::of_float64(-2.25));
  w.set_bool("b", true);
  w.set_string_array("tokens", {"a", "bc", ""});
  w.set("nested", GgufValue::of_array(GgufType::kArray, {GgufValue::of_array(GgufType::kInt32, {})}));
  std::vector<uint8_t> a(7 * 4, 3), b(64 * 2 / 32 * 18, 5), c(8 * 4, 9);
  EXPECT_TRUE(w.add_tensor("a", {7}, DType::kF32, a).is_ok());
  EXPECT_TRUE(w.add_tensor("b", {64, 2}, DType::kQ4_0, b).is_ok());
  EXPECT_TRUE(w.add_tensor("c", {8}, DType::kF32, c).is_ok());
  return w.to_bytes();
}

TEST(GgufParserTest, DataOneByteShortFails) {
  std::vector<uint8_t> bytes = small_valid_file(3);
  ASSERT_TRUE(parse_bytes(bytes).is_ok());
  bytes.pop_back();
  expect_error(bytes, "tensor 'c' data (bytes");
}

TEST(GgufParserTest, EveryTruncationFailsCleanly) {
  for (uint32_t version : {2u, 3u}) {
    const std::vector<uint8_t> full = small_valid_file(version);
    auto whole = parse_bytes(full);
    ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
    ASSERT_EQ((*whole)->tensors().back().data.data() + (*whole)->tensors().back().nbytes, full.data() + full.size());
    for (size_t n = 0; n < full.size(); ++n) {
      // A fresh buffer of exactly n bytes, so reads past it are caught by ASan.
      std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
      auto r = parse_bytes(prefix);
      ASSERT_FALSE(r.is_ok()) << "prefix of " << n << " bytes parsed";
      EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << n << ": " << r.status().to_string();
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

}  // namespace
}  // namespace omnibus
