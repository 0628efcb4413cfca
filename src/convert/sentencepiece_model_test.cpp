// The SentencePiece tokenizer.model reader on hand-built protobufs (good
// ones, and damaged ones that must be refused), the vocabulary the converter
// makes of it, and gemma3's config.json checks. Real tokenizer.model files
// (trained by sentencepiece itself) are converted and held to llama.cpp in
// tests/convert_golden_test.cpp (gemma3, llama_spm).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>

#include "convert/hf_config.h"
#include "convert/hf_tensor_names.h"
#include "convert/hf_tokenizer.h"
#include "convert/sentencepiece_model.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_parser.h"

namespace omnibus {
namespace {

// Protobuf's wire format, as much as these tests write.
std::string varint(uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string key(uint32_t field, int wire) { return varint(uint64_t{field} << 3 | static_cast<uint64_t>(wire)); }
std::string bytes_field(uint32_t field, const std::string& payload) {
  return key(field, 2) + varint(payload.size()) + payload;
}
std::string varint_field(uint32_t field, uint64_t v) { return key(field, 0) + varint(v); }
std::string float_field(uint32_t field, float f) {
  std::string out = key(field, 5);
  char b[4];
  std::memcpy(b, &f, 4);  // little-endian hosts (x86, aarch64)
  return out + std::string(b, 4);
}
std::string piece(const std::string& text, float score, int type = 1) {
  std::string p = bytes_field(1, text) + float_field(2, score);
  if (type != 1) p += varint_field(3, static_cast<uint64_t>(type));
  return bytes_field(1, p);
}
// A BPE model with byte fallback: <unk>, <s>, </s>, a byte piece and two
// normal pieces, an unknown field, and the normalizer's add_dummy_prefix off.
std::string bpe_model() {
  return piece("<unk>", 0, 2) + piece("<s>", 0, 3) + piece("</s>", 0, 3) + piece("<0x0A>", 0, 6) +
         piece("\xe2\x96\x81t", -1) + piece("he", -2, 4) +
         bytes_field(2, varint_field(3, 2) + varint_field(35, 1) + varint_field(4, 8)) +  // trainer: BPE, fallback
         bytes_field(3, bytes_field(1, "identity") + varint_field(3, 0)) +                // normalizer
         varint_field(99, 7);                                                             // a field skipped
}

TEST(SentencePieceModelTest, ReadsPiecesScoresTypesAndSettings) {
  auto m = parse_sentencepiece_model(bpe_model());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  ASSERT_EQ(m->pieces.size(), 6u);
  EXPECT_EQ(m->pieces[0].text, "<unk>");
  EXPECT_EQ(m->pieces[0].type, 2);
  EXPECT_EQ(m->pieces[3].type, 6);
  EXPECT_EQ(m->pieces[4].text, "\xe2\x96\x81t");
  EXPECT_EQ(m->pieces[4].type, 1);  // the proto's default
  EXPECT_EQ(m->pieces[5].score, -2.0f);
  EXPECT_EQ(m->model_type, 2);
  EXPECT_TRUE(m->byte_fallback);
  EXPECT_FALSE(m->add_dummy_prefix);
  EXPECT_EQ(m->normalizer_name, "identity");
}

TEST(SentencePieceModelTest, RefusesDamagedFilesWithAnError) {
  const std::string good = bpe_model();
  size_t refused = 0;
  for (size_t cut = 0; cut < good.size(); ++cut) {
    // Every truncation is read or refused, never read past its end (ASan
    // watches); most are refused (a cut between two fields is a shorter
    // model).
    auto m = parse_sentencepiece_model(std::string_view(good).substr(0, cut));
    if (!m.is_ok()) {
      EXPECT_EQ(m.status().code(), StatusCode::kCorrupt) << cut;
      ++refused;
    }
  }
  EXPECT_GT(refused, good.size() * 3 / 4);
  EXPECT_FALSE(parse_sentencepiece_model("").is_ok());                                 // no pieces
  EXPECT_FALSE(parse_sentencepiece_model(bytes_field(1, "\xff")).is_ok());             // a piece cut short
  EXPECT_FALSE(parse_sentencepiece_model(key(1, 3)).is_ok());                          // a group
  EXPECT_FALSE(parse_sentencepiece_model(std::string(11, '\xff')).is_ok());            // a varint past ten bytes
  EXPECT_FALSE(parse_sentencepiece_model(key(1, 2) + varint(1ull << 40)).is_ok());     // a length past the file
  EXPECT_FALSE(parse_sentencepiece_model(bytes_field(1, float_field(2, 1))).is_ok());  // a piece without text
  EXPECT_FALSE(parse_sentencepiece_model(piece("a", 0, 9)).is_ok());                   // an unknown type
  EXPECT_FALSE(parse_sentencepiece_model(varint_field(1, 5)).is_ok());                 // pieces of the wrong wire type
}

// The GGUF the tokenizer keys make, read back (the file views `bytes`).
struct TokenizerFile {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
  const GgufFile* operator->() const { return file.get(); }
};
TokenizerFile tokenizer_file(const HfFolder& folder, const std::string& arch, int vocab, Status* status) {
  TokenizerFile out;
  GgufWriter w;
  *status = add_tokenizer_keys(folder, arch, vocab, w);
  if (!status->is_ok()) return out;
  auto bytes = w.build();
  if (!bytes.is_ok()) return out;
  out.bytes = std::move(bytes).value();
  auto f = GgufFile::parse(MappedFile::from_memory(out.bytes));
  if (f.is_ok()) out.file = std::move(f).value();
  return out;
}

TEST(SentencePieceVocabTest, FollowsLlamaCppsRulesForTypesAddedTokensAndPadding) {
  HfFolder folder;
  folder.config = {{"bos_token_id", 1}, {"eos_token_id", 2}};
  folder.sentencepiece_model = bpe_model();
  folder.added_tokens = {{"<extra>", 6}};
  folder.tokenizer_config = {
      {"add_bos_token", true},
      {"added_tokens_decoder",
       {{"7", {{"content", "\xe2\x96\x81spaced"}, {"special", false}}}, {"8", {{"content", "<|turn|>"}}}}}};
  Status s;
  const auto f = tokenizer_file(folder, "llama", 10, &s);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_NE(f.file, nullptr);
  EXPECT_EQ(*f->get_string("tokenizer.ggml.model"), "llama");
  const auto* tokens = f->find("tokenizer.ggml.tokens")->array();
  const auto* types = f->find("tokenizer.ggml.token_type")->array();
  const auto* scores = f->find("tokenizer.ggml.scores")->array();
  ASSERT_EQ(tokens->size(), 10u);
  auto type = [&](int i) { return *(*types)[i].to_int(); };
  auto text = [&](int i) { return *(*tokens)[i].to_string_value(); };
  EXPECT_EQ(type(0), 2);          // unknown
  EXPECT_EQ(type(1), 3);          // control
  EXPECT_EQ(type(3), 6);          // byte
  EXPECT_EQ(type(5), 1);          // a user-defined piece stays normal, as in llama.cpp
  EXPECT_EQ(text(6), "<extra>");  // added_tokens.json
  EXPECT_EQ(type(6), 4);
  EXPECT_EQ(text(7), " spaced");  // a user-defined ▁ becomes a space
  EXPECT_EQ(type(7), 4);
  EXPECT_EQ(text(8), "<|turn|>");  // looks special: control
  EXPECT_EQ(type(8), 3);
  EXPECT_EQ(text(9), "[PAD9]");  // padding to the model's rows
  EXPECT_EQ(type(9), 5);
  EXPECT_EQ(*(*scores)[9].to_double(), -10000.0);
  EXPECT_EQ(*(*scores)[6].to_double(), -1000.0);
  EXPECT_EQ(*f->find("tokenizer.ggml.bos_token_id")->to_int(), 1);
  EXPECT_TRUE(*f->find("tokenizer.ggml.add_bos_token")->to_bool());
  // The model was trained without the leading space (add_dummy_prefix
  // false): it is run without it.
  EXPECT_FALSE(*f->find("tokenizer.ggml.add_space_prefix")->to_bool());

  // gemma3 never adds the space; qwen2 ignores tokenizer.model (and, with no
  // tokenizer.json, has no tokenizer).
  const auto g = tokenizer_file(folder, "gemma3", 10, &s);
  ASSERT_NE(g.file, nullptr);
  EXPECT_FALSE(*g->find("tokenizer.ggml.add_space_prefix")->to_bool());
  EXPECT_EQ(tokenizer_file(folder, "qwen2", 10, &s).file, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST(SentencePieceVocabTest, RefusesUnigramModelsAndBadIds) {
  HfFolder folder;
  folder.config = nlohmann::json::object();
  folder.added_tokens = nlohmann::json::object();
  folder.sentencepiece_model = piece("a", 0) + bytes_field(2, varint_field(3, 1));  // unigram
  Status s;
  EXPECT_EQ(tokenizer_file(folder, "llama", 4, &s).file, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.to_string().find("unigram"), std::string::npos) << s.to_string();

  folder.sentencepiece_model = bpe_model();
  folder.added_tokens = {{"<x>", -3}};
  EXPECT_EQ(tokenizer_file(folder, "llama", 8, &s).file, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  folder.added_tokens = nlohmann::json::object();
  for (const char* key : {"seven", "07", "-7", ""}) {
    folder.tokenizer_config = {{"added_tokens_decoder", {{key, {{"content", "<x>"}}}}}};
    EXPECT_EQ(tokenizer_file(folder, "llama", 8, &s).file, nullptr) << key;
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << key;
  }
}

// What the converter used to write and the loader then refused (found by
// an independent probe): now refused at conversion, with the token named.
TEST(SentencePieceVocabTest, RefusesVocabulariesTheLoaderWouldRefuse) {
  HfFolder folder;
  folder.config = folder.added_tokens = nlohmann::json::object();
  const std::string trainer = bytes_field(2, varint_field(3, 2));
  const auto refused = [&](const std::string& model,
                           const nlohmann::json& tokenizer_config = nlohmann::json::object()) {
    folder.sentencepiece_model = model;
    folder.tokenizer_config = tokenizer_config;
    Status s;
    return tokenizer_file(folder, "llama", 4, &s).file == nullptr && s.code() == StatusCode::kCorrupt;
  };
  EXPECT_FALSE(refused(piece("<unk>", 0, 2) + piece("a", -1) + trainer));               // the good one
  EXPECT_TRUE(refused(piece("a", -1) + piece("a", -2) + trainer));                      // a duplicate text
  EXPECT_TRUE(refused(piece("a", -1) + piece("byte", 0, 6) + trainer));                 // a byte piece not <0xXX>
  EXPECT_TRUE(refused(piece("a", -1) + piece(std::string("b\0c", 3), -2) + trainer));   // a NUL
  EXPECT_TRUE(refused(piece("a", -1) + piece("\xff", -2) + trainer));                   // not UTF-8
  EXPECT_TRUE(refused(piece("a", -1) + piece("", -2) + trainer));                       // empty
  EXPECT_TRUE(refused(piece("a", std::numeric_limits<float>::quiet_NaN()) + trainer));  // a NaN score
  // added_tokens_decoder giving another id the text of a piece.
  EXPECT_TRUE(refused(piece("<s>", 0, 3) + piece("a", -1) + trainer,
                      {{"added_tokens_decoder", {{"3", {{"content", "<s>"}}}}}}));
}

nlohmann::json gemma3_config() {
  return nlohmann::json::parse(R"({"model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 12, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32,
    "vocab_size": 300, "max_position_embeddings": 512, "sliding_window": 16, "query_pre_attn_scalar": 32,
    "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "sliding_window_pattern": 6,
    "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": null, "attn_logit_softcapping": null})");
}

TEST(HfConfigTest, Gemma3ReadsTheWindowsFromEitherTransformersVersion) {
  auto c = parse_hf_config(gemma3_config());  // transformers 4's spelling
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->gguf_arch, "gemma3");
  EXPECT_EQ(c->window_period, 6);
  EXPECT_EQ(c->rope_theta, 1000000.0);
  EXPECT_EQ(c->window_rope_theta, 10000.0);

  nlohmann::json v5 = gemma3_config();  // transformers 5's
  for (const char* k : {"rope_theta", "rope_local_base_freq", "sliding_window_pattern"}) v5.erase(k);
  v5["rope_parameters"] = {{"full_attention", {{"rope_theta", 500000.0}, {"rope_type", "default"}}},
                           {"sliding_attention", {{"rope_theta", 20000.0}, {"rope_type", "default"}}}};
  v5["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 12; ++i) v5["layer_types"].push_back((i + 1) % 4 == 0 ? "full_attention" : "sliding_attention");
  c = parse_hf_config(v5);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->window_period, 4);
  EXPECT_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->window_rope_theta, 20000.0);
  GgufWriter w;
  add_model_keys(*c, w);  // a period other than llama.cpp's assumed six is written
  auto bytes = w.build();
  ASSERT_TRUE(bytes.is_ok());
  auto f = GgufFile::parse(MappedFile::from_memory(*bytes));
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(*(*f)->find("gemma3.attention.sliding_window_pattern")->to_int(), 4);
  EXPECT_EQ(*(*f)->find("gemma3.rope.freq_base_swa")->to_double(), 20000.0);
}

TEST(HfConfigTest, Gemma3TakesTransformersDefaultsForWhatConfigJsonLeavesOut) {
  nlohmann::json c = gemma3_config();
  c.erase("rope_theta");             // transformers' Gemma3TextConfig: 1e6, not the usual 10,000
  c.erase("query_pre_attn_scalar");  // 256, which this head dimension (32) cannot run: refused, as llama.cpp does
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kUnsupported);
  c["query_pre_attn_scalar"] = 32;
  auto parsed = parse_hf_config(c);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->rope_theta, 1000000.0);
  c["rope_parameters"] = {{"full_attention", nullptr}, {"sliding_attention", nullptr}};
  parsed = parse_hf_config(c);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->rope_theta, 1000000.0);
  EXPECT_EQ(parsed->window_rope_theta, 10000.0);
  // Both spellings of the scaling at once: which applies is unclear.
  c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kUnsupported);
  // A base float32 cannot hold.
  c = gemma3_config();
  c["rope_theta"] = 1e300;
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kCorrupt);
  c = gemma3_config();
  c["layer_types"] = {{"a", 1}};
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kCorrupt);
  // Values the loader would refuse (found by review): refused here too.
  for (const auto& [key, value] :
       {std::pair{"rms_norm_eps", nlohmann::json(1.5)}, std::pair{"rms_norm_eps", nlohmann::json(1e-60)},
        std::pair{"rope_theta", nlohmann::json(0.5)}, std::pair{"rope_local_base_freq", nlohmann::json(1.0)},
        std::pair{"sliding_window", nlohmann::json(1 << 25)}}) {
    c = gemma3_config();
    c[key] = value;
    EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kCorrupt) << key << " " << value.dump();
  }
  c = gemma3_config();
  c["use_bidirectional_attention"] = nullptr;  // null: transformers' default, not an error
  EXPECT_TRUE(parse_hf_config(c).is_ok());
}

TEST(HfConfigTest, Gemma3RefusesWhatItsFilesCannotSay) {
  const auto refused = [](const char* k, nlohmann::json v) {
    nlohmann::json c = gemma3_config();
    c[k] = std::move(v);
    return parse_hf_config(c).status().code();
  };
  EXPECT_EQ(refused("query_pre_attn_scalar", 64), StatusCode::kUnsupported);
  EXPECT_EQ(refused("final_logit_softcapping", 30.0), StatusCode::kUnsupported);
  EXPECT_EQ(refused("hidden_activation", "silu"), StatusCode::kUnsupported);
  EXPECT_EQ(refused("use_bidirectional_attention", true), StatusCode::kUnsupported);
  nlohmann::json irregular = nlohmann::json::array();
  for (int i = 0; i < 12; ++i) irregular.push_back(i == 5 || i == 7 ? "full_attention" : "sliding_attention");
  EXPECT_EQ(refused("layer_types", irregular), StatusCode::kUnsupported);
  EXPECT_EQ(refused("layer_types", nlohmann::json::array({"full_attention"})), StatusCode::kCorrupt);
  nlohmann::json c = gemma3_config();
  c["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e6}}},
                          {"sliding_attention", {{"rope_type", "linear"}, {"factor", 8.0}}}};
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kUnsupported);
  c = gemma3_config();
  c["model_type"] = "gemma3";  // the multimodal configuration needs its text_config
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kCorrupt);
}

TEST(HfConfigTest, Gemma3MultimodalTakesTheLanguageModelOverItsDefaults) {
  // gemma-3-4b-it's config.json leaves most of the language model's
  // settings at Gemma3TextConfig's defaults.
  const auto config = nlohmann::json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3", "mm_tokens_per_image": 256, "eos_token_id": [1, 106],
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
      "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"}})");
  auto c = parse_hf_config(config);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->gguf_arch, "gemma3");
  EXPECT_TRUE(c->language_model_of_multimodal);
  EXPECT_EQ(c->n_layer, 34);
  EXPECT_EQ(c->n_embd, 2560);
  EXPECT_EQ(c->n_head, 8);
  EXPECT_EQ(c->n_head_kv, 4);
  EXPECT_EQ(c->head_dim, 256);
  EXPECT_EQ(c->vocab_size, 262208);
  EXPECT_EQ(c->sliding_window, 1024);
  EXPECT_EQ(c->window_period, 6);
  EXPECT_EQ(c->rope_theta, 1000000.0);
  EXPECT_EQ(c->rope_scaling, "linear");
  EXPECT_EQ(c->rope_factor, 8.0);
  EXPECT_TRUE(c->tied_embeddings);

  // Its tensors: the language model's under either transformers version's
  // prefix, the vision tower's and projector's left out.
  const auto name = [&](const std::string& hf) { return gguf_tensor_name(hf, *c); };
  auto q = name("language_model.model.layers.0.self_attn.q_proj.weight");
  ASSERT_TRUE(q.is_ok() && q->has_value());
  EXPECT_EQ((*q)->name, "blk.0.attn_q.weight");
  auto norm = name("model.language_model.layers.3.post_feedforward_layernorm.weight");
  ASSERT_TRUE(norm.is_ok() && norm->has_value());
  EXPECT_EQ((*norm)->name, "blk.3.post_ffw_norm.weight");
  EXPECT_EQ((*norm)->shift, 1.0f);
  auto embd = name("model.language_model.embed_tokens.weight");
  ASSERT_TRUE(embd.is_ok() && embd->has_value());
  EXPECT_EQ((*embd)->name, "token_embd.weight");
  for (const char* vision :
       {"vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight",
        "model.vision_tower.vision_model.post_layernorm.weight", "multi_modal_projector.mm_input_projection_weight"}) {
    auto v = name(vision);
    ASSERT_TRUE(v.is_ok()) << vision;
    EXPECT_FALSE(v->has_value()) << vision;
  }
  EXPECT_FALSE(name("language_model.model.layers.0.self_attn.unknown.weight").is_ok());
}

}  // namespace
}  // namespace omnibus
