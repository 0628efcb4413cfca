// NEON versions of the small ops (ops.h), compiled only for aarch64 (NEON
// is baseline there: no flags, no run-time check).
//
// Each follows ops_avx2.cpp's arithmetic with an 8-float vector held as two
// 4-float halves (lanes 0-3 and 4-7), so the values are the avx2 table's
// bit for bit: the same fused multiply-adds, the same reduction tree, the
// same exp polynomial. Where GCC fused a multiply and an add in the AVX2
// file on its own (-ffp-contract=fast is its C++ default; this build has
// contraction off, CMakeLists.txt), the fusion is written out here with
// vfmaq. One known difference: avx2::dot_f32's scalar tail, as GCC
// compiles it, rounds four products before adding them when 4 to 7
// elements are left over; here every tail element is one fused
// multiply-add. Row lengths that are multiples of 8 (every hidden and head
// size of the models we run) never reach that tail.
#include <arm_neon.h>

#include <cmath>

#include "kernels/ops.h"
#include "tensor/quant.h"

namespace omnibus::neon {
namespace {

// An AVX2 register's eight floats.
struct F8 {
  float32x4_t lo, hi;
};

inline F8 load8(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
inline void store8(float* p, F8 v) {
  vst1q_f32(p, v.lo);
  vst1q_f32(p + 4, v.hi);
}
inline F8 fma8(F8 acc, F8 a, F8 b) { return {vfmaq_f32(acc.lo, a.lo, b.lo), vfmaq_f32(acc.hi, a.hi, b.hi)}; }
inline F8 zero8() { return {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}; }

// avx2's horizontal_sum: s_i = v_i + v_(i+4), then (s0 + s1) + (s2 + s3).
inline float horizontal_sum(F8 v) {
  const float32x4_t s = vaddq_f32(v.lo, v.hi);
  const float32x4_t pairs = vpaddq_f32(s, s);  // s0+s1, s2+s3, ...
  return vgetq_lane_f32(pairs, 0) + vgetq_lane_f32(pairs, 1);
}

}  // namespace

float dot_f32(const float* a, const float* b, int64_t n) {
  F8 acc0 = zero8(), acc1 = zero8();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = fma8(acc0, load8(a + i), load8(b + i));
    acc1 = fma8(acc1, load8(a + i + 8), load8(b + i + 8));
  }
  for (; i + 8 <= n; i += 8) acc0 = fma8(acc0, load8(a + i), load8(b + i));
  // avx2 adds acc0 + acc1 with acc0 as the second operand; addition is
  // commutative in IEEE arithmetic, so the order of operands is free.
  float sum = horizontal_sum({vaddq_f32(acc0.lo, acc1.lo), vaddq_f32(acc0.hi, acc1.hi)});
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  // vcvt_f16_f32 rounds to nearest even (the default FPCR mode), as
  // vcvtps2ph with _MM_FROUND_TO_NEAREST_INT and the reference converter.
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  for (; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

void axpy_f32(float alpha, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), alpha));
  for (; i < n; ++i) y[i] = std::fma(alpha, x[i], y[i]);  // avx2's tail compiles to vfmadd213ss
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const float mean_square = dot_f32(x, x, n) / static_cast<float>(n);
  const float scale = 1.0f / std::sqrt(mean_square + eps);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vld1q_f32(weight + i)));
  for (; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

namespace {

// avx2's exp_ps on four lanes: e^x for x in about [-87, 88] (clamped),
// x = n ln2 + r, e^r by a degree-7 polynomial, times 2^n through the
// exponent bits. Returns p and 2^n apart: avx2's callers' 1 + e was fused
// into fma(p, 2^n, 1) by the compiler, so the callers here fuse it too.
struct ExpParts {
  float32x4_t p, scale;
};

inline ExpParts exp_parts(float32x4_t x) {
  // vmaxq/vminq return NaN for a NaN lane where maxps returns the bound:
  // the gate value itself is NaN then, and so is every result built on it.
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));  // x - n * c, fused as vfnmadd231ps
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 5040.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 720.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  // n is a whole number already, so converting it rounds nothing.
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
  return {p, vreinterpretq_f32_s32(bits)};
}

// g / (1 + e^(-t)) * up, the shared tail of swiglu and geglu.
inline float32x4_t over_one_plus_exp(float32x4_t g, float32x4_t minus_t, float32x4_t up) {
  const ExpParts e = exp_parts(minus_t);
  return vmulq_f32(vdivq_f32(g, vfmaq_f32(vdupq_n_f32(1.0f), e.p, e.scale)), up);
}

// 0 - g, as avx2 writes it (not -g: the two differ in the sign of a zero).
inline float32x4_t swiglu4(float32x4_t g, float32x4_t up) {
  return over_one_plus_exp(g, vsubq_f32(vdupq_n_f32(0.0f), g), up);
}

// avx2's geglu8: -2u = 0 - ((g * g) * g * 0.044715 + g) * 2 sqrt(2 / pi),
// the inner multiply-add fused, and the outer product fused with the
// subtraction from zero (GCC compiled 0 - a * b to one vfnmadd).
inline float32x4_t geglu4(float32x4_t g, float32x4_t up) {
  const float32x4_t g3 = vmulq_f32(vmulq_f32(g, g), g);
  const float32x4_t inner = vfmaq_f32(g, g3, vdupq_n_f32(0.044715f));
  const float32x4_t minus_u2 = vfmsq_f32(vdupq_n_f32(0.0f), inner, vdupq_n_f32(2.0f * 0.7978845608028654f));
  return over_one_plus_exp(g, minus_u2, up);
}

// gate[i] = f(gate[i], up[i]) four at a time; the tail goes through the
// same lane arithmetic (zero-padded), so an element's value never depends
// on where it sits in the call (batch invariance).
template <class F>
void gated(float* gate, const float* up, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(gate + i, f(vld1q_f32(gate + i), vld1q_f32(up + i)));
  if (i == n) return;
  float g[4] = {}, u[4] = {};
  for (int64_t k = i; k < n; ++k) g[k - i] = gate[k], u[k - i] = up[k];
  vst1q_f32(g, f(vld1q_f32(g), vld1q_f32(u)));
  for (int64_t k = i; k < n; ++k) gate[k] = g[k - i];
}

}  // namespace

void swiglu(float* gate, const float* up, int64_t n) { gated(gate, up, n, swiglu4); }
void geglu(float* gate, const float* up, int64_t n) { gated(gate, up, n, geglu4); }

}  // namespace omnibus::neon
