// The converter's parts on hand-made input: the safetensors reader on good
// and hostile files, the tensor names, the RoPE row permutation, the
// pre-tokenizer recognition and config.json's checks. The whole path is
// held to transformers and llama.cpp in tests/convert_golden_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "convert/hf_config.h"
#include "convert/hf_tensor_names.h"
#include "convert/hf_to_gguf.h"
#include "convert/hf_tokenizer.h"
#include "convert/safetensors_file.h"

namespace omnibus {
namespace {

// A safetensors file: the header JSON, padded as the format allows, then `data`.
std::vector<uint8_t> safetensors_bytes(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<ptrdiff_t>(header.size()));
  return out;
}

Status parse_status(const std::string& header, size_t data_bytes) {
  const auto bytes = safetensors_bytes(header, std::vector<uint8_t>(data_bytes, 0));
  return SafetensorsFile::parse(bytes).status();
}

TEST(SafetensorsFileTest, ReadsTensorsInDataOrder) {
  std::vector<uint8_t> data(4 * 6 + 2 * 3);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  const auto bytes = safetensors_bytes(
      R"({"b": {"dtype": "BF16", "shape": [3], "data_offsets": [24, 30]},)"
      R"( "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "__metadata__": {"format": "pt"}})",
      data);
  auto f = SafetensorsFile::parse(bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const auto& t = (*f)->tensors();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "a");
  EXPECT_EQ(t[0].dtype, SafetensorsDType::kF32);
  EXPECT_EQ(t[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t[0].bytes.size(), 24u);
  EXPECT_EQ(t[0].bytes[0], 0);
  EXPECT_EQ(t[1].name, "b");
  EXPECT_EQ(t[1].bytes[0], 24);
  EXPECT_EQ(t[1].elements(), 3);
}

TEST(SafetensorsFileTest, RefusesHostileFilesWithAnError) {
  const std::vector<uint8_t> tiny = {1, 2, 3};
  EXPECT_EQ(SafetensorsFile::parse(tiny).status().code(), StatusCode::kCorrupt);
  // A header length past the end of the file.
  auto bytes = safetensors_bytes("{}", {});
  bytes[0] = 0xff;
  EXPECT_EQ(SafetensorsFile::parse(bytes).status().code(), StatusCode::kCorrupt);
  bytes[7] = 0xff;  // 2^63 and more: no overflow either
  EXPECT_EQ(SafetensorsFile::parse(bytes).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(parse_status("{not json", 0).code(), StatusCode::kCorrupt);
  EXPECT_EQ(parse_status("[1, 2]", 0).code(), StatusCode::kCorrupt);
  EXPECT_EQ(parse_status(R"({"a": 5})", 0).code(), StatusCode::kCorrupt);
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F32", "shape": [1]}})", 4).code(), StatusCode::kCorrupt);
  const Status int8 = parse_status(R"({"a": {"dtype": "I8", "shape": [4], "data_offsets": [0, 4]}})", 4);
  EXPECT_EQ(int8.code(), StatusCode::kUnsupported);
  EXPECT_NE(int8.to_string().find("I8"), std::string::npos);
  // Offsets past the data, backwards, or not the size the shape needs.
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4).code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}})", 4).code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 16).code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4).code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F16", "shape": [4294967296, 4294967296, 4294967296],)"
                         R"( "data_offsets": [0, 4]}})",
                         4)
                .code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                         R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                         12)
                .code(),
            StatusCode::kCorrupt);
  // A name twice (the last entry would win).
  const Status twice = parse_status(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                                    R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                    8);
  EXPECT_EQ(twice.code(), StatusCode::kCorrupt);
  EXPECT_NE(twice.to_string().find("'a' twice"), std::string::npos) << twice.to_string();
  // An empty tensor where the next one starts overlaps nothing, and hides
  // no overlap of the tensors around it.
  EXPECT_TRUE(parse_status(R"({"e": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},)"
                           R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                           4)
                  .is_ok());
  EXPECT_EQ(parse_status(R"({"a": {"dtype": "F32", "shape": [25], "data_offsets": [0, 100]},)"
                         R"( "e": {"dtype": "F32", "shape": [0], "data_offsets": [50, 50]},)"
                         R"( "b": {"dtype": "F32", "shape": [25], "data_offsets": [60, 160]}})",
                         160)
                .code(),
            StatusCode::kCorrupt);
}

HfModelConfig llama_config() {
  auto c = parse_hf_config(nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 2,
      "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
      "vocab_size": 100, "max_position_embeddings": 128})"));
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.value();
}

TEST(HfTensorNamesTest, MapsLlamaNamesAndPermutesQueryAndKeyOnly) {
  const HfModelConfig c = llama_config();
  auto name = [&](const std::string& hf) { return gguf_tensor_name(hf, c); };
  EXPECT_EQ(name("model.embed_tokens.weight")->value().name, "token_embd.weight");
  EXPECT_EQ(name("lm_head.weight")->value().name, "output.weight");
  const auto q = name("model.layers.1.self_attn.q_proj.weight")->value();
  EXPECT_EQ(q.name, "blk.1.attn_q.weight");
  EXPECT_EQ(q.layer, 1);
  EXPECT_EQ(q.permute_heads, 4);
  EXPECT_EQ(name("model.layers.0.self_attn.k_proj.bias")->value().permute_heads, 2);
  EXPECT_EQ(name("model.layers.0.self_attn.v_proj.weight")->value().permute_heads, 0);
  EXPECT_EQ(name("model.layers.0.mlp.down_proj.weight")->value().name, "blk.0.ffn_down.weight");
  EXPECT_FALSE(name("model.layers.0.self_attn.rotary_emb.inv_freq")->has_value());
  EXPECT_FALSE(name("model.layers.2.mlp.up_proj.weight").is_ok());  // past the last layer
  EXPECT_FALSE(name("model.layers.x.mlp.up_proj.weight").is_ok());
  EXPECT_FALSE(name("model.layers.0.mlp.up_proj.scales").is_ok());
  EXPECT_FALSE(name("vision_tower.patch_embed.weight").is_ok());
  HfModelConfig tied = c;
  tied.tied_embeddings = true;
  EXPECT_FALSE(gguf_tensor_name("lm_head.weight", tied)->has_value());
}

nlohmann::json moe_config(const char* model_type) {
  return nlohmann::json::parse(std::string(R"({"model_type": ")") + model_type + R"(", "num_hidden_layers": 2,
      "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
      "vocab_size": 100, "max_position_embeddings": 128, "num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64})");
}

TEST(HfTensorNamesTest, MapsEachExpertToItsSliceOfOneTensor) {
  auto qwen3moe = moe_config("qwen3_moe");
  qwen3moe["norm_topk_prob"] = true;
  const auto c = parse_hf_config(qwen3moe);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->gguf_arch, "qwen3moe");
  EXPECT_EQ(c->n_expert, 4);
  const auto down = gguf_tensor_name("model.layers.1.mlp.experts.3.down_proj.weight", *c)->value();
  EXPECT_EQ(down.name, "blk.1.ffn_down_exps.weight");
  EXPECT_EQ(down.expert, 3);
  EXPECT_FALSE(gguf_tensor_name("model.layers.1.mlp.experts.4.down_proj.weight", *c).is_ok());  // 4 experts
  EXPECT_FALSE(gguf_tensor_name("model.layers.1.mlp.experts.0.proj.weight", *c).is_ok());
  // One spelling per number: "00", "01" or "-0" would alias expert 0 or layer 1.
  EXPECT_FALSE(gguf_tensor_name("model.layers.1.mlp.experts.00.down_proj.weight", *c).is_ok());
  EXPECT_FALSE(gguf_tensor_name("model.layers.1.mlp.experts.-0.down_proj.weight", *c).is_ok());
  EXPECT_FALSE(gguf_tensor_name("model.layers.01.mlp.experts.0.down_proj.weight", *c).is_ok());
  EXPECT_FALSE(gguf_tensor_name("model.layers.+1.self_attn.q_proj.weight", *c).is_ok());
  const auto router = gguf_tensor_name("model.layers.0.mlp.gate.weight", *c)->value();
  EXPECT_EQ(router.name, "blk.0.ffn_gate_inp.weight");
  EXPECT_TRUE(router.f32);
  EXPECT_EQ(router.expert, -1);
  EXPECT_FALSE(gguf_tensor_name("model.layers.0.mlp.gate_proj.weight", *c)->value().f32);
  const auto shared_gate =
      gguf_tensor_name("model.layers.0.mlp.shared_expert_gate.weight", *parse_hf_config(moe_config("qwen2_moe")));
  EXPECT_EQ(shared_gate->value().name, "blk.0.ffn_gate_inp_shexp.weight");
  EXPECT_TRUE(shared_gate->value().f32);
  // A dense model has no experts to slice.
  EXPECT_FALSE(gguf_tensor_name("model.layers.0.mlp.experts.0.up_proj.weight", llama_config()).is_ok());
}

TEST(HfConfigTest, RefusesMixturesOfExpertsThatWouldRouteDifferently) {
  auto c = moe_config("qwen3_moe");
  c["norm_topk_prob"] = false;  // llama.cpp and omnibus normalise qwen3moe's routing weights
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kUnsupported);
  c["norm_topk_prob"] = true;
  c["mlp_only_layers"] = {1};
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kUnsupported);
  c["mlp_only_layers"] = nlohmann::json::array();
  c["num_experts_per_tok"] = 5;
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kCorrupt);
  c.erase("num_experts_per_tok");
  EXPECT_EQ(parse_hf_config(c).status().code(), StatusCode::kCorrupt);
}

TEST(PermuteRopeRowsTest, InterleavesEachHeadsHalves) {
  // Two heads of four one-byte rows: per head, rows 0 1 2 3 -> 0 2 1 3.
  const std::vector<uint8_t> src = {0, 1, 2, 3, 10, 11, 12, 13};
  std::vector<uint8_t> dst(src.size());
  permute_rope_rows(src, dst, 2, 1);
  EXPECT_EQ(dst, (std::vector<uint8_t>{0, 2, 1, 3, 10, 12, 11, 13}));
}

TEST(HfTokenizerTest, RecognisesThePreTokenizersWeRun) {
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  auto split = [](const std::string& regex) {
    nlohmann::json p = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    return recognise_pre_tokenizer(p);
  };
  EXPECT_EQ(split(llama3).value(), "llama-bpe");
  std::string qwen2 = llama3;
  qwen2.replace(qwen2.find(R"(\p{N}{1,3})"), 10, R"(\p{N})");
  EXPECT_EQ(split(qwen2).value(), "qwen2");
  const auto unknown = split(R"(\p{L}+|\s+)");
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(unknown.status().to_string().find(R"(\p{L}+|\s+)"), std::string::npos);
  EXPECT_EQ(recognise_pre_tokenizer({{"type", "ByteLevel"}, {"add_prefix_space", false}}).value(), "gpt2");
  EXPECT_FALSE(recognise_pre_tokenizer({{"type", "ByteLevel"}, {"add_prefix_space", true}}).is_ok());
  EXPECT_EQ(recognise_pre_tokenizer(nlohmann::json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Digits", "individual_digits": true}, {"type": "ByteLevel", "use_regex": true}]})"))
                .value(),
            "smollm");
  // Values of the wrong JSON type are errors, not exceptions.
  EXPECT_FALSE(recognise_pre_tokenizer({{"type", 5}}).is_ok());
  EXPECT_FALSE(recognise_pre_tokenizer(nullptr).is_ok());
}

TEST(HfConfigTest, RefusesWhatDoesNotConvertByName) {
  const auto mamba = parse_hf_config({{"model_type", "mamba"}});
  EXPECT_EQ(mamba.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(mamba.status().to_string().find("llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe"), std::string::npos);
  auto config = nlohmann::json::parse(R"({"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": "64",
      "intermediate_size": 96, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 128})");
  EXPECT_EQ(parse_hf_config(config).status().code(), StatusCode::kCorrupt);
  config["hidden_size"] = 64;
  config["tie_word_embeddings"] = "yes";
  EXPECT_EQ(parse_hf_config(config).status().code(), StatusCode::kCorrupt);
  config["tie_word_embeddings"] = true;
  config["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_EQ(parse_hf_config(config).status().code(), StatusCode::kUnsupported);
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32}};
  const auto yarn = parse_hf_config(config);
  ASSERT_TRUE(yarn.is_ok()) << yarn.status().to_string();
  EXPECT_EQ(yarn->rope_scaling, "yarn");
  EXPECT_EQ(yarn->rope_original_context, 32);
  EXPECT_EQ(parse_hf_config(nlohmann::json::array()).status().code(), StatusCode::kCorrupt);
  config["rope_scaling"]["original_max_position_embeddings"] = 1e300;  // no float-to-int overflow
  EXPECT_EQ(parse_hf_config(config).status().code(), StatusCode::kCorrupt);
}

TEST(HfConfigTest, Llama3ScalingReadsTheSameFromEitherTransformersVersion) {
  auto config = nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 64,
      "intermediate_size": 96, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 512,
      "rope_theta": 500000.0})");
  const nlohmann::json scaling = {{"rope_type", "llama3"},
                                  {"factor", 8.0},
                                  {"low_freq_factor", 1.0},
                                  {"high_freq_factor", 4.0},
                                  {"original_max_position_embeddings", 64}};
  auto v4 = config;
  v4["rope_scaling"] = scaling;
  auto v5 = config;
  v5.erase("rope_theta");
  v5["rope_parameters"] = scaling;
  v5["rope_parameters"]["rope_theta"] = 500000.0;
  const auto a = parse_hf_config(v4), b = parse_hf_config(v5);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_EQ(a->rope_freqs.size(), 8u);
  EXPECT_EQ(a->rope_freqs, b->rope_freqs);
  EXPECT_EQ(a->rope_freqs.front(), 1.0f);  // the shortest wavelength keeps its frequency
  EXPECT_EQ(a->rope_freqs.back(), 8.0f);   // the longest is divided by the factor
}

}  // namespace
}  // namespace omnibus
