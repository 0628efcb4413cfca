#include "kernels/rope.h"

#include <algorithm>
#include <cmath>

namespace omnibus {

void rope_angles(const RopeParams& p, int64_t pos, float* cos_out, float* sin_out) {
  const int pairs = p.rot_dims / 2;
  for (int i = 0; i < pairs; ++i) {
    double inv_freq = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.rot_dims);
    if (!p.freq_factors.empty()) inv_freq /= p.freq_factors[i];
    const double plain = static_cast<double>(pos) * inv_freq;
    double theta = plain * p.freq_scale;
    if (p.yarn) {
      const double y = (i - p.yarn_low) / std::max(0.001, static_cast<double>(p.yarn_high - p.yarn_low));
      const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));
      theta = theta * (1.0 - ramp) + plain * ramp;
    }
    cos_out[i] = static_cast<float>(std::cos(theta) * p.attn_factor);
    sin_out[i] = static_cast<float>(std::sin(theta) * p.attn_factor);
  }
}

void set_yarn_correction_range(RopeParams& p, int64_t original_context, double beta_fast, double beta_slow) {
  // The pair whose wavelength fits the original context `rotations` times.
  auto pair_of = [&](double rotations) {
    return p.rot_dims * std::log(static_cast<double>(original_context) / (rotations * 2 * M_PI)) /
           (2 * std::log(static_cast<double>(p.freq_base)));
  };
  p.yarn_low = static_cast<float>(std::max(0.0, std::floor(pair_of(beta_fast))));
  p.yarn_high = static_cast<float>(std::min(static_cast<double>(p.rot_dims - 1), std::ceil(pair_of(beta_slow))));
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
