// The small ops of a transformer layer on the device: RMSNorm, residual and
// bias adds, the gated activations, RoPE and the embedding lookup. One
// thread per element (one CTA per row for RMSNorm); each follows its CPU
// reference's formula and order of operations (kernels/ops_ref.cpp,
// kernels/rope.cpp), so results differ from it only where the device's
// expf / tanhf round differently or a sum is added up in another order.
#include <cmath>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_math.cuh"

namespace omnibus::cuda {
namespace {

constexpr int kThreads = 256;

unsigned ctas_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// The mean of squares in double, as the reference does (the one place
// precision is cheap); the scaling in float, in the reference's order.
__global__ void rms_norm_kernel(const float* x, const int32_t* rows, const float* weight, float* y, int64_t n,
                                float eps) {
  __shared__ double partial[kThreads];
  const int64_t r = blockIdx.x;
  const float* xr = x + (rows != nullptr ? rows[r] : r) * n;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) sum += static_cast<double>(xr[i]) * xr[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float scale = static_cast<float>(1.0 / sqrt(partial[0] / static_cast<double>(n) + eps));
  float* yr = y + r * n;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) yr[i] = __fmul_rn(__fmul_rn(xr[i], scale), weight[i]);
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void add_bias_kernel(float* x, const float* bias, int64_t total, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < total) x[i] += bias[i % n];
}

__global__ void gated_kernel(float* gate, const float* up, int64_t n, bool gelu) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) gate[i] = gelu ? gelu_gate(gate[i], up[i]) : silu_gate(gate[i], up[i]);
}

// One thread per embedding element; quantized rows decode the element's
// unit (one of the 32 threads that share it would do, but this runs once
// per token and step).
template <int kType>
__global__ void embed_kernel(DeviceMatrix e, const int32_t* tokens, int64_t n_rows, float scale, float* x) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n_rows * e.cols) return;
  const int64_t r = i / e.cols, k = i % e.cols;
  const uint8_t* row = e.data + static_cast<int64_t>(tokens[r]) * e.row_bytes;
  float value;
  if constexpr (kType == kF32 || kType == kF16 || kType == kBF16) {
    value = float_weight<kType>(row, k);
  } else {
    value = unit_value(decode_unit<kType>(row, k / 32), static_cast<int>(k % 32));
  }
  // As the CPU: the row first, then (Gemma) times sqrt(n_embd).
  x[i] = scale == 1.0f ? value : __fmul_rn(value, scale);
}

// One thread per rotated pair. The products and sums rounded one by one as
// the CPU's scalar apply_rope rounds them (no fused multiply-add).
__global__ void rope_kernel(float* x, int64_t n_rows, int n_heads, int head_dim, int pairs, bool neox,
                            const int32_t* positions, const float* cos_table, const float* sin_table) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n_rows * n_heads * pairs) return;
  const int pair = static_cast<int>(i % pairs);
  const int64_t head = i / pairs;  // row * n_heads + h
  const int64_t r = head / n_heads;
  float* h = x + head * head_dim;
  const int a = neox ? pair : 2 * pair;
  const int b = neox ? pair + pairs : 2 * pair + 1;
  const int64_t angle = static_cast<int64_t>(positions[r]) * pairs + pair;
  const float c = cos_table[angle], s = sin_table[angle];
  const float x0 = h[a], x1 = h[b];
  h[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
  h[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

template <int kType>
void launch_embed(const DeviceMatrix& e, const int32_t* tokens, int64_t n_rows, float scale, float* x,
                  cudaStream_t stream) {
  embed_kernel<kType><<<ctas_for(n_rows * e.cols), kThreads, 0, stream>>>(e, tokens, n_rows, scale, x);
}

}  // namespace

void rms_norm(const float* x, const int32_t* rows, const float* weight, float* y, int64_t n_rows, int64_t n, float eps,
              cudaStream_t stream) {
  if (n_rows == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, rows, weight, y, n, eps);
}

void add(float* x, const float* y, int64_t n, cudaStream_t stream) {
  if (n > 0) add_kernel<<<ctas_for(n), kThreads, 0, stream>>>(x, y, n);
}

void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n, cudaStream_t stream) {
  if (n_rows * n > 0) add_bias_kernel<<<ctas_for(n_rows * n), kThreads, 0, stream>>>(x, bias, n_rows * n, n);
}

void gated_activation(float* gate, const float* up, int64_t n, bool gelu, cudaStream_t stream) {
  if (n > 0) gated_kernel<<<ctas_for(n), kThreads, 0, stream>>>(gate, up, n, gelu);
}

void embed(const DeviceMatrix& e, const int32_t* tokens, int64_t n_rows, float scale, float* x, cudaStream_t stream) {
  if (n_rows == 0) return;
  switch (e.type) {
    case kF32: return launch_embed<kF32>(e, tokens, n_rows, scale, x, stream);
    case kF16: return launch_embed<kF16>(e, tokens, n_rows, scale, x, stream);
    case kBF16: return launch_embed<kBF16>(e, tokens, n_rows, scale, x, stream);
    case kQ4_0: return launch_embed<kQ4_0>(e, tokens, n_rows, scale, x, stream);
    case kQ4_1: return launch_embed<kQ4_1>(e, tokens, n_rows, scale, x, stream);
    case kQ5_0: return launch_embed<kQ5_0>(e, tokens, n_rows, scale, x, stream);
    case kQ5_1: return launch_embed<kQ5_1>(e, tokens, n_rows, scale, x, stream);
    case kQ8_0: return launch_embed<kQ8_0>(e, tokens, n_rows, scale, x, stream);
    case kQ4_K: return launch_embed<kQ4_K>(e, tokens, n_rows, scale, x, stream);
    case kQ5_K: return launch_embed<kQ5_K>(e, tokens, n_rows, scale, x, stream);
    case kQ6_K: return launch_embed<kQ6_K>(e, tokens, n_rows, scale, x, stream);
    default: return;  // refused at create_runner
  }
}

void rope(float* x, int64_t n_rows, int n_heads, int head_dim, int rot_dims, bool neox, const int32_t* positions,
          const float* cos_table, const float* sin_table, cudaStream_t stream) {
  const int pairs = rot_dims / 2;
  const int64_t n = n_rows * n_heads * pairs;
  if (n > 0)
    rope_kernel<<<ctas_for(n), kThreads, 0, stream>>>(x, n_rows, n_heads, head_dim, pairs, neox, positions, cos_table,
                                                      sin_table);
}

}  // namespace omnibus::cuda
