// The CUDA backend's kernels, as host functions that launch them on a
// stream (nothing here waits for the device). Every pointer is device
// memory unless said otherwise; sizes are element counts. Each kernel's
// arithmetic follows the CPU reference it is tested against
// (cuda_kernels_test.cpp): matmul the int8-activation math of
// kernels/matmul_internal.h, norms and activations kernels/ops_ref.cpp,
// RoPE kernels/rope.cpp, attention a one-pass (online) softmax over the f16
// cache where the CPU's kernels/attention.h runs two passes per chunk.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace omnibus::cuda {

// A weight matrix on the device in GGUF's row layout (tensor/quant_blocks.h):
// `rows` output rows of `cols` inputs, row_bytes apart. type: a WeightType
// (device_math.cuh), i.e. a DType value.
struct DeviceMatrix {
  int type = 0;
  const uint8_t* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_bytes = 0;
};

// Whether the current device can run this build's kernels: cudaSuccess, or
// the error cudaFuncGetAttributes gives for one of them (no kernel image
// for the device's architecture). kBuiltArchitectures names what the build
// targets (CMAKE_CUDA_ARCHITECTURES).
cudaError_t kernel_image_status();
#ifndef OMNIBUS_CUDA_ARCHITECTURES
#define OMNIBUS_CUDA_ARCHITECTURES "unknown"
#endif
inline constexpr const char* kBuiltArchitectures = OMNIBUS_CUDA_ARCHITECTURES;

// What one launch covers. Every kernel puts its large dimension on grid x
// (at most 2^31 - 1 CTAs): the elementwise kernels, the K/V store and the
// activation quantizer take up to 256 elements a CTA, RMSNorm one row a
// CTA (rows times heads for the Q/K norms), attention one row a CTA on x
// with the query heads on grid y (at most 65535). matmul splits a batch
// too long for its grid y into several launches itself. A runner refuses
// at creation a max_batch these do not cover.
inline constexpr int64_t kMaxGridX = 0x7FFFFFFF;
inline constexpr int64_t kMaxLaunchElements = kMaxGridX * 256;
inline constexpr int64_t kMaxLaunchRows = kMaxGridX;
inline constexpr int64_t kMaxAttentionHeads = 65535;

// Whether matmul and embed take weights of this type.
bool weight_type_supported(int type);
// The activations' block for weights of this type: 32 (legacy quants), 256
// (K-quants), 0 (float weights: no int8 form).
int activation_block(int type);

// x (n_x rows of cols floats) to int8 codes q (n_x * cols) and one scale
// per `block` values (scales: n_x * cols / block); cols a multiple of block.
// The same bytes as the CPU's matmul_detail::quantize_x.
void quantize_activations(const float* x, int64_t n_x, int64_t cols, int block, int8_t* q, float* scales,
                          cudaStream_t stream);

// y (n_x rows of w.rows) = x times w transposed. Quantized w reads the int8
// form (xq, xs from quantize_activations with activation_block(w.type));
// float w (F32, F16, BF16) reads x. Either pair of pointers may be null when
// the type does not need it. Any n_x: past 65535 * 8 rows (the grid's y
// limit) it launches once per that many rows.
void matmul(const DeviceMatrix& w, const float* x, const int8_t* xq, const float* xs, int64_t n_x, float* y,
            cudaStream_t stream);

// y row r = RMSNorm(x row src(r)) * weight, rows of n floats; src(r) is
// rows[r] when `rows` is given, else r. y may be x (without `rows`).
void rms_norm(const float* x, const int32_t* rows, const float* weight, float* y, int64_t n_rows, int64_t n, float eps,
              cudaStream_t stream);

// x[i] += y[i], i < n.
void add(float* x, const float* y, int64_t n, cudaStream_t stream);
// x[r][i] += bias[i] for n_rows rows of n.
void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n, cudaStream_t stream);

// gate[i] = act(gate[i]) * up[i]: SiLU (gelu false) or GELU's tanh form.
void gated_activation(float* gate, const float* up, int64_t n, bool gelu, cudaStream_t stream);

// x row r = embedding row tokens[r] of e, times `scale`.
void embed(const DeviceMatrix& e, const int32_t* tokens, int64_t n_rows, float scale, float* x, cudaStream_t stream);

// RoPE in place on n_rows rows of n_heads heads of head_dim: the first
// rot_dims of each head turn by the angles of the row's position, read
// from cos / sin tables of rot_dims / 2 per position (rope_angles'
// values). neox: pairs (i, i + rot_dims / 2), else (2i, 2i + 1).
void rope(float* x, int64_t n_rows, int n_heads, int head_dim, int rot_dims, bool neox, const int32_t* positions,
          const float* cos_table, const float* sin_table, cudaStream_t stream);

// Where the f16 cache keeps things (CudaKvCache): block after block; in a
// block, layer after layer, KV head after KV head, a region of K as
// [head_dim][block_size] (transposed) then V as [block_size][head_dim].
// One block's bytes are so exactly the CPU store's transfer format for an
// f16 cache (engine/kv_transfer.h), and a copy of one block is one memcpy.
struct KvLayout {
  int n_layer = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int block_size = 0;
  int num_blocks = 0;
  int64_t region() const { return int64_t{2} * block_size * head_dim; }
  int64_t block_elements() const { return int64_t{n_layer} * n_head_kv * region(); }
};

// The rows' block tables: row r's block ids start at tables[table_start[r]].
struct RowTables {
  const int32_t* positions = nullptr;
  const int32_t* table_start = nullptr;
  const int32_t* tables = nullptr;
};

// k and v (n_rows rows of n_head_kv * head_dim) rounded to f16 into layer
// `layer` of the cache at each row's position.
void store_kv(uint16_t* cache, const KvLayout& layout, int layer, const float* k, const float* v, int64_t n_rows,
              const RowTables& rows, cudaStream_t stream);

// out (n_rows rows of n_head * head_dim) = softmax(scale q k^T) v per query
// head over the row's visible positions of layer `layer`: the positions
// up to its own, the last `window` of them when window > 0. Query head h
// reads KV head h / (n_head / n_head_kv). head_dim <= kMaxAttentionHeadDim.
void attention(const uint16_t* cache, const KvLayout& layout, int layer, const float* q, int64_t n_rows, int n_head,
               float scale, int window, const RowTables& rows, float* out, cudaStream_t stream);
inline constexpr int kMaxAttentionHeadDim = 256;

}  // namespace omnibus::cuda
