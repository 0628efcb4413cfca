// gpt-oss's fused experts to GGUF's expert stacks (gpt_oss_experts.h), its
// config.json's checks, and the whole conversion refusing damaged
// checkpoints made from the golden gptoss_mxfp4 folder. The converted bytes
// are held to llama.cpp's converter in tests/convert_golden_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "convert/gpt_oss_experts.h"
#include "convert/hf_config.h"
#include "convert/hf_to_gguf.h"
#include "convert/safetensors_file.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

// A tensor over bytes the test owns.
struct OwnedTensor {
  std::vector<uint8_t> data;
  SafetensorsTensor tensor;
};

// F32 values 0, 1, 2, ... in `shape`.
OwnedTensor counting_f32(const std::string& name, std::vector<int64_t> shape) {
  OwnedTensor t;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.data.resize(n * 4);
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i);
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  }
  t.tensor = {name, SafetensorsDType::kF32, std::move(shape), {}};
  return t;
}

OwnedTensor bytes_u8(const std::string& name, std::vector<int64_t> shape, std::function<uint8_t(int64_t)> value) {
  OwnedTensor t;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  for (int64_t i = 0; i < n; ++i) t.data.push_back(value(i));
  t.tensor = {name, SafetensorsDType::kU8, std::move(shape), {}};
  return t;
}

class GptOssExpertsTest : public ::testing::Test {
 protected:
  void add(OwnedTensor t) {
    owned_.push_back(std::make_unique<OwnedTensor>(std::move(t)));
    OwnedTensor& o = *owned_.back();
    o.tensor.bytes = o.data;
    parts_[o.tensor.name] = &o.tensor;
  }

  Result<std::vector<ExpertStackTensor>> plan() { return plan_gpt_oss_experts(3, parts_, config_, DType::kF32); }

  // The tensor `name` planned and filled, as floats (F32 ones) or bytes.
  std::vector<uint8_t> filled(const std::vector<ExpertStackTensor>& stacks, const std::string& name,
                              std::vector<int64_t> dims) {
    for (const auto& t : stacks) {
      if (t.name != name) continue;
      EXPECT_EQ(t.dims, dims) << name;
      int64_t elements = 1;
      for (int64_t d : t.dims) elements *= d;
      std::vector<uint8_t> out(dtype_bytes(t.dtype, elements).value());
      t.fill(out);
      return out;
    }
    ADD_FAILURE() << "no " << name;
    return {};
  }

  static float at(const std::vector<uint8_t>& f32, int64_t i) {
    float v;
    std::memcpy(&v, f32.data() + 4 * i, 4);
    return v;
  }

  HfModelConfig config_ = [] {
    HfModelConfig c;
    c.gguf_arch = "gpt-oss";
    c.n_expert = 2;
    c.n_embd = 3;
    c.n_ff = c.n_ff_expert = 2;
    return c;
  }();
  std::vector<std::unique_ptr<OwnedTensor>> owned_;
  std::map<std::string, const SafetensorsTensor*> parts_;
};

// transformers 5's layout: gate_up_proj [experts, hidden, 2 x ff] with gate
// in the even columns; down_proj [experts, ff, hidden]; both transposed
// against GGUF's rows.
TEST_F(GptOssExpertsTest, FloatExpertsAreSplitAndTransposed) {
  const int64_t E = 2, H = 3, I = 70;  // gate/up: two blocks of rows (fill_floats gathers 64 at a time)
  config_.n_ff = config_.n_ff_expert = I;
  add(counting_f32("gate_up_proj", {E, H, 2 * I}));
  add(counting_f32("gate_up_proj_bias", {E, 2 * I}));
  add(counting_f32("down_proj", {E, I, H}));
  add(counting_f32("down_proj_bias", {E, H}));
  auto stacks = plan();
  ASSERT_TRUE(stacks.is_ok()) << stacks.status().to_string();
  ASSERT_EQ(stacks->size(), 6u);
  const auto gate = filled(*stacks, "blk.3.ffn_gate_exps.weight", {H, I, E});
  const auto up = filled(*stacks, "blk.3.ffn_up_exps.weight", {H, I, E});
  const auto down = filled(*stacks, "blk.3.ffn_down_exps.weight", {I, H, E});
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < I; ++r)
      for (int64_t c = 0; c < H; ++c) {
        EXPECT_EQ(at(gate, (e * I + r) * H + c), float(e * H * 2 * I + c * 2 * I + 2 * r));
        EXPECT_EQ(at(up, (e * I + r) * H + c), float(e * H * 2 * I + c * 2 * I + 2 * r + 1));
      }
  for (int64_t e = 0; e < E; ++e)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < I; ++i) EXPECT_EQ(at(down, (e * H + h) * I + i), float(e * I * H + i * H + h));
  const auto gate_bias = filled(*stacks, "blk.3.ffn_gate_exps.bias", {I, E});
  const auto up_bias = filled(*stacks, "blk.3.ffn_up_exps.bias", {I, E});
  const auto down_bias = filled(*stacks, "blk.3.ffn_down_exps.bias", {H, E});
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t r = 0; r < I; ++r) {
      EXPECT_EQ(at(gate_bias, e * I + r), float(e * 2 * I + 2 * r));
      EXPECT_EQ(at(up_bias, e * I + r), float(e * 2 * I + 2 * r + 1));
    }
    for (int64_t h = 0; h < H; ++h) EXPECT_EQ(at(down_bias, e * H + h), float(e * H + h));
  }
}

TEST(Mxfp4RepackTest, EvenElementsLowNibbleToGgmlHalves) {
  // Byte k holds element 2k (code k) low and element 2k + 1 (code 15 - k)
  // high: element i's code is i / 2 for even i, 15 - i / 2 for odd.
  uint8_t hf[16], ggml[16];
  for (int k = 0; k < 16; ++k) hf[k] = static_cast<uint8_t>(k | (15 - k) << 4);
  auto code = [](int i) { return i % 2 == 0 ? i / 2 : 15 - i / 2; };
  repack_mxfp4_nibbles(hf, ggml);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(ggml[j] & 0x0F, code(j)) << j;     // element j
    EXPECT_EQ(ggml[j] >> 4, code(j + 16)) << j;  // element j + 16
  }
}

// The published layout: blocks and scales, output-major, gate and up rows
// interleaved; the exponent then the repacked codes, a block at a time.
TEST_F(GptOssExpertsTest, Mxfp4ExpertsKeepTheirBlocksRowByRow) {
  config_.n_expert = 1;
  config_.n_embd = 64;  // two blocks a gate/up row
  config_.n_ff = config_.n_ff_expert = 32;
  const int64_t E = 1, H = 64, I = 32;
  add(bytes_u8("gate_up_proj_blocks", {E, 2 * I, H / 32, 16}, [](int64_t i) { return uint8_t(i * 7); }));
  add(bytes_u8("gate_up_proj_scales", {E, 2 * I, H / 32}, [](int64_t i) { return uint8_t(100 + i); }));
  add(counting_f32("gate_up_proj_bias", {E, 2 * I}));
  add(bytes_u8("down_proj_blocks", {E, H, I / 32, 16}, [](int64_t i) { return uint8_t(i * 3); }));
  add(bytes_u8("down_proj_scales", {E, H, I / 32}, [](int64_t i) { return uint8_t(i); }));
  add(counting_f32("down_proj_bias", {E, H}));
  auto stacks = plan();
  ASSERT_TRUE(stacks.is_ok()) << stacks.status().to_string();
  for (const auto& t : *stacks) EXPECT_EQ(t.dtype, t.name.ends_with(".bias") ? DType::kF32 : DType::kMXFP4) << t.name;
  const auto up = filled(*stacks, "blk.3.ffn_up_exps.weight", {H, I, E});
  ASSERT_EQ(up.size(), size_t(I * 2 * 17));
  // Up's row 5 is the source's row 11; its second block that row's group 1.
  const uint8_t* block = up.data() + (5 * 2 + 1) * 17;
  EXPECT_EQ(block[0], uint8_t(100 + 11 * 2 + 1));
  uint8_t want[16], source[16];
  for (int k = 0; k < 16; ++k) source[k] = uint8_t(((11 * 2 + 1) * 16 + k) * 7);
  repack_mxfp4_nibbles(source, want);
  EXPECT_EQ(std::memcmp(block + 1, want, 16), 0);
  const auto down = filled(*stacks, "blk.3.ffn_down_exps.weight", {I, H, E});
  EXPECT_EQ(down[17 * 9], 9);  // row 9's exponent
}

TEST_F(GptOssExpertsTest, RefusesMissingDoubledAndMisshapenParts) {
  const int64_t E = 2, H = 3, I = 2;
  add(counting_f32("gate_up_proj", {E, H, 2 * I}));
  add(counting_f32("down_proj", {E, I, H}));
  add(counting_f32("down_proj_bias", {E, H}));
  auto missing = plan();
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().to_string().find("model.layers.3.mlp.experts.gate_up_proj_bias is missing"),
            std::string::npos)
      << missing.status().to_string();
  add(counting_f32("gate_up_proj_bias", {E, 2 * I + 1}));
  auto misshapen = plan();
  ASSERT_FALSE(misshapen.is_ok());
  EXPECT_NE(misshapen.status().to_string().find("[2, 5], but config.json makes it [2, 4]"), std::string::npos)
      << misshapen.status().to_string();
  add(counting_f32("gate_up_proj_bias", {E, 2 * I}));
  ASSERT_TRUE(plan().is_ok());
  add(bytes_u8("down_proj_scales", {E, H, 1}, [](int64_t) { return uint8_t(127); }));
  auto doubled = plan();
  ASSERT_FALSE(doubled.is_ok());
  EXPECT_NE(doubled.status().to_string().find("both as floats and as MXFP4"), std::string::npos);
  // MXFP4 rows must be whole blocks; and blocks must be bytes.
  parts_.erase("down_proj");
  add(bytes_u8("down_proj_blocks", {E, H, 1, 16}, [](int64_t) { return uint8_t(0); }));
  auto partial_block = plan();
  ASSERT_FALSE(partial_block.is_ok());
  EXPECT_NE(partial_block.status().to_string().find("not a multiple of 32"), std::string::npos);
  config_.n_ff = config_.n_ff_expert = 32;
  parts_.clear();
  add(counting_f32("gate_up_proj", {E, H, 64}));
  add(counting_f32("gate_up_proj_bias", {E, 64}));
  add(counting_f32("down_proj_bias", {E, H}));
  add(counting_f32("down_proj_blocks", {E, H, 1, 16}));
  add(bytes_u8("down_proj_scales", {E, H, 1}, [](int64_t) { return uint8_t(127); }));
  auto floats_as_blocks = plan();
  ASSERT_FALSE(floats_as_blocks.is_ok());
  EXPECT_NE(floats_as_blocks.status().to_string().find("is F32, not U8"), std::string::npos);
}

nlohmann::json gpt_oss_config() {
  return nlohmann::json::parse(R"({"model_type": "gpt_oss", "num_hidden_layers": 4, "hidden_size": 64,
      "intermediate_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "vocab_size": 320, "max_position_embeddings": 4096, "num_local_experts": 4, "num_experts_per_tok": 2,
      "sliding_window": 128, "swiglu_limit": 7.0, "attention_bias": true,
      "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
      "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                       "original_max_position_embeddings": 4096, "truncate": false},
      "rope_theta": 150000, "quantization_config": {"quant_method": "mxfp4"}})");
}

TEST(GptOssConfigTest, ReadsThePublishedShape) {
  auto c = parse_hf_config(gpt_oss_config());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->gguf_arch, "gpt-oss");
  EXPECT_EQ(c->n_expert, 4);
  EXPECT_EQ(c->n_ff_expert, 32);
  EXPECT_EQ(c->sliding_window, 128);
  EXPECT_EQ(c->rope_scaling, "yarn");
  EXPECT_EQ(c->rope_original_context, 4096);
  EXPECT_EQ(c->yarn_beta_fast, 32.0);
  EXPECT_EQ(c->yarn_beta_slow, 1.0);
}

// What config.json leaves out (or sets null) takes GptOssConfig's default,
// as transformers and llama.cpp's converter (through AutoConfig) see it.
TEST(GptOssConfigTest, KeysLeftOutTakeTransformersDefaults) {
  nlohmann::json config = gpt_oss_config();
  for (const char* key : {"rope_scaling", "rope_theta", "head_dim", "sliding_window"}) config.erase(key);
  config["rms_norm_eps"] = nullptr;
  auto c = parse_hf_config(config);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->rope_theta, 150000.0);
  EXPECT_EQ(c->rope_scaling, "yarn");
  EXPECT_EQ(c->rope_factor, 32.0);
  EXPECT_EQ(c->rope_original_context, 4096);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->rms_norm_eps, 1e-5);
  EXPECT_EQ(c->sliding_window, 128);
  // transformers 5's rope_parameters without its base: the default base.
  config["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 16.0}, {"original_max_position_embeddings", 2048}};
  c = parse_hf_config(config);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->rope_theta, 150000.0);
  EXPECT_EQ(c->rope_factor, 16.0);
}

TEST(GptOssConfigTest, RefusesWhatItsFilesCannotSay) {
  auto refused = [](const char* key, const nlohmann::json& value, const std::string& expect) {
    nlohmann::json config = gpt_oss_config();
    config[key] = value;
    auto c = parse_hf_config(config);
    ASSERT_FALSE(c.is_ok()) << key;
    EXPECT_NE(c.status().to_string().find(expect), std::string::npos) << c.status().to_string();
  };
  refused("swiglu_limit", 8.0, "swiglu_limit is 8.0");
  refused("swiglu_alpha", 1.0, "swiglu_alpha");
  refused("attention_bias", false, "without attention biases");
  refused("layer_types", {"full_attention", "sliding_attention", "full_attention", "sliding_attention"}, "layer_types");
  refused("quantization_config", {{"quant_method", "fp8"}}, "quant_method fp8");
  refused("rope_scaling", {{"rope_type", "yarn"}, {"factor", 32.0}, {"attention_factor", 2.0}}, "attention_factor");
  refused("rope_scaling", {{"rope_type", "yarn"}, {"original_max_position_embeddings", 4096}}, "without its factor");
  refused("swiglu_limit", nullptr, "swiglu_limit is null");
  nlohmann::json qwen = {{"model_type", "qwen3"},
                         {"num_hidden_layers", 2},
                         {"hidden_size", 64},
                         {"intermediate_size", 96},
                         {"num_attention_heads", 4},
                         {"vocab_size", 100},
                         {"max_position_embeddings", 128},
                         {"quantization_config", {{"quant_method", "mxfp4"}}}};
  EXPECT_FALSE(parse_hf_config(qwen).is_ok());
  qwen.erase("quantization_config");
  EXPECT_TRUE(parse_hf_config(qwen).is_ok());
}

// The golden gptoss_mxfp4 checkpoint copied with one tensor changed by `edit`
// (on each tensor's name, dtype and shape; return false to drop it).
struct TensorEntry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

std::string damaged_checkpoint(const std::string& tag, const std::function<bool(TensorEntry&)>& edit) {
  namespace fs = std::filesystem;
  const fs::path from = "tests/golden/convert/gptoss_mxfp4";
  const fs::path to = fs::temp_directory_path() / ("omnibus_gptoss_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(to);
  fs::create_directories(to);
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"}) fs::copy_file(from / f, to / f);
  auto file = SafetensorsFile::open((from / "model.safetensors").string());
  EXPECT_TRUE(file.is_ok()) << file.status().to_string();
  nlohmann::json header = nlohmann::json::object();
  std::vector<uint8_t> data;
  for (const auto& t : (*file)->tensors()) {
    TensorEntry e{t.name, safetensors_dtype_name(t.dtype), t.shape, {t.bytes.begin(), t.bytes.end()}};
    if (!edit(e)) continue;
    header[e.name] = {
        {"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data.insert(data.end(), e.bytes.begin(), e.bytes.end());
  }
  const std::string text = header.dump();
  std::ofstream out(to / "model.safetensors", std::ios::binary);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << text;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return to.string();
}

std::string plan_error(const std::string& dir) {
  auto conversion = HfConversion::plan(dir, {});
  std::filesystem::remove_all(dir);
  return conversion.is_ok() ? std::string("converted") : conversion.status().to_string();
}

TEST(GptOssConversionTest, RefusesDamagedCheckpointsByName) {
  EXPECT_EQ(plan_error(damaged_checkpoint("intact", [](TensorEntry&) { return true; })), "converted");
  const std::string no_scales = plan_error(damaged_checkpoint(
      "no_scales", [](TensorEntry& e) { return e.name != "model.layers.2.mlp.experts.gate_up_proj_scales"; }));
  EXPECT_NE(no_scales.find("model.layers.2.mlp.experts.gate_up_proj_scales is missing"), std::string::npos)
      << no_scales;
  const std::string no_experts = plan_error(damaged_checkpoint(
      "no_experts", [](TensorEntry& e) { return e.name.find("layers.1.mlp.experts.") == std::string::npos; }));
  EXPECT_NE(no_experts.find("model.layers.1.mlp.experts."), std::string::npos) << no_experts;
  // Bytes anywhere else: refused, not read as floats.
  const std::string bytes_elsewhere = plan_error(damaged_checkpoint("bytes_elsewhere", [](TensorEntry& e) {
    if (e.name == "model.layers.0.self_attn.sinks") {
      e.dtype = "U8";
      e.shape = {static_cast<int64_t>(e.bytes.size())};
    }
    return true;
  }));
  EXPECT_NE(bytes_elsewhere.find("'model.layers.0.self_attn.sinks' holds bytes (U8)"), std::string::npos)
      << bytes_elsewhere;
  // Every tensor a gpt-oss layer needs, in the shape the config gives it.
  const std::string no_sinks = plan_error(
      damaged_checkpoint("no_sinks", [](TensorEntry& e) { return e.name != "model.layers.3.self_attn.sinks"; }));
  EXPECT_NE(no_sinks.find("no blk.3.attn_sinks.weight"), std::string::npos) << no_sinks;
  const std::string column_sinks = plan_error(damaged_checkpoint("column_sinks", [](TensorEntry& e) {
    if (e.name == "model.layers.0.self_attn.sinks") e.shape.push_back(1);
    return true;
  }));
  EXPECT_NE(column_sinks.find("blk.0.attn_sinks.weight is [1, 4]"), std::string::npos) << column_sinks;
  const std::string no_router_bias = plan_error(
      damaged_checkpoint("no_router_bias", [](TensorEntry& e) { return e.name != "model.layers.1.mlp.router.bias"; }));
  EXPECT_NE(no_router_bias.find("no blk.1.ffn_gate_inp.bias"), std::string::npos) << no_router_bias;
  const std::string no_head =
      plan_error(damaged_checkpoint("no_head", [](TensorEntry& e) { return e.name != "lm_head.weight"; }));
  EXPECT_NE(no_head.find("no lm_head.weight"), std::string::npos) << no_head;
  const std::string past_last_layer = plan_error(damaged_checkpoint("past_last_layer", [](TensorEntry& e) {
    if (e.name == "model.layers.3.self_attn.sinks") e.name = "model.layers.9.self_attn.sinks";
    return true;
  }));
  EXPECT_NE(past_last_layer.find("is of layer 9, but config.json has 4 layers"), std::string::npos) << past_last_layer;
}

}  // namespace
}  // namespace omnibus
