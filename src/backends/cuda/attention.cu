// Paged attention over the f16 cache (KvLayout), and the store of a step's
// keys and values into it.
//
// Attention: one CTA per (row, query head) (rows on grid x, heads on y), kThreads threads walking the
// row's visible positions kThreads at a time. Each thread scores one
// position against q (K's transposed layout puts consecutive positions of
// one dimension side by side, so the threads' reads of a block coalesce),
// the tile's maximum and sum come from a CTA reduction, and the weighted
// sum of V goes one dimension per thread with an online-softmax rescale
// between tiles (as flash-decoding merges chunks). Any context length fits:
// the CTA holds one tile's weights, not the row's scores. Unlike the CPU
// (kernels/attention.h) the weights are not rounded to f16 and the tiles
// are not the CPU's 256-position chunks, so results agree within float
// rounding, not bit for bit.
#include <cmath>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_math.cuh"

namespace omnibus::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kDimsPerThread = kMaxAttentionHeadDim / kThreads;

// Elements from the cache's start to (block, layer, KV head)'s region.
// (KvLayout's region() and block_elements(), which are host code.)
__device__ int64_t region_start(const KvLayout& l, int64_t block, int layer, int head) {
  const int64_t region = int64_t{2} * l.block_size * l.head_dim;
  return (block * l.n_layer * l.n_head_kv + static_cast<int64_t>(layer) * l.n_head_kv + head) * region;
}

// One thread per (row, KV head, dimension): K to its transposed place, V
// to its row; f16 rounded to nearest even as the CPU's f32_to_f16.
__global__ void store_kv_kernel(uint16_t* cache, KvLayout l, int layer, const float* k, const float* v, int64_t n_rows,
                                RowTables rows) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t kv_dim = static_cast<int64_t>(l.n_head_kv) * l.head_dim;
  if (i >= n_rows * kv_dim) return;
  const int64_t r = i / kv_dim;
  const int h = static_cast<int>((i % kv_dim) / l.head_dim), d = static_cast<int>(i % l.head_dim);
  const int pos = rows.positions[r];
  const int block = rows.tables[rows.table_start[r] + pos / l.block_size];
  const int offset = pos % l.block_size;
  uint16_t* region = cache + region_start(l, block, layer, h);
  region[static_cast<int64_t>(d) * l.block_size + offset] = __half_as_ushort(__float2half_rn(k[i]));
  region[static_cast<int64_t>(l.block_size) * l.head_dim + static_cast<int64_t>(offset) * l.head_dim + d] =
      __half_as_ushort(__float2half_rn(v[i]));
}

// Max or sum of one value per thread over the CTA, returned to every
// thread. `scratch` holds one value per warp; the leading barrier keeps a
// previous call's readers from seeing this call's writes.
template <bool kMax>
__device__ float cta_reduce(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xFFFFFFFFu, v, offset);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) v = kMax ? fmaxf(v, scratch[w]) : v + scratch[w];
  return v;
}

__global__ void attention_kernel(const uint16_t* cache, KvLayout l, int layer, const float* q, int n_head, float scale,
                                 int window, RowTables rows, float* out) {
  __shared__ float q_s[kMaxAttentionHeadDim];
  __shared__ float weight_s[kThreads];
  __shared__ int64_t value_s[kThreads];  // where each tile position's V starts
  __shared__ float scratch[kThreads / 32];
  // Rows on grid x (up to 2^31 - 1), heads on y (up to 65535).
  const int64_t r = blockIdx.x;
  const int h = blockIdx.y;
  const int hd = l.head_dim;
  const int kv_head = h / (n_head / l.n_head_kv);
  const int pos = rows.positions[r];
  const int first = window > 0 && pos >= window ? pos - window + 1 : 0;
  const int32_t* table = rows.tables + rows.table_start[r];
  const float* qr = q + (r * n_head + h) * hd;
  for (int d = threadIdx.x; d < hd; d += kThreads) q_s[d] = qr[d];
  __syncthreads();

  float acc[kDimsPerThread] = {};
  float running_max = -INFINITY, running_sum = 0.0f;
  for (int tile = first; tile <= pos; tile += kThreads) {
    const int p = tile + static_cast<int>(threadIdx.x);
    float score = -INFINITY;
    if (p <= pos) {
      const int64_t region = region_start(l, table[p / l.block_size], layer, kv_head);
      const int offset = p % l.block_size;
      const uint16_t* key = cache + region + offset;
      float dot = 0.0f;
      for (int d = 0; d < hd; ++d) dot += q_s[d] * half_to_float(key[static_cast<int64_t>(d) * l.block_size]);
      score = dot * scale;
      value_s[threadIdx.x] = region + static_cast<int64_t>(l.block_size) * hd + static_cast<int64_t>(offset) * hd;
    }
    const float tile_max = cta_reduce<true>(score, scratch);  // finite: position `tile` is visible
    const float new_max = fmaxf(running_max, tile_max);
    const float weight = p <= pos ? expf(score - new_max) : 0.0f;
    weight_s[threadIdx.x] = weight;
    const float tile_sum = cta_reduce<false>(weight, scratch);  // its barriers publish weight_s and value_s
    const float rescale = expf(running_max - new_max);          // 0 on the first tile (running_max -inf)
    running_sum = running_sum * rescale + tile_sum;
    running_max = new_max;
    const int count = min(kThreads, pos - tile + 1);
#pragma unroll
    for (int i = 0; i < kDimsPerThread; ++i) {
      const int d = static_cast<int>(threadIdx.x) + i * kThreads;
      if (d >= hd) continue;
      float sum = acc[i] * rescale;
      for (int t = 0; t < count; ++t) sum += weight_s[t] * half_to_float(cache[value_s[t] + d]);
      acc[i] = sum;
    }
    __syncthreads();  // weight_s and value_s are rewritten by the next tile
  }
  float* o = out + (r * n_head + h) * hd;
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) {
    const int d = static_cast<int>(threadIdx.x) + i * kThreads;
    if (d < hd) o[d] = acc[i] / running_sum;
  }
}

}  // namespace

void store_kv(uint16_t* cache, const KvLayout& layout, int layer, const float* k, const float* v, int64_t n_rows,
              const RowTables& rows, cudaStream_t stream) {
  const int64_t n = n_rows * layout.n_head_kv * layout.head_dim;
  if (n == 0) return;
  constexpr int kStoreThreads = 256;
  store_kv_kernel<<<static_cast<unsigned>((n + kStoreThreads - 1) / kStoreThreads), kStoreThreads, 0, stream>>>(
      cache, layout, layer, k, v, n_rows, rows);
}

void attention(const uint16_t* cache, const KvLayout& layout, int layer, const float* q, int64_t n_rows, int n_head,
               float scale, int window, const RowTables& rows, float* out, cudaStream_t stream) {
  if (n_rows == 0) return;
  const dim3 grid(static_cast<unsigned>(n_rows), static_cast<unsigned>(n_head));
  attention_kernel<<<grid, kThreads, 0, stream>>>(cache, layout, layer, q, n_head, scale, window, rows, out);
}

}  // namespace omnibus::cuda
