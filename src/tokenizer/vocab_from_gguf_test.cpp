// vocab_from_gguf on small GGUF files written in memory with GgufWriter.
#include "tokenizer/vocab_from_gguf.h"

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace omnibus {
namespace {

// Owns the bytes a parsed GgufFile points into.
struct ParsedGguf {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
};

ParsedGguf parse(const GgufWriter& writer) {
  ParsedGguf p;
  auto bytes = writer.build();
  EXPECT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  p.bytes = std::move(bytes).value();
  auto file = GgufFile::parse(MappedFile::from_memory(p.bytes));
  EXPECT_TRUE(file.is_ok()) << file.status().to_string();
  if (file.is_ok()) p.file = std::move(file).value();
  return p;
}

// A 7-token byte-level vocabulary in the shape SmolLM2's file has.
GgufWriter gpt2_writer() {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "smollm");
  w.set_string_array("tokenizer.ggml.tokens", {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b", "ab", "\xC4\xA0"});
  w.set_int32_array("tokenizer.ggml.token_type", {3, 3, 3, 1, 1, 1, 1});
  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  w.set_uint32("tokenizer.ggml.bos_token_id", 1);
  w.set_uint32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_string("tokenizer.chat_template", "{{ '<|im_start|>' }}");
  return w;
}

TEST(VocabFromGgufTest, ReadsAByteLevelVocabulary) {
  const ParsedGguf p = parse(gpt2_writer());
  ASSERT_NE(p.file, nullptr);
  auto v = vocab_from_gguf(*p.file);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->model, "gpt2");
  EXPECT_EQ(v->pre, "smollm");
  EXPECT_EQ(v->tokens.size(), 7u);
  EXPECT_EQ(v->merges, std::vector<std::string>{"a b"});
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->eot_id, 2);  // found by its text, <|im_end|>
  EXPECT_EQ(v->unk_id, -1);
  EXPECT_FALSE(v->add_bos);
  EXPECT_EQ(v->end_of_generation_ids, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(v->chat_template, "{{ '<|im_start|>' }}");

  auto tok = Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("ab ab<|im_end|>", false, true), (std::vector<int32_t>{5, 6, 5, 2}));
}

// gpt-oss's harmony tokens (its ids' order, fewer of them): <|return|> and
// <|call|> end generation; <|end|> closes a message and does not, even
// when the file names it end-of-turn.
TEST(VocabFromGgufTest, HarmonyEndsOnReturnAndCallNotEnd) {
  for (const bool eot_key : {true, false}) {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-4o");
    w.set_string_array("tokenizer.ggml.tokens", {"a", "<|startoftext|>", "<|endoftext|>", "<|return|>", "<|start|>",
                                                 "<|message|>", "<|end|>", "<|channel|>", "<|call|>"});
    w.set_int32_array("tokenizer.ggml.token_type", {1, 3, 3, 3, 3, 3, 3, 3, 3});
    w.set_string_array("tokenizer.ggml.merges", {});
    w.set_uint32("tokenizer.ggml.eos_token_id", 3);
    if (eot_key) w.set_uint32("tokenizer.ggml.eot_token_id", 6);
    const ParsedGguf p = parse(w);
    auto v = vocab_from_gguf(*p.file);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    EXPECT_EQ(v->end_of_generation_ids, (std::vector<int32_t>{2, 3, 8})) << eot_key;
    // Without a stated end-of-turn, <|end|> is not picked as one either.
    if (!eot_key) {
      EXPECT_NE(v->eot_id, 6);
    }
  }
}

TEST(VocabFromGgufTest, SentencePieceDefaults) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a"});
  w.set_float32_array("tokenizer.ggml.scores", {0, 0, 0, -1.5f});
  w.set_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 1});
  const ParsedGguf p = parse(w);
  auto v = vocab_from_gguf(*p.file);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_TRUE(v->add_bos);
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_FLOAT_EQ(v->scores[3], -1.5f);
  auto tok = Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("a", true, false), (std::vector<int32_t>{1, 3}));
}

TEST(VocabFromGgufTest, FileFlagsOverrideDefaults) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_bool("tokenizer.ggml.add_eos_token", true);
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  const ParsedGguf p = parse(w);
  auto v = vocab_from_gguf(*p.file);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_FALSE(v->add_bos);
  EXPECT_TRUE(v->add_eos);
  EXPECT_FALSE(v->add_space_prefix);
}

// Each broken file gives an error whose message names the problem.
void expect_error(GgufWriter w, StatusCode code, const std::string& words) {
  const ParsedGguf p = parse(w);
  ASSERT_NE(p.file, nullptr);
  auto v = vocab_from_gguf(*p.file);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), code) << v.status().to_string();
  EXPECT_NE(v.status().message().find(words), std::string::npos) << v.status().to_string();
}

TEST(VocabFromGgufTest, RejectsBrokenFiles) {
  GgufWriter no_model;
  no_model.set_string_array("tokenizer.ggml.tokens", {"a"});
  expect_error(no_model, StatusCode::kNotFound, "tokenizer.ggml.model");

  GgufWriter w = gpt2_writer();
  w.set_string("tokenizer.ggml.model", "bert");
  expect_error(w, StatusCode::kUnsupported, "bert");

  w = gpt2_writer();
  w.set_int32_array("tokenizer.ggml.token_type", {3, 3, 3, 1, 1});
  expect_error(w, StatusCode::kCorrupt, "token_type has 5 entries");

  w = gpt2_writer();
  w.set_float32_array("tokenizer.ggml.scores", {0, 0});
  expect_error(w, StatusCode::kCorrupt, "scores has 2 entries");

  w = gpt2_writer();
  w.set_int32_array("tokenizer.ggml.token_type", {3, 3, 3, 1, 1, 1, 8});
  expect_error(w, StatusCode::kCorrupt, "token_type[6] = 8");

  w = gpt2_writer();
  w.set_uint32("tokenizer.ggml.eos_token_id", 7);
  expect_error(w, StatusCode::kOutOfRange, "eos_token_id = 7");

  w = gpt2_writer();
  w.set_string_array("tokenizer.ggml.merges", {"a b", "ab"});
  expect_error(w, StatusCode::kCorrupt, "merges[1]");

  w = gpt2_writer();
  w.set_string("tokenizer.ggml.pre", "x");
  w.set_uint32("tokenizer.ggml.add_bos_token", 1);  // wrong type: not a bool
  expect_error(w, StatusCode::kInvalidArgument, "add_bos_token");

  GgufWriter no_merges;
  no_merges.set_string("tokenizer.ggml.model", "gpt2");
  no_merges.set_string_array("tokenizer.ggml.tokens", {"a"});
  expect_error(no_merges, StatusCode::kCorrupt, "merges");

  GgufWriter empty;
  empty.set_string("tokenizer.ggml.model", "llama");
  empty.set_string_array("tokenizer.ggml.tokens", {});
  expect_error(empty, StatusCode::kCorrupt, "empty");
}

}  // namespace
}  // namespace omnibus
