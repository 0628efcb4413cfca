// The architectures we run and how each differs from the shared llama-style
// block (shared/STYLE.md: blocks are written once; an architecture states
// only its differences).
#pragma once

#include <string>
#include <string_view>

#include "kernels/rope.h"

namespace omnibus {

struct ArchitectureSpec {
  std::string_view name;     // general.architecture
  RopeStyle rope_style;      // which pairs RoPE rotates
  bool qkv_bias;             // attn_q/k/v carry a bias tensor
};

// nullptr when the architecture is not supported.
const ArchitectureSpec* find_architecture(std::string_view name);
// "llama, qwen2"
std::string supported_architectures();

}  // namespace omnibus
