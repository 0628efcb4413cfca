#include "model/block_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace omnibus {
namespace {

// "attn_norm qkv rope ..." for compact expectations.
std::string stage_list(const BlockSpec& block) {
  std::string s;
  for (BlockStage stage : block.stages) s += std::string(s.empty() ? "" : " ") + block_stage_name(stage);
  return s;
}

ModelConfig config_of(std::string_view architecture) {
  ModelConfig c;
  c.spec = find_architecture(architecture);
  c.n_layer = 6;
  c.rope.freq_base = 10000.0f;
  if (c.spec != nullptr && c.spec->window_period > 0) {
    c.sliding_window = 512;
    c.window_period = c.spec->window_period;
    c.window_rope.freq_base = c.spec->window_rope_base;
  }
  return c;
}

TEST(BlockSpecTest, LlamaRunsThePlainBlock) {
  const ModelConfig c = config_of("llama");
  ASSERT_NE(c.spec, nullptr);
  const BlockSpec block = resolve_block(c, 0, false);
  EXPECT_EQ(stage_list(block),
            "attn_norm qkv rope kv_store attention attn_output attn_residual ffn_norm gate_up activation down "
            "ffn_residual");
  EXPECT_EQ(block.activation, FfnActivation::kSilu);
  EXPECT_FALSE(block.window);
  EXPECT_EQ(block.rope, &c.rope);
}

TEST(BlockSpecTest, Qwen2AddsTheBiasesAfterTheProjection) {
  const ModelConfig c = config_of("qwen2");
  ASSERT_NE(c.spec, nullptr);
  EXPECT_EQ(stage_list(resolve_block(c, 3, false)),
            "attn_norm qkv qkv_bias rope kv_store attention attn_output attn_residual ffn_norm gate_up activation "
            "down ffn_residual");
}

TEST(BlockSpecTest, Qwen3NormsEachQAndKHeadBeforeRope) {
  const ModelConfig c = config_of("qwen3");
  ASSERT_NE(c.spec, nullptr);
  const BlockSpec block = resolve_block(c, 2, false);
  EXPECT_EQ(stage_list(block),
            "attn_norm qkv qk_norm rope kv_store attention attn_output attn_residual ffn_norm gate_up activation "
            "down ffn_residual");
  EXPECT_EQ(block.activation, FfnActivation::kSilu);
  EXPECT_FALSE(block.window);
}

TEST(BlockSpecTest, Qwen3MoeRunsExpertsInPlaceOfTheMlp) {
  const ModelConfig c = config_of("qwen3moe");
  ASSERT_NE(c.spec, nullptr);
  EXPECT_EQ(stage_list(resolve_block(c, 0, false)),
            "attn_norm qkv qk_norm rope kv_store attention attn_output attn_residual ffn_norm moe ffn_residual");
}

TEST(BlockSpecTest, Gemma3HasQkNormsPostNormsGeluAndWindowLayers) {
  const ModelConfig c = config_of("gemma3");
  ASSERT_NE(c.spec, nullptr);
  ASSERT_GT(c.window_period, 1);
  const BlockSpec window = resolve_block(c, 0, false);
  EXPECT_EQ(stage_list(window),
            "attn_norm qkv qk_norm rope kv_store attention attn_output post_attn_norm attn_residual ffn_norm "
            "gate_up activation down post_ffn_norm ffn_residual");
  EXPECT_EQ(window.activation, FfnActivation::kGeluTanh);
  EXPECT_TRUE(window.window);
  EXPECT_EQ(window.rope, &c.window_rope);
  // Every window_period-th layer sees every position, with the model's base.
  const BlockSpec global = resolve_block(c, c.window_period - 1, false);
  EXPECT_FALSE(global.window);
  EXPECT_EQ(global.rope, &c.rope);
}

TEST(BlockSpecTest, ARotatedCacheTurnsQkvAndTheOutputBack) {
  const ModelConfig c = config_of("llama");
  EXPECT_EQ(stage_list(resolve_block(c, 0, true)),
            "attn_norm qkv rope rotate_qkv kv_store attention rotate_output attn_output attn_residual ffn_norm "
            "gate_up activation down ffn_residual");
}

TEST(BlockSpecTest, HeadStagesAreThoseBetweenTheProjectionAndAttention) {
  const ModelConfig c = config_of("gemma3");
  const BlockSpec block = resolve_block(c, 0, true);
  std::string heads;
  for (BlockStage stage : block.stages)
    if (is_head_stage(stage)) heads += std::string(heads.empty() ? "" : " ") + block_stage_name(stage);
  EXPECT_EQ(heads, "qk_norm rope rotate_qkv kv_store");
}

}  // namespace
}  // namespace omnibus
