// Element-wise and row-wise ops of the transformer block: RMSNorm, RoPE,
// SwiGLU, softmax, and the small vector primitives attention is built from.
// Each has a scalar reference (ops_ref.cpp), an AVX2+FMA version
// (ops_avx2.cpp) and a NEON one (ops_neon.cpp), picked once at start. Every function reduces in one fixed
// order, so results never depend on batch composition.
#pragma once

#include <cstdint>

namespace omnibus {

struct KernelTable;  // kernels/kernel_table.h

// y = x / sqrt(mean(x^2) + eps) * weight. y may alias x.
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);

// gate[i] = silu(gate[i]) * up[i]  (SwiGLU), in place on gate.
void swiglu(float* gate, const float* up, int64_t n);

// gate[i] = gelu(gate[i]) * up[i]  (GeGLU, Gemma), in place on gate, with
// GELU's tanh approximation 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))),
// computed as g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)), the same value.
void geglu(float* gate, const float* up, int64_t n);

// Adds `bias` (width floats) to each of n_rows rows of `rows`, width apart.
void add_row_bias(const float* bias, float* rows, int64_t n_rows, int64_t width);

// gpt-oss's clamped SwiGLU, in place on gate: g = min(gate[i], 7),
// gate[i] = g * sigmoid(1.702 g) * (clamp(up[i], -7, 7) + 1). Scalar (its
// experts' hidden rows only; llama.cpp's swiglu_oai).
void swiglu_oai(float* gate, const float* up, int64_t n);

// sum_i a[i] * b[i]
float dot_f32(const float* a, const float* b, int64_t n);

// y[i] += alpha * x[i]
void axpy_f32(float alpha, const float* x, float* y, int64_t n);

// y[i] *= alpha
void scale_f32(float alpha, float* y, int64_t n);

// y[i] = x[i] rounded to IEEE f16 (nearest even; raw bits), as the KV cache
// stores rows. Both paths give the same bits.
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);

// y[i] += x[i]
void add_f32(const float* x, float* y, int64_t n);

// The table's ops: the functions above with `table`'s kernels instead of
// the process's (kernels()); a runner passes its own.
void rms_norm(const KernelTable& table, const float* x, const float* weight, float* y, int64_t n, float eps);
void swiglu(const KernelTable& table, float* gate, const float* up, int64_t n);
void geglu(const KernelTable& table, float* gate, const float* up, int64_t n);
float dot_f32(const KernelTable& table, const float* a, const float* b, int64_t n);
void axpy_f32(const KernelTable& table, float alpha, const float* x, float* y, int64_t n);
void f32_to_f16_row(const KernelTable& table, const float* x, uint16_t* y, int64_t n);

// Scalar references of the above, for tests.
namespace ref {
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
void swiglu(float* gate, const float* up, int64_t n);
void geglu(float* gate, const float* up, int64_t n);
float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float alpha, const float* x, float* y, int64_t n);
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace ref

// AVX2+FMA versions; only call when cpu_features().has_avx2_fma().
namespace avx2 {
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
void swiglu(float* gate, const float* up, int64_t n);
void geglu(float* gate, const float* up, int64_t n);
float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float alpha, const float* x, float* y, int64_t n);
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace avx2

// NEON versions (aarch64 builds only; NEON is baseline there): the avx2
// versions' arithmetic in two 4-lane halves (ops_neon.cpp says where the
// bits can differ).
namespace neon {
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
void swiglu(float* gate, const float* up, int64_t n);
void geglu(float* gate, const float* up, int64_t n);
float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float alpha, const float* x, float* y, int64_t n);
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace neon

}  // namespace omnibus
