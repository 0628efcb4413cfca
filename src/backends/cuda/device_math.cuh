// The arithmetic the CUDA kernels are built from, as __host__ __device__
// functions so the test binary can check it on the host, where no GPU is
// needed: the GGUF block decoders (the part most easily got wrong), the
// int8 dot of four packed bytes, the activations' x quantization, RoPE of
// one pair and the gated activations.
//
// Weights stay in GGUF's block layout on the device (tensor/quant_blocks.h
// documents each); a decoder reads one "unit", 32 consecutive weights of a
// row, into int8 codes packed four to a word and the float factors that
// turn integer dot products into the weighted sum:
//   sum_k w[k] x[k] = dx * (lo * dot(codes[0..15], q[0..15]) + hi * dot(codes[16..31], q[16..31]) + offset * sum(q))
// where x ~ dx * q is the activations' int8 form (one dx per 32 values for
// the legacy types, per 256 for K-quants), as the CPU's matmul computes it
// (kernels/matmul_internal.h). Two factors because Q6_K scales each 16
// weights; `offset` carries Q4_1/Q5_1's m and the K-quants' mins.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define OMNIBUS_HD __host__ __device__ inline
#else
#define OMNIBUS_HD inline
#endif

namespace omnibus::cuda {

// GGUF type ids (tensor/dtype.h's DType values; the .cu files do not
// include the C++ headers that define them).
enum WeightType : int {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
};

// Bytes of one block and weights per block of each quantized type.
OMNIBUS_HD int block_bytes(int type) {
  switch (type) {
    case kQ4_0: return 18;
    case kQ4_1: return 20;
    case kQ5_0: return 22;
    case kQ5_1: return 24;
    case kQ8_0: return 34;
    case kQ4_K: return 144;
    case kQ5_K: return 176;
    case kQ6_K: return 210;
    default: return 0;
  }
}
OMNIBUS_HD bool is_k_quant(int type) { return type == kQ4_K || type == kQ5_K || type == kQ6_K; }
// Units of 32 weights per block: 1 for the legacy types, 8 for K-quants.
OMNIBUS_HD int units_per_block(int type) { return is_k_quant(type) ? 8 : 1; }

struct QuantUnit {
  int32_t codes[8];  // weight 4w + i in byte i of codes[w], as int8
  float lo, hi, offset;
};

// Little-endian loads from byte-aligned memory (GGUF blocks are packed: an
// 18-byte Q4_0 block leaves the next one 2-byte aligned at best).
OMNIBUS_HD uint32_t load_u16(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
}
OMNIBUS_HD uint32_t load_u32(const uint8_t* p) { return load_u16(p) | (load_u16(p + 2) << 16); }

// A float's bit pattern as the float.
OMNIBUS_HD float bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// IEEE binary16 bits to float (exact).
OMNIBUS_HD float half_to_float(uint32_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1Fu) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return bits_to_float(bits);
#endif
}

OMNIBUS_HD float bf16_to_float(uint32_t h) { return bits_to_float(h << 16); }

// Four signed bytes of a times those of b, plus acc (dp4a on the device).
OMNIBUS_HD int32_t dot_i8x4(int32_t a, int32_t b, int32_t acc) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, acc);
#else
  for (int i = 0; i < 4; ++i)
    acc += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i)) *
           static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i));
  return acc;
#endif
}

OMNIBUS_HD int32_t pack4(int c0, int c1, int c2, int c3) {
  return static_cast<int32_t>((static_cast<uint32_t>(c0) & 0xFFu) | ((static_cast<uint32_t>(c1) & 0xFFu) << 8) |
                              ((static_cast<uint32_t>(c2) & 0xFFu) << 16) |
                              ((static_cast<uint32_t>(c3) & 0xFFu) << 24));
}

// 32 codes from 16 bytes of nibbles (weight j < 16 in the low nibble of
// qs[j], j >= 16 in the high nibble of qs[j - 16]) plus an optional fifth
// bit (bit j of qh) minus `bias`: Q4_0, Q4_1, Q5_0, Q5_1.
OMNIBUS_HD void legacy_nibble_codes(const uint8_t* qs, uint32_t qh, bool fifth, int bias, int32_t* codes) {
  for (int w = 0; w < 8; ++w) {
    int c[4];
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * w + i;
      int code = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
      if (fifth) code |= static_cast<int>((qh >> j) & 1u) << 4;
      c[i] = code - bias;
    }
    codes[w] = pack4(c[0], c[1], c[2], c[3]);
  }
}

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block (as
// tensor/quant_blocks.h's k_scale_min).
OMNIBUS_HD void k_scale_min(int j, const uint8_t* scales, int* sc, int* mn) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *mn = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4);
    *mn = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// Unit u (weights 32u .. 32u + 31) of a row of blocks of type kType.
template <int kType>
OMNIBUS_HD QuantUnit decode_unit(const uint8_t* row, int64_t u) {
  QuantUnit out{};
  if constexpr (kType == kQ4_0 || kType == kQ4_1 || kType == kQ5_0 || kType == kQ5_1 || kType == kQ8_0) {
    const uint8_t* b = row + u * block_bytes(kType);
    const float d = half_to_float(load_u16(b));
    out.lo = out.hi = d;
    if constexpr (kType == kQ4_0) {
      legacy_nibble_codes(b + 2, 0, false, 8, out.codes);
    } else if constexpr (kType == kQ4_1) {
      out.offset = half_to_float(load_u16(b + 2));
      legacy_nibble_codes(b + 4, 0, false, 0, out.codes);
    } else if constexpr (kType == kQ5_0) {
      legacy_nibble_codes(b + 6, load_u32(b + 2), true, 16, out.codes);
    } else if constexpr (kType == kQ5_1) {
      out.offset = half_to_float(load_u16(b + 2));
      legacy_nibble_codes(b + 8, load_u32(b + 4), true, 0, out.codes);
    } else {  // Q8_0: signed bytes as they are
      for (int w = 0; w < 8; ++w) out.codes[w] = static_cast<int32_t>(load_u32(b + 2 + 4 * w));
    }
  } else if constexpr (kType == kQ4_K || kType == kQ5_K) {
    // d, dmin, scales[12], then (Q5_K) qh[32], then qs[128].
    const uint8_t* b = row + (u / 8) * block_bytes(kType);
    const int j = static_cast<int>(u % 8);
    int sc, mn;
    k_scale_min(j, b + 4, &sc, &mn);
    out.lo = out.hi = half_to_float(load_u16(b)) * static_cast<float>(sc);
    out.offset = -(half_to_float(load_u16(b + 2)) * static_cast<float>(mn));
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + (kType == kQ5_K ? 48 : 16) + 32 * (j / 2);
    for (int w = 0; w < 8; ++w) {
      int c[4];
      for (int i = 0; i < 4; ++i) {
        const int l = 4 * w + i;
        int code = (qs[l] >> (4 * (j & 1))) & 0x0F;
        if constexpr (kType == kQ5_K) code |= ((qh[l] >> j) & 1) << 4;
        c[i] = code;
      }
      out.codes[w] = pack4(c[0], c[1], c[2], c[3]);
    }
  } else if constexpr (kType == kQ6_K) {
    // ql[128], qh[64], scales[16] (int8), d.
    const uint8_t* b = row + (u / 8) * block_bytes(kType);
    const int j = static_cast<int>(u % 8);
    const int half = j / 4, g = j % 4;
    const float d = half_to_float(load_u16(b + 208));
    const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
    out.lo = d * static_cast<float>(scales[2 * j]);
    out.hi = d * static_cast<float>(scales[2 * j + 1]);
    const uint8_t* ql = b + 64 * half + 32 * (g & 1);
    const uint8_t* qh = b + 128 + 32 * half;
    for (int w = 0; w < 8; ++w) {
      int c[4];
      for (int i = 0; i < 4; ++i) {
        const int l = 4 * w + i;
        const int low = (ql[l] >> (4 * (g >> 1))) & 0x0F;
        c[i] = (low | (((qh[l] >> (2 * g)) & 3) << 4)) - 32;
      }
      out.codes[w] = pack4(c[0], c[1], c[2], c[3]);
    }
  }
  return out;
}

// The unit's integer dots with 32 int8 activations (8 words) and their
// scale dx: its share of the output.
OMNIBUS_HD float unit_dot(const QuantUnit& w, const int32_t* q, float dx) {
  int32_t lo = 0, hi = 0, sum = 0;
  for (int i = 0; i < 4; ++i) lo = dot_i8x4(w.codes[i], q[i], lo);
  for (int i = 4; i < 8; ++i) hi = dot_i8x4(w.codes[i], q[i], hi);
  if (w.offset != 0.0f)
    for (int i = 0; i < 8; ++i) sum = dot_i8x4(0x01010101, q[i], sum);
  return dx * (w.lo * static_cast<float>(lo) + w.hi * static_cast<float>(hi) + w.offset * static_cast<float>(sum));
}

// Weight i (0..31) of a decoded unit as a float (embedding rows).
OMNIBUS_HD float unit_value(const QuantUnit& w, int i) {
  const int code = static_cast<int8_t>(static_cast<uint32_t>(w.codes[i / 4]) >> (8 * (i % 4)));
  return (i < 16 ? w.lo : w.hi) * static_cast<float>(code) + w.offset;
}

// Element k of a row of float weights.
template <int kType>
OMNIBUS_HD float float_weight(const uint8_t* row, int64_t k) {
  if constexpr (kType == kF32) {
    return bits_to_float(load_u32(row + 4 * k));
  } else if constexpr (kType == kF16) {
    return half_to_float(load_u16(row + 2 * k));
  } else {
    return bf16_to_float(load_u16(row + 2 * k));
  }
}

// An activation times its block's inverse scale, rounded to the nearest
// int8 code (ties to even) in [-127, 127]; NaN gives -127. The CPU's
// quantize_x (kernels/matmul_xquant.cpp) does the same, so both make the
// same bytes from the same floats.
OMNIBUS_HD int8_t quantize_value(float v) {
  v = v >= -127.0f ? (v <= 127.0f ? v : 127.0f) : -127.0f;
#if defined(__CUDA_ARCH__)
  return static_cast<int8_t>(__float2int_rn(v));
#else
  return static_cast<int8_t>(static_cast<int>(__builtin_nearbyintf(v)));
#endif
}

// SwiGLU's and GeGLU's gate, as kernels/ops_ref.cpp writes them.
OMNIBUS_HD float silu_gate(float g, float up) {
#if defined(__CUDA_ARCH__)
  return g / (1.0f + expf(-g)) * up;
#else
  return g / (1.0f + __builtin_expf(-g)) * up;
#endif
}
OMNIBUS_HD float gelu_gate(float g, float up) {
  constexpr float kC = 0.7978845608028654f;  // sqrt(2 / pi)
#if defined(__CUDA_ARCH__)
  return 0.5f * g * (1.0f + tanhf(kC * (g + 0.044715f * g * g * g))) * up;
#else
  return 0.5f * g * (1.0f + __builtin_tanhf(kC * (g + 0.044715f * g * g * g))) * up;
#endif
}

}  // namespace omnibus::cuda
