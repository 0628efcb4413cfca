// GgufWriter output parsed back by GgufFile: exact round trips of every
// metadata type, tensor spans, alignment and the writer's own checks.
#include "gguf/gguf_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "gguf/gguf_test_support.h"

namespace omnibus {
namespace {

using gguf_test::parse_bytes;

// One value of every metadata type, including extremes and nested arrays.
std::vector<std::pair<std::string, GgufValue>> every_type() {
  using V = GgufValue;
  std::vector<V> strings = {V::of_string("hello"), V::of_string(""), V::of_string(std::string("a\0b", 3))};
  std::vector<V> inner1 = {V::of_int(GgufType::kInt16, -3), V::of_int(GgufType::kInt16, 32767)};
  std::vector<V> inner2 = {V::of_int(GgufType::kInt16, -32768)};
  std::vector<V> nested = {V::of_array(GgufType::kInt16, inner1), V::of_array(GgufType::kInt16, inner2),
                           V::of_array(GgufType::kInt16, {})};
  std::vector<V> nested_strings = {V::of_array(GgufType::kString, strings)};
  return {
      {"u8", V::of_uint(GgufType::kUint8, 255)},
      {"i8", V::of_int(GgufType::kInt8, -128)},
      {"u16", V::of_uint(GgufType::kUint16, 65535)},
      {"i16", V::of_int(GgufType::kInt16, -32768)},
      {"u32", V::of_uint(GgufType::kUint32, 4294967295u)},
      {"i32", V::of_int(GgufType::kInt32, -2147483647 - 1)},
      {"u64", V::of_uint(GgufType::kUint64, ~0ull)},
      {"i64", V::of_int(GgufType::kInt64, std::numeric_limits<int64_t>::min())},
      {"f32", V::of_float32(-1.0e-7f)},
      {"f32.nan", V::of_float32(std::numeric_limits<float>::quiet_NaN())},
      {"f64", V::of_float64(3.141592653589793)},
      {"f64.inf", V::of_float64(-std::numeric_limits<double>::infinity())},
      {"b.true", V::of_bool(true)},
      {"b.false", V::of_bool(false)},
      {"s", V::of_string("SmolLM2 \xe2\x9c\x93 {{ chat }}\n")},
      {"s.empty", V::of_string("")},
      {"arr.u8", V::of_array(GgufType::kUint8, {V::of_uint(GgufType::kUint8, 1), V::of_uint(GgufType::kUint8, 254)})},
      {"arr.f64", V::of_array(GgufType::kFloat64, {V::of_float64(0.1), V::of_float64(-7.5)})},
      {"arr.bool", V::of_array(GgufType::kBool, {V::of_bool(false), V::of_bool(true), V::of_bool(true)})},
      {"arr.strings", V::of_array(GgufType::kString, strings)},
      {"arr.empty", V::of_array(GgufType::kUint64, {})},
      {"arr.nested", V::of_array(GgufType::kArray, nested)},
      {"arr.nested_strings", V::of_array(GgufType::kArray, nested_strings)},
  };
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(seed + 13 * i + (i >> 8));
  return out;
}

class GgufRoundTripTest : public ::testing::TestWithParam<std::tuple<uint32_t, uint64_t>> {};

TEST_P(GgufRoundTripTest, MetadataAndTensorsRoundTripExactly) {
  const auto [version, alignment] = GetParam();
  GgufWriter w(version, alignment);
  const auto values = every_type();
  for (const auto& [k, v] : values) w.set(k, v);
  const auto a = pattern(7 * 4, 1);          // f32 [7]
  const auto b = pattern(64 * 3 / 32 * 20, 2);  // q4_1 [64, 3]
  const auto c = pattern(33 * 2 * 2, 3);     // f16 [33, 2, 1, 1]
  ASSERT_TRUE(w.add_tensor("a", {7}, DType::kF32, a).is_ok());
  ASSERT_TRUE(w.add_tensor("blk.0.b", {64, 3}, DType::kQ4_1, b).is_ok());
  ASSERT_TRUE(w.add_tensor("c", {33, 2, 1, 1}, DType::kF16, c).is_ok());
  const std::vector<uint8_t> bytes = w.to_bytes();
  ASSERT_FALSE(bytes.empty());

  auto r = parse_bytes(bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), version);
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.data_offset() % alignment, 0u);

  // Metadata: same keys, same order, same bits; general.alignment only when
  // it is not the default.
  const size_t extra = alignment == 32 ? 0 : 1;
  ASSERT_EQ(f.metadata().size(), values.size() + extra);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].first, values[i].first);
    EXPECT_TRUE(f.metadata()[i].second == values[i].second) << values[i].first << ": " << f.metadata()[i].second.describe();
  }
  if (extra) EXPECT_EQ(f.get_int("general.alignment").value(), static_cast<int64_t>(alignment));
  else EXPECT_EQ(f.find("general.alignment"), nullptr);

  // Tensors: shapes, types and spans pointing at the right bytes.
  ASSERT_EQ(f.tensors().size(), 3u);
  const std::vector<const std::vector<uint8_t>*> datas = {&a, &b, &c};
  const std::vector<std::vector<int64_t>> dims = {{7}, {64, 3}, {33, 2, 1, 1}};
  for (size_t i = 0; i < 3; ++i) {
    const GgufTensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.dims, dims[i]);
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(t.nbytes, datas[i]->size());
    EXPECT_EQ(t.data.data(), bytes.data() + f.data_offset() + t.offset);
    EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), datas[i]->begin(), datas[i]->end())) << t.name;
    EXPECT_EQ(f.find_tensor(t.name), &t);
  }
  EXPECT_EQ(f.tensors()[1].dtype, DType::kQ4_1);
  EXPECT_EQ(f.tensors()[2].element_count(), 66);
  EXPECT_EQ(f.find_tensor("missing"), nullptr);
  EXPECT_EQ(bytes.size() % alignment, 0u);  // the writer pads the last tensor too
}

INSTANTIATE_TEST_SUITE_P(VersionsAndAlignments, GgufRoundTripTest,
                         ::testing::Combine(::testing::Values(2u, 3u), ::testing::Values(32u, 1u, 64u, 256u)));

TEST(GgufWriterTest, SettingAKeyAgainReplacesItInPlace) {
  GgufWriter w;
  w.set_uint32("first", 1);
  w.set_string("second", "x");
  w.set_int32("first", -9);
  auto r = parse_bytes(w.to_bytes());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ((*r)->metadata().size(), 2u);
  EXPECT_EQ((*r)->metadata()[0].first, "first");
  EXPECT_EQ((*r)->metadata()[0].second.type, GgufType::kInt32);
  EXPECT_EQ((*r)->get_int("first").value(), -9);
  EXPECT_EQ((*r)->metadata()[1].first, "second");
}

// Found by the fuzzer: a huge alignment with no tensors must not make the
// writer pad an empty data section out to the alignment.
TEST(GgufWriterTest, MetadataOnlyFileIsNotPaddedToHugeAlignment) {
  GgufWriter w(3, 1ull << 30);
  w.set_string("general.name", "x");
  const std::vector<uint8_t> bytes = w.to_bytes();
  ASSERT_FALSE(bytes.empty());
  EXPECT_LT(bytes.size(), 200u);
  auto r = parse_bytes(bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)->alignment(), 1ull << 30);
  EXPECT_TRUE((*r)->tensors().empty());
}

TEST(GgufWriterTest, HelperSettersWriteTheirTypes) {
  GgufWriter w(3, 32);
  w.set_uint64("n", 1ull << 50);
  w.set_float32_array("scores", {0.25f, -1.5f});
  w.set_int32_array("types", {1, -1, 6});
  w.set_string_array("merges", {"a b", "c d"});
  w.set_uint32("general.alignment", 32);  // allowed when it matches
  auto r = parse_bytes(w.to_bytes());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_EQ(f.find("n")->type, GgufType::kUint64);
  EXPECT_EQ(f.find("scores")->element_type, GgufType::kFloat32);
  EXPECT_EQ(f.get_float_array("scores").value(), (std::vector<double>{0.25, -1.5}));
  EXPECT_EQ(f.get_int_array("types").value(), (std::vector<int64_t>{1, -1, 6}));
  EXPECT_EQ(f.get_string_array("merges").value(), (std::vector<std::string>{"a b", "c d"}));
}

TEST(GgufWriterTest, RejectsWhatItCannotWriteFaithfully) {
  auto build_error = [](const GgufWriter& w) {
    auto r = w.build();
    EXPECT_FALSE(r.is_ok());
    EXPECT_TRUE(w.to_bytes().empty());
    return r.is_ok() ? std::string() : r.status().message();
  };
  {
    GgufWriter w;
    w.set("x", GgufValue::of_uint(GgufType::kUint8, 256));
    EXPECT_NE(build_error(w).find("key 'x': uint8 value 256 is out of range"), std::string::npos);
  }
  {
    GgufWriter w;
    w.set("x", GgufValue::of_int(GgufType::kUint32, -1));
    EXPECT_NE(build_error(w).find("uint32 value -1 is out of range"), std::string::npos);
  }
  {
    GgufWriter w;
    w.set("mixed", GgufValue::of_array(GgufType::kInt32, {GgufValue::of_string("no")}));
    EXPECT_NE(build_error(w).find("element 0 is string in an array of int32"), std::string::npos);
  }
  {
    GgufValue bad = GgufValue::of_string("x");
    bad.type = GgufType::kFloat32;
    GgufWriter w;
    w.set("bad", bad);
    EXPECT_NE(build_error(w).find("float32 value does not hold a float"), std::string::npos);
  }
  {
    GgufWriter w(3, 64);
    w.set_uint32("general.alignment", 32);
    EXPECT_NE(build_error(w).find("the writer aligns to 64"), std::string::npos);
  }
  EXPECT_NE(build_error(GgufWriter(1, 32)).find("version 1 cannot be written"), std::string::npos);
  EXPECT_NE(build_error(GgufWriter(3, 48)).find("alignment 48 is not a power of two"), std::string::npos);
  EXPECT_NE(build_error(GgufWriter(3, 0)).find("alignment 0"), std::string::npos);

  GgufWriter w;
  const auto data = pattern(32, 4);
  EXPECT_TRUE(w.add_tensor("t", {8}, DType::kF32, data).is_ok());
  EXPECT_NE(w.add_tensor("t", {8}, DType::kF32, data).message().find("duplicate tensor 't'"), std::string::npos);
  EXPECT_NE(w.add_tensor("u", {9}, DType::kF32, data).message().find("needs 36 bytes of data, got 32"), std::string::npos);
  EXPECT_NE(w.add_tensor("v", {16}, DType::kQ8_0, data).message().find("not a multiple of the q8_0 block size"), std::string::npos);
  EXPECT_NE(w.add_tensor("w", {1, 1, 1, 1, 8}, DType::kF32, data).message().find("5 dimensions"), std::string::npos);
  EXPECT_NE(w.add_tensor("x", {0, 8}, DType::kF32, data).message().find("dimension 0"), std::string::npos);
  EXPECT_NE(w.add_tensor("", {8}, DType::kF32, data).message().find("empty"), std::string::npos);
  EXPECT_NE(w.add_tensor("y", {8}, static_cast<DType>(5), data).message().find("unknown type"), std::string::npos);
}

TEST(GgufWriterTest, WritesAFileThatOpensFromDisk) {
  GgufWriter w(3, 32);
  w.set_string("general.architecture", "llama");
  const auto data = pattern(5 * 4, 6);
  ASSERT_TRUE(w.add_tensor("token_embd.weight", {5}, DType::kF32, data).is_ok());
  const std::string path = ::testing::TempDir() + "gguf_writer_test_" + std::to_string(getpid()) + ".gguf";
  ASSERT_TRUE(w.write(path).is_ok());
  auto r = GgufFile::open(path);
  std::remove(path.c_str());  // the mapping keeps the bytes readable
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)->path(), path);
  EXPECT_EQ((*r)->get_string("general.architecture").value(), "llama");
  const GgufTensorInfo* t = (*r)->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(std::equal(t->data.begin(), t->data.end(), data.begin(), data.end()));

  EXPECT_EQ(w.write("/nonexistent-dir/x.gguf").code(), StatusCode::kIoError);
  auto missing = GgufFile::open("/nonexistent-dir/x.gguf");
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
}

TEST(GgufWriterTest, FilledTensorsWriteTheSameBytesAsCopiedOnes) {
  const auto a = pattern(7 * 4, 1), b = pattern(3 * 2, 2);
  GgufWriter copied(3, 64), filled(3, 64);
  copied.set_string("general.architecture", "llama");
  filled.set_string("general.architecture", "llama");
  ASSERT_TRUE(copied.add_tensor("a", {7}, DType::kF32, a).is_ok());
  ASSERT_TRUE(copied.add_tensor("b", {3}, DType::kF16, b).is_ok());
  auto fill_with = [](std::vector<uint8_t> bytes) {
    return [bytes](std::span<uint8_t> out) {
      if (out.size() != bytes.size()) return Status::internal("wrong buffer size");
      std::copy(bytes.begin(), bytes.end(), out.begin());
      return Status::ok();
    };
  };
  ASSERT_TRUE(filled.add_tensor_filled("a", {7}, DType::kF32, fill_with(a)).is_ok());
  ASSERT_TRUE(filled.add_tensor_filled("b", {3}, DType::kF16, fill_with(b)).is_ok());
  EXPECT_EQ(copied.to_bytes(), filled.to_bytes());
  const std::string path = ::testing::TempDir() + "gguf_filled_" + std::to_string(getpid()) + ".gguf";
  ASSERT_TRUE(filled.write(path).is_ok());
  auto r = GgufFile::open(path);
  std::remove(path.c_str());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(std::vector<uint8_t>((*r)->find_tensor("b")->data.begin(), (*r)->find_tensor("b")->data.end()), b);

  // The same checks as add_tensor, and a fill's error fails the build and the write.
  EXPECT_FALSE(filled.add_tensor_filled("a", {7}, DType::kF32, fill_with(a)).is_ok());  // duplicate
  EXPECT_FALSE(filled.add_tensor_filled("c", {0}, DType::kF32, fill_with(a)).is_ok());
  EXPECT_FALSE(filled.add_tensor_filled("c", {7}, DType::kF32, nullptr).is_ok());
  ASSERT_TRUE(filled
                  .add_tensor_filled("c", {2}, DType::kF32,
                                     [](std::span<uint8_t>) { return Status::io_error("source vanished"); })
                  .is_ok());
  auto built = filled.build();
  ASSERT_FALSE(built.is_ok());
  EXPECT_NE(built.status().to_string().find("source vanished"), std::string::npos);
  EXPECT_NE(built.status().to_string().find("tensor 'c'"), std::string::npos);
  EXPECT_FALSE(filled.write(path).is_ok());
  std::remove(path.c_str());
}

TEST(GgufWriterTest, OpenNamesThePathInErrors) {
  const std::string path = ::testing::TempDir() + "gguf_bad_" + std::to_string(getpid()) + ".gguf";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("GGML not really", f);
  std::fclose(f);
  auto r = GgufFile::open(path);
  std::remove(path.c_str());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("reading '" + path + "': not a GGUF file"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace omnibus
