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
  // attention factor (phi3's rope.scaling.attn_factor), YaRN's magnitude
  // correction; 1 for most models.
  float attn_factor = 1.0f;
  // YaRN (rope.scaling.type yarn, as ggml's rope_yarn): pair i turns by
  // the interpolated angle (freq_scale x the plain one) blended toward the
  // plain one by ramp(i) = 1 - clamp((i - low) / max(0.001, high - low), 0, 1);
  // low and high are the pairs whose wavelengths fit the original context
  // beta_fast and beta_slow times. Off when yarn is false.
  bool yarn = false;
  float yarn_low = 0.0f;
  float yarn_high = 0.0f;
};

// YaRN's correction range for `rot_dims` rotated dims, a base of
// `freq_base` and an original context of `original_context` positions: the
// pairs whose wavelengths fit it beta_fast and beta_slow times (llama.cpp's
// defaults 32 and 1; GGUF's rope.scaling.yarn_beta_fast/slow): sets
// p.yarn_low and p.yarn_high as ggml_rope_yarn_corr_dims does.
void set_yarn_correction_range(RopeParams& p, int64_t original_context, double beta_fast = 32.0,
                               double beta_slow = 1.0);

// cos and sin of each rotated pair's angle at `pos` (rot_dims / 2 each).
void rope_angles(const RopeParams& params, int64_t pos, float* cos_out, float* sin_out);

// Rotates each of n_heads heads (head_dim apart) of x in place.
void apply_rope(const RopeParams& params, const float* cos, const float* sin, float* x, int n_heads,
                int head_dim);

}  // namespace omnibus
