#include "model/block_spec.h"

namespace omnibus {

bool is_head_stage(BlockStage stage) {
  switch (stage) {
    case BlockStage::kQkvBias:
    case BlockStage::kQkNorm:
    case BlockStage::kRope:
    case BlockStage::kRotateQkv:
    case BlockStage::kKvStore: return true;
    default: return false;
  }
}

ProfileOp profile_op(BlockStage stage) {
  switch (stage) {
    case BlockStage::kAttnNorm:
    case BlockStage::kQkNorm:
    case BlockStage::kPostAttnNorm:
    case BlockStage::kFfnNorm:
    case BlockStage::kPostFfnNorm: return ProfileOp::kRmsNorm;
    case BlockStage::kQkv: return ProfileOp::kAttnQkv;
    case BlockStage::kQkvBias: return ProfileOp::kBias;
    case BlockStage::kRope:
    case BlockStage::kRotateQkv: return ProfileOp::kRope;
    case BlockStage::kKvStore: return ProfileOp::kKvStore;
    case BlockStage::kAttention:
    case BlockStage::kRotateOutput: return ProfileOp::kAttention;
    case BlockStage::kAttnOutput: return ProfileOp::kAttnOutput;
    case BlockStage::kAttnResidual:
    case BlockStage::kFfnResidual: return ProfileOp::kResidual;
    case BlockStage::kGateUp: return ProfileOp::kFfnGateUp;
    case BlockStage::kActivation: return ProfileOp::kFfnActivation;
    case BlockStage::kDown: return ProfileOp::kFfnDown;
    case BlockStage::kMoe: return ProfileOp::kMoeRouting;  // its matmuls time themselves as gate_up and down
  }
  return ProfileOp::kForward;
}

const char* block_stage_name(BlockStage stage) {
  switch (stage) {
    case BlockStage::kAttnNorm: return "attn_norm";
    case BlockStage::kQkv: return "qkv";
    case BlockStage::kQkvBias: return "qkv_bias";
    case BlockStage::kQkNorm: return "qk_norm";
    case BlockStage::kRope: return "rope";
    case BlockStage::kRotateQkv: return "rotate_qkv";
    case BlockStage::kKvStore: return "kv_store";
    case BlockStage::kAttention: return "attention";
    case BlockStage::kRotateOutput: return "rotate_output";
    case BlockStage::kAttnOutput: return "attn_output";
    case BlockStage::kPostAttnNorm: return "post_attn_norm";
    case BlockStage::kAttnResidual: return "attn_residual";
    case BlockStage::kFfnNorm: return "ffn_norm";
    case BlockStage::kGateUp: return "gate_up";
    case BlockStage::kActivation: return "activation";
    case BlockStage::kDown: return "down";
    case BlockStage::kPostFfnNorm: return "post_ffn_norm";
    case BlockStage::kFfnResidual: return "ffn_residual";
    case BlockStage::kMoe: return "moe";
  }
  return "?";
}

BlockSpec resolve_block(const ModelConfig& config, int layer, bool rotated_cache) {
  const ArchitectureSpec& arch = *config.spec;
  BlockSpec block{.stages = {},
                  .rope = &config.layer_rope(layer),
                  .window = config.layer_has_window(layer),
                  .activation = arch.ffn_activation};
  auto add = [&block](BlockStage stage) { block.stages.push_back(stage); };
  using S = BlockStage;
  add(S::kAttnNorm);
  add(S::kQkv);
  if (arch.qkv_bias) add(S::kQkvBias);
  if (arch.qk_norm) add(S::kQkNorm);
  add(S::kRope);
  // Q turns with K so the scores stay the same (kernels/hadamard.h).
  if (rotated_cache) add(S::kRotateQkv);
  add(S::kKvStore);
  add(S::kAttention);
  if (rotated_cache) add(S::kRotateOutput);
  add(S::kAttnOutput);
  if (arch.post_norms) add(S::kPostAttnNorm);
  add(S::kAttnResidual);
  add(S::kFfnNorm);
  if (arch.moe) {
    add(S::kMoe);
  } else {
    add(S::kGateUp);
    add(S::kActivation);
    add(S::kDown);
  }
  if (arch.post_norms) add(S::kPostFfnNorm);
  add(S::kFfnResidual);
  return block;
}

}  // namespace omnibus
