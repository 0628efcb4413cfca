// Load-time errors a user can hit with a wrong or damaged model file: each
// must be a clear Status, never a crash.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/rope.h"
#include "tiny_model.h"

namespace omnibus::testing {
namespace {

TEST(ModelLoadTest, UnknownArchitectureListsSupportedOnes) {
  TinyModelSpec spec;
  spec.architecture = "mamba";
  auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_FALSE(model.is_ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(model.status().message().find("'mamba'"), std::string::npos) << model.status().message();
  EXPECT_NE(model.status().message().find("llama, qwen2, qwen3, qwen3moe, qwen2moe, phi3, gemma3"), std::string::npos)
      << model.status().message();
}

// A mixture-of-experts file: the expert tensors are 3-D, one slice per
// expert; a missing one is named, and expert_count must be there.
TEST(ModelLoadTest, MoeExpertsAreBoundAndAMissingOneIsNamed) {
  TinyModelSpec spec;
  spec.architecture = "qwen3moe";
  spec.n_expert = 4;
  spec.n_expert_used = 2;
  spec.n_ff_expert = 32;
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = try_load_tiny_model(bytes);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_expert, 4);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_expert, 32);
  const LayerWeights& l = (*model)->weights().layers[0];
  ASSERT_EQ(l.expert_down.size(), 4u);
  EXPECT_EQ(l.expert_down[3].rows, spec.n_embd);
  EXPECT_EQ(l.expert_down[3].cols, 32);
  EXPECT_EQ(l.router.rows, 4);
  spec.omit_tensor = "blk.1.ffn_up_exps.weight";
  auto missing = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("blk.1.ffn_up_exps.weight"), std::string::npos)
      << missing.status().message();
}

// phi3: fused q/k/v and gate/up tensors bound as views of their rows;
// longrope's short factors and attention factor in the RoPE parameters,
// the long factors for runs of a longer context than the original one,
// which is the default.
TEST(ModelLoadTest, Phi3FusedTensorsAndLongrope) {
  TinyModelSpec spec;
  spec.architecture = "phi3";
  spec.fused_qkv = true;
  spec.longrope = true;
  spec.context_length = 256;  // original context 64
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = try_load_tiny_model(bytes);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  const LayerWeights& l = (*model)->weights().layers[0];
  EXPECT_EQ(l.wk.rows, c.kv_dim());
  EXPECT_EQ(l.w_up.rows, c.n_ff);
  EXPECT_FLOAT_EQ(c.rope.attn_factor, 1.19f);
  EXPECT_EQ(c.rope.freq_factors.size(), static_cast<size_t>(c.rope.rot_dims / 2));
  EXPECT_EQ(c.default_context(), 64);
  ASSERT_EQ(c.rope_long_factors.size(), c.rope.freq_factors.size());
  EXPECT_NE(c.rope_long_factors, c.rope.freq_factors);
  EXPECT_EQ(c.rope_for_context(64).freq_factors, c.rope.freq_factors);
  EXPECT_EQ(c.rope_for_context(65).freq_factors, c.rope_long_factors);
  EXPECT_FLOAT_EQ(c.rope_for_context(65).attn_factor, 1.19f);
}

// YaRN: the scale, the correction range (ggml_rope_yarn_corr_dims with
// beta 32 and 1 over the original context) and the magnitude; window
// layers (none here) would turn unscaled.
TEST(ModelLoadTest, YarnRopeScaling) {
  TinyModelSpec spec;
  spec.yarn_factor = 4;
  spec.context_length = 4096;  // original 1,024
  spec.rope_base = 1e6f;
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = try_load_tiny_model(bytes);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const RopeParams& r = (*model)->config().rope;
  EXPECT_TRUE(r.yarn);
  EXPECT_FLOAT_EQ(r.freq_scale, 0.25f);
  EXPECT_FLOAT_EQ(r.attn_factor, 1.0f + 0.1f * std::log(4.0f));
  // 16 dims: pair i's wavelength 2 pi 1e6^(i/8) fits the 1,024 positions
  // 32 times below i = 0.94 (low: floor, 0) and once below i = 2.95
  // (high: ceil, 3).
  EXPECT_EQ(r.yarn_low, 0.0f);
  EXPECT_EQ(r.yarn_high, 3.0f);
  // At position 0 nothing turns; the magnitude scales cos.
  std::vector<float> cos(r.rot_dims / 2), sin(r.rot_dims / 2);
  rope_angles(r, 0, cos.data(), sin.data());
  EXPECT_FLOAT_EQ(cos[0], r.attn_factor);
  EXPECT_EQ(sin[0], 0.0f);
}

// The correction range from the file's betas where it has them (gpt-oss's
// converter writes 32 and 1; here 4 and 0.25): 16 dims, base 1e6, 1,024
// positions fit pair i's wavelength 4 times below i = 2.15 (low: floor, 2)
// and a quarter time below i = 3.75 (high: ceil, 4).
TEST(ModelLoadTest, YarnBetasFromTheFile) {
  TinyModelSpec spec;
  spec.yarn_factor = 4;
  spec.context_length = 4096;
  spec.rope_base = 1e6f;
  spec.yarn_beta_fast = 4;
  spec.yarn_beta_slow = 0.25f;
  auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().rope.yarn_low, 2.0f);
  EXPECT_EQ((*model)->config().rope.yarn_high, 4.0f);
  spec.yarn_beta_fast = -1;
  EXPECT_FALSE(try_load_tiny_model(make_tiny_model_bytes(spec)).is_ok());
}

TEST(ModelLoadTest, MissingTensorIsNamed) {
  TinyModelSpec spec;
  spec.omit_tensor = "blk.1.ffn_up.weight";
  auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_FALSE(model.is_ok());
  EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
  EXPECT_NE(model.status().message().find("blk.1.ffn_up.weight"), std::string::npos) << model.status().message();
}

// A tensor the architecture would not use (llama.cpp's llama takes q/k/v
// biases; omnibus's does not yet) is refused by name, not ignored.
TEST(ModelLoadTest, TensorTheArchitectureDoesNotUseIsRefused) {
  TinyModelSpec spec;
  spec.extra_tensor = "blk.0.attn_output.bias";
  auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_FALSE(model.is_ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(model.status().message().find("blk.0.attn_output.bias"), std::string::npos) << model.status().message();
}

TEST(ModelLoadTest, MissingQwen2BiasIsNamed) {
  TinyModelSpec spec;
  spec.architecture = "qwen2";
  spec.omit_tensor = "blk.0.attn_k.bias";
  auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_FALSE(model.is_ok());
  EXPECT_NE(model.status().message().find("blk.0.attn_k.bias"), std::string::npos) << model.status().message();
}

TEST(ModelLoadTest, MissingGemma3NormIsNamed) {
  TinyModelSpec spec;
  spec.architecture = "gemma3";
  spec.omit_tensor = "blk.1.post_ffw_norm.weight";
  auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_FALSE(model.is_ok());
  EXPECT_NE(model.status().message().find("blk.1.post_ffw_norm.weight"), std::string::npos) << model.status().message();
}

// Gemma 3's window span is required (a model without it would silently
// attend globally where it was trained on windows).
TEST(ModelLoadTest, Gemma3WithoutItsSlidingWindowIsRejected) {
  TinyModelSpec spec;
  spec.architecture = "gemma3";
  spec.sliding_window = 0;  // the writer leaves the key out
  auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
  ASSERT_FALSE(model.is_ok());
  EXPECT_NE(model.status().message().find("gemma3.attention.sliding_window"), std::string::npos)
      << model.status().message();
}

TEST(ModelLoadTest, SeparateOutputAndTiedOutputBothLoad) {
  for (bool tied : {true, false}) {
    TinyModelSpec spec;
    spec.tied_output = tied;
    auto model = try_load_tiny_model(make_tiny_model_bytes(spec));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_EQ((*model)->weights().tied_output, tied);
  }
}

}  // namespace
}  // namespace omnibus::testing
