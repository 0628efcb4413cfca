#include "kernels/hadamard.h"

#include <cmath>

#include "kernels/kernel_table.h"

namespace omnibus {

int hadamard_key_block(int head_dim) {
  if (head_dim <= 0 || head_dim % 64 != 0) return 0;
  int n = 64;
  while (head_dim % (2 * n) == 0) n *= 2;
  return n;
}

int hadamard_value_block(int head_dim) { return head_dim > 0 && head_dim % 64 == 0 ? 64 : 0; }

void hadamard_blocks(const KernelTable& table, float* x, int64_t count, int n) {
  if (n % table.hadamard_lanes == 0) return table.hadamard_blocks(x, count, n);
  ref::hadamard_blocks(x, count, n);
}

void hadamard_blocks(float* x, int64_t count, int n) { hadamard_blocks(kernels(), x, count, n); }

namespace ref {

void hadamard_blocks(float* x, int64_t count, int n) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t b = 0; b < count; ++b) {
    float* v = x + b * n;
    // Stage s pairs element i with i + s inside each 2s-block: (a + b, a - b).
    for (int s = 1; s < n; s *= 2)
      for (int i0 = 0; i0 < n; i0 += 2 * s)
        for (int i = i0; i < i0 + s; ++i) {
          const float a = v[i], c = v[i + s];
          v[i] = a + c;
          v[i + s] = a - c;
        }
    for (int i = 0; i < n; ++i) v[i] *= scale;
  }
}

}  // namespace ref

}  // namespace omnibus
