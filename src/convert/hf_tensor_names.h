// Hugging Face tensor names to GGUF's (llama.cpp's gguf-py tensor map, for
// the architectures hf_config.h converts).
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "convert/hf_config.h"

namespace omnibus {

struct GgufTensorName {
  std::string name;       // "blk.3.attn_q.weight"
  int layer = -1;         // -1 outside the blocks
  int permute_heads = 0;  // > 0: permute_rope_rows with this many heads (llama's Q and K)
  // >= 0: this expert's matrix, one slice of the name's [experts, rows,
  // columns] tensor (Hugging Face keeps one tensor per expert, GGUF one per
  // layer).
  int expert = -1;
  bool f32 = false;  // kept in F32 whatever the output type (a router, as llama.cpp keeps them)
  // Added to every element (in the source's precision, as llama.cpp adds it
  // to the torch tensor): Gemma's norms scale by 1 + weight, GGUF's by weight.
  float shift = 0.0f;
  // gpt-oss: which of the layer's fused expert tensors this is
  // ("gate_up_proj_blocks", ...; gpt_oss_experts.h), `name` left empty: the
  // layer's parts together make its expert stacks.
  std::string expert_part = {};
};

// nullopt for tensors the GGUF file leaves out (lm_head when the
// embeddings are tied, rotary_emb.inv_freq caches); an error for a name
// the architecture does not have.
Result<std::optional<GgufTensorName>> gguf_tensor_name(const std::string& hf_name, const HfModelConfig& c);

}  // namespace omnibus
