// Rotary position embedding. Two pairings exist in the wild: kNormal rotates
// adjacent pairs (x[2i], x[2i+1]) (llama GGUFs, whose Q/K rows the converter
// permuted for it); kNeox rotates (x[i], x[i + rot/2]) (Qwen2, Gemma, ...).
#pragma once

#include <cstdint>
#include <vector>

namespace omnibus {

enum class RopeStyle { kNormal, kNeox };

struct RopeParams {
  RopeStyle style = RopeStyle::kNormal;
  int rot_dims = 0;            // how many leading dims of each head rotate (even)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;     // linear scaling: 1 / factor
  // Optional per-pair divisors of the frequency (llama 3.1's rope_freqs
  // tensor); empty when the model has none. Size rot_dims / 2.
  std::vector<float> freq_factors;
  // Scales cos and sin (so the rotated dims of q and k): longrope's
  // attention factor (phi3's rope.scaling.attn_factor); 1 for most models.
  float attn_factor = 1.0f;
};

// cos and sin of each rotated pair's angle at `pos` (rot_dims / 2 each).
void rope_angles(const RopeParams& params, int64_t pos, float* cos_out, float* sin_out);

// Rotates each of n_heads heads (head_dim apart) of x in place.
void apply_rope(const RopeParams& params, const float* cos, const float* sin, float* x, int n_heads,
                int head_dim);

}  // namespace omnibus
