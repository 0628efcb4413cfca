// Typed getters, GgufValue conversions and describe(), plus a check against
// the real default model when it is present.
#include "gguf/gguf_file.h"

#include <gtest/gtest.h>

#include "real_model.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_test_support.h"
#include "gguf/gguf_writer.h"

namespace omnibus {
namespace {

using gguf_test::parse_bytes;
using V = GgufValue;

void expect_message(const Status& s, const std::string& needle) {
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message() << "\nexpected: " << needle;
}

class GgufGetterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter w;
    w.set("u8", V::of_uint(GgufType::kUint8, 7));
    w.set("i16", V::of_int(GgufType::kInt16, -33));
    w.set_uint32("u32", 4097);
    w.set_uint64("u64.big", ~0ull);
    w.set("i64", V::of_int(GgufType::kInt64, -(1ll << 40)));
    w.set_float32("f32", 1.5f);
    w.set("f64", V::of_float64(1e-300));
    w.set_bool("flag", true);
    w.set_string("name", "SmolLM2");
    w.set_string_array("tokens", {"<|im_start|>", "a", "b"});
    w.set_float32_array("scores", {-0.5f, 2.0f});
    w.set_int32_array("types", {1, 3, -2});
    w.set("mixed.u8", V::of_array(GgufType::kUint8, {V::of_uint(GgufType::kUint8, 9)}));
    w.set("big.u64", V::of_array(GgufType::kUint64, {V::of_uint(GgufType::kUint64, ~0ull)}));
    bytes_ = w.to_bytes();
    auto r = parse_bytes(bytes_);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    file_ = std::move(r).value();
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<GgufFile> file_;
};

TEST_F(GgufGetterTest, GetIntAcceptsEveryIntegerType) {
  EXPECT_EQ(file_->get_int("u8").value(), 7);
  EXPECT_EQ(file_->get_int("i16").value(), -33);
  EXPECT_EQ(file_->get_int("u32").value(), 4097);
  EXPECT_EQ(file_->get_int("i64").value(), -(1ll << 40));
  expect_message(file_->get_int("u64.big").status(), "metadata key 'u64.big': value 18446744073709551615 does not fit in int64");
  expect_message(file_->get_int("f32").status(), "metadata key 'f32': expected an integer, found float32");
  expect_message(file_->get_int("tokens").status(), "expected an integer, found array of string");
  EXPECT_EQ(file_->get_int("nope").status().code(), StatusCode::kNotFound);
  expect_message(file_->get_int("nope").status(), "metadata key 'nope' not found");
}

TEST_F(GgufGetterTest, GetFloatAcceptsFloatsAndIntegers) {
  EXPECT_EQ(file_->get_float("f32").value(), 1.5);
  EXPECT_EQ(file_->get_float("f64").value(), 1e-300);
  EXPECT_EQ(file_->get_float("u32").value(), 4097.0);
  EXPECT_EQ(file_->get_float("i16").value(), -33.0);
  expect_message(file_->get_float("name").status(), "metadata key 'name': expected a number, found string");
  expect_message(file_->get_float("flag").status(), "found bool");
}

TEST_F(GgufGetterTest, StringAndBoolGetters) {
  EXPECT_EQ(file_->get_string("name").value(), "SmolLM2");
  EXPECT_TRUE(file_->get_bool("flag").value());
  expect_message(file_->get_string("u32").status(), "metadata key 'u32': expected a string, found uint32");
  expect_message(file_->get_bool("u8").status(), "expected a bool, found uint8");
  expect_message(file_->get_bool("missing.flag").status(), "'missing.flag' not found");
}

TEST_F(GgufGetterTest, ArrayGetters) {
  EXPECT_EQ(file_->get_string_array("tokens").value(), (std::vector<std::string>{"<|im_start|>", "a", "b"}));
  EXPECT_EQ(file_->get_float_array("scores").value(), (std::vector<double>{-0.5, 2.0}));
  EXPECT_EQ(file_->get_float_array("types").value(), (std::vector<double>{1, 3, -2}));
  EXPECT_EQ(file_->get_int_array("types").value(), (std::vector<int64_t>{1, 3, -2}));
  EXPECT_EQ(file_->get_int_array("mixed.u8").value(), (std::vector<int64_t>{9}));
  expect_message(file_->get_string_array("types").status(), "metadata key 'types' element 0: expected a string, found int32");
  expect_message(file_->get_int_array("scores").status(), "'scores' element 0: expected an integer, found float32");
  expect_message(file_->get_int_array("big.u64").status(), "does not fit in int64");
  expect_message(file_->get_string_array("name").status(), "'name': expected an array of strings, found string");
  expect_message(file_->get_float_array("nothing").status(), "'nothing' not found");
}

TEST(GgufValueTest, ConversionsCheckTypeAndRange) {
  EXPECT_EQ(V::of_uint(GgufType::kUint64, ~0ull).to_uint().value(), ~0ull);
  expect_message(V::of_int(GgufType::kInt8, -1).to_uint().status(), "value -1 is negative");
  EXPECT_EQ(V::of_int(GgufType::kInt32, 12).to_uint().value(), 12u);
  EXPECT_TRUE(V::of_uint(GgufType::kUint8, 1).is_integer());
  EXPECT_FALSE(V::of_uint(GgufType::kUint8, 1).is_float());
  EXPECT_TRUE(V::of_float64(1).is_float());
  expect_message(V::of_bool(true).to_int().status(), "expected an integer, found bool");
  EXPECT_EQ(V::of_string("x").array(), nullptr);
  ASSERT_NE(V::of_array(GgufType::kBool, {}).array(), nullptr);
  // A payload that does not match its declared type is refused, not misread.
  V odd = V::of_string("5");
  odd.type = GgufType::kUint32;
  EXPECT_FALSE(odd.to_int().is_ok());
  EXPECT_FALSE(odd.to_double().is_ok());
}

TEST(GgufValueTest, DescribeIsShortAndReadable) {
  EXPECT_EQ(V::of_uint(GgufType::kUint32, 49152).describe(), "49152");
  EXPECT_EQ(V::of_int(GgufType::kInt8, -3).describe(), "-3");
  EXPECT_EQ(V::of_float32(1e-5f).describe(), "9.99999975e-06");
  EXPECT_EQ(V::of_float64(100000).describe(), "100000");
  EXPECT_EQ(V::of_bool(false).describe(), "false");
  EXPECT_EQ(V::of_string("llama").describe(), "\"llama\"");
  EXPECT_EQ(V::of_string("a\"b\n\x01").describe(), "\"a\\\"b\\n\\x01\"");
  EXPECT_EQ(V::of_string(std::string(100, 'x')).describe(), "\"" + std::string(60, 'x') + "...\"");
  std::vector<V> few = {V::of_string("en"), V::of_string("fr")};
  EXPECT_EQ(V::of_array(GgufType::kString, few).describe(), "[\"en\", \"fr\"]");
  EXPECT_EQ(V::of_array(GgufType::kInt32, {}).describe(), "[]");
  std::vector<V> many(49152, V::of_string("tok"));
  EXPECT_EQ(V::of_array(GgufType::kString, many).describe(), "[string x 49152]");
  std::vector<V> nested = {V::of_array(GgufType::kUint8, {})};
  EXPECT_EQ(V::of_array(GgufType::kArray, nested).describe(), "[array x 1]");
}

// The real default model (OMNIBUS_MODEL; required in CI).
TEST(GgufRealModelTest, SmolLm2ParsesWithExpectedShape) {
  const std::string path = testing::real_model_path();
  if (path.empty()) OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL("OMNIBUS_MODEL is not set");
  auto r = GgufFile::open(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.tensors().size(), 272u);
  EXPECT_EQ(f.metadata().size(), 33u);
  EXPECT_EQ(f.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f.get_int("llama.block_count").value(), 30);
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre").value(), "smollm");
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 49152u);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.merges")->size(), 48900u);
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->describe(), "[string x 49152]");
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims, (std::vector<int64_t>{576, 49152}));
  EXPECT_EQ(embd->dtype, DType::kQ8_0);
  EXPECT_EQ(embd->nbytes, 30081024u);
  uint64_t total = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
    total += t.nbytes;
  }
  EXPECT_LE(f.data_offset() + total, f.file_size());
}

}  // namespace
}  // namespace omnibus
