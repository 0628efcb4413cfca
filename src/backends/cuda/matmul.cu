// Matrix products against GGUF weights on the device, and the int8 form of
// the activations they read. Simple kernels, chosen to be plainly right
// rather than fast: one warp per output row, each lane taking every 32nd
// unit of 32 weights (decoded in registers, device_math.cuh) against up to
// kRowsPerWarp activation rows, so a weight unit is read once per eight
// rows; the lanes' sums meet in a shuffle reduction. Decode steps (a few
// rows) are bound by reading the weights, which this does once; prefill
// re-reads each row of weights per eight activation rows (from L2 mostly)
// and wants a tiled tensor-core kernel later (docs/design/cuda-backend.md).
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_math.cuh"

namespace omnibus::cuda {
namespace {

constexpr int kWarpsPerCta = 4;
constexpr int kRowsPerWarp = 8;

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

// One warp per block of `block` activations (32 or 256): scale = max|x| /
// 127, codes = round(x / scale), as matmul_detail::quantize_x. The
// divisions and the product are the correctly rounded IEEE operations
// (no fast math, no contraction), so the bytes match the CPU's.
__global__ void quantize_kernel(const float* x, int64_t n_blocks, int64_t cols, int block, int8_t* q, float* scales) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= n_blocks) return;  // the whole warp leaves together
  const int64_t blocks_per_row = cols / block;
  const int64_t r = warp / blocks_per_row, b = warp % blocks_per_row;
  const float* xb = x + r * cols + b * block;
  int8_t* qb = q + r * cols + b * block;
  float amax = 0.0f;
  for (int k = lane; k < block; k += 32) amax = fmaxf(amax, fabsf(xb[k]));
  amax = warp_max(amax);
  const float scale = __fdiv_rn(amax, 127.0f);
  const float inv = scale > 0.0f ? __fdiv_rn(1.0f, scale) : 0.0f;
  for (int k = lane; k < block; k += 32) qb[k] = quantize_value(__fmul_rn(xb[k], inv));
  if (lane == 0) scales[warp] = scale;
}

struct MatmulArgs {
  const uint8_t* w;
  int64_t rows, cols, row_bytes;
  const float* x;
  const int8_t* xq;
  const float* xs;
  int64_t n_x;
  float* y;
};

// The lanes' partial sums of kRowsPerWarp outputs to y (lane 0 writes).
__device__ void finish_rows(const MatmulArgs& a, int64_t o, int64_t r0, const float* acc) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const float sum = warp_sum(acc[r]);  // every lane takes part, in or out of range
    if (lane == 0 && r0 + r < a.n_x) a.y[(r0 + r) * a.rows + o] = sum;
  }
}

template <int kType>
__global__ void matmul_quant_kernel(MatmulArgs a) {
  const int lane = threadIdx.x % 32;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + threadIdx.x / 32;
  if (o >= a.rows) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kRowsPerWarp;
  const uint8_t* row = a.w + o * a.row_bytes;
  const int64_t units = a.cols / 32;
  const int64_t x_blocks = units / units_per_block(kType);  // activation scales per row
  float acc[kRowsPerWarp] = {};
  for (int64_t u = lane; u < units; u += 32) {
    const QuantUnit unit = decode_unit<kType>(row, u);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (r0 + r >= a.n_x) continue;
      // 32 codes of row r0 + r from byte 32u: 4-byte aligned (cols is a
      // multiple of 32 and the buffer starts aligned).
      const auto* q = reinterpret_cast<const int32_t*>(a.xq + (r0 + r) * a.cols + u * 32);
      const float dx = a.xs[(r0 + r) * x_blocks + u / units_per_block(kType)];
      acc[r] += unit_dot(unit, q, dx);
    }
  }
  finish_rows(a, o, r0, acc);
}

template <int kType>
__global__ void matmul_float_kernel(MatmulArgs a) {
  const int lane = threadIdx.x % 32;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + threadIdx.x / 32;
  if (o >= a.rows) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kRowsPerWarp;
  const uint8_t* row = a.w + o * a.row_bytes;
  float acc[kRowsPerWarp] = {};
  for (int64_t k = lane; k < a.cols; k += 32) {
    const float w = float_weight<kType>(row, k);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
      if (r0 + r < a.n_x) acc[r] += w * a.x[(r0 + r) * a.cols + k];
  }
  finish_rows(a, o, r0, acc);
}

// Output rows on grid x (up to 2^31 - 1 CTAs: any vocabulary), groups of
// kRowsPerWarp activation rows on grid y, which takes at most 65535: a
// longer batch (a perplexity chunk, a large prefill) goes in launches of
// kMaxRowsPerLaunch rows, each reading its rows' part of x, xq and xs.
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxRowsPerLaunch = kMaxGridY * kRowsPerWarp;

template <int kType>
void launch(const MatmulArgs& a, cudaStream_t stream) {
  constexpr bool kFloat = kType == kF32 || kType == kF16 || kType == kBF16;
  // Activation scales per row: one per activation block (quantized types).
  const int64_t x_blocks = kFloat ? 0 : a.cols / 32 / units_per_block(kType);
  for (int64_t start = 0; start < a.n_x; start += kMaxRowsPerLaunch) {
    MatmulArgs part = a;
    part.n_x = a.n_x - start < kMaxRowsPerLaunch ? a.n_x - start : kMaxRowsPerLaunch;
    if (a.x != nullptr) part.x = a.x + start * a.cols;
    if (a.xq != nullptr) part.xq = a.xq + start * a.cols;
    if (a.xs != nullptr) part.xs = a.xs + start * x_blocks;
    part.y = a.y + start * a.rows;
    const dim3 grid(static_cast<unsigned>((a.rows + kWarpsPerCta - 1) / kWarpsPerCta),
                    static_cast<unsigned>((part.n_x + kRowsPerWarp - 1) / kRowsPerWarp));
    if constexpr (kFloat) {
      matmul_float_kernel<kType><<<grid, kWarpsPerCta * 32, 0, stream>>>(part);
    } else {
      matmul_quant_kernel<kType><<<grid, kWarpsPerCta * 32, 0, stream>>>(part);
    }
  }
}

}  // namespace

cudaError_t kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, matmul_quant_kernel<kQ8_0>);
}

bool weight_type_supported(int type) {
  switch (type) {
    case kF32:
    case kF16:
    case kBF16:
    case kQ4_0:
    case kQ4_1:
    case kQ5_0:
    case kQ5_1:
    case kQ8_0:
    case kQ4_K:
    case kQ5_K:
    case kQ6_K: return true;
    default: return false;
  }
}

int activation_block(int type) {
  if (type == kF32 || type == kF16 || type == kBF16) return 0;
  return is_k_quant(type) ? 256 : 32;
}

void quantize_activations(const float* x, int64_t n_x, int64_t cols, int block, int8_t* q, float* scales,
                          cudaStream_t stream) {
  const int64_t n_blocks = n_x * (cols / block);
  if (n_blocks == 0) return;
  constexpr int kThreads = 256;
  const int64_t ctas = (n_blocks * 32 + kThreads - 1) / kThreads;
  quantize_kernel<<<static_cast<unsigned>(ctas), kThreads, 0, stream>>>(x, n_blocks, cols, block, q, scales);
}

void matmul(const DeviceMatrix& w, const float* x, const int8_t* xq, const float* xs, int64_t n_x, float* y,
            cudaStream_t stream) {
  if (n_x == 0 || w.rows == 0) return;
  const MatmulArgs a{w.data, w.rows, w.cols, w.row_bytes, x, xq, xs, n_x, y};
  switch (w.type) {
    case kF32: return launch<kF32>(a, stream);
    case kF16: return launch<kF16>(a, stream);
    case kBF16: return launch<kBF16>(a, stream);
    case kQ4_0: return launch<kQ4_0>(a, stream);
    case kQ4_1: return launch<kQ4_1>(a, stream);
    case kQ5_0: return launch<kQ5_0>(a, stream);
    case kQ5_1: return launch<kQ5_1>(a, stream);
    case kQ8_0: return launch<kQ8_0>(a, stream);
    case kQ4_K: return launch<kQ4_K>(a, stream);
    case kQ5_K: return launch<kQ5_K>(a, stream);
    case kQ6_K: return launch<kQ6_K>(a, stream);
    default: return;  // refused at create_runner (weight_type_supported)
  }
}

}  // namespace omnibus::cuda
