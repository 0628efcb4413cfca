#include "kernels/rope.h"

#include <cmath>

namespace omnibus {

void rope_angles(const RopeParams& p, int64_t pos, float* cos_out, float* sin_out) {
  const int pairs = p.rot_dims / 2;
  for (int i = 0; i < pairs; ++i) {
    double inv_freq = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.rot_dims);
    if (!p.freq_factors.empty()) inv_freq /= p.freq_factors[i];
    const double theta = static_cast<double>(pos) * p.freq_scale * inv_freq;
    cos_out[i] = static_cast<float>(std::cos(theta) * p.attn_factor);
    sin_out[i] = static_cast<float>(std::sin(theta) * p.attn_factor);
  }
}

void apply_rope(const RopeParams& p, const float* cos, const float* sin, float* x, int n_heads, int head_dim) {
  const int pairs = p.rot_dims / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* head = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < pairs; ++i) {
      const int a = p.style == RopeStyle::kNormal ? 2 * i : i;
      const int b = p.style == RopeStyle::kNormal ? 2 * i + 1 : i + pairs;
      const float x0 = head[a], x1 = head[b];
      head[a] = x0 * cos[i] - x1 * sin[i];
      head[b] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

}  // namespace omnibus
