#include "model/architecture.h"

#include <array>

namespace omnibus {
namespace {

constexpr std::array<ArchitectureSpec, 2> kArchitectures = {{
    // SmolLM2, Llama 2/3.x, TinyLlama, Mistral (no window). The GGUF
    // converter permutes Q/K rows so adjacent-pair RoPE is right.
    {"llama", RopeStyle::kNormal, false},
    // Qwen2 and 2.5: biases on q/k/v, NeoX-style RoPE.
    {"qwen2", RopeStyle::kNeox, true},
}};

}  // namespace

const ArchitectureSpec* find_architecture(std::string_view name) {
  for (const auto& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

std::string supported_architectures() {
  std::string s;
  for (const auto& a : kArchitectures) {
    if (!s.empty()) s += ", ";
    s += a.name;
  }
  return s;
}

}  // namespace omnibus
