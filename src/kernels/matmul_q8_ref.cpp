// Reference of the int8-activation math: one output at a time, integer block
// sums exact, scaling in double. Weight codes are read straight from the
// block layouts (tensor/quant_blocks.h), independently of the SIMD unpacking.
#include <vector>

#include "kernels/matmul_internal.h"
#include "kernels/weight_interleave.h"
#include "tensor/quant.h"
#include "tensor/quant_blocks.h"

namespace omnibus::matmul_detail {
namespace {

double f16(const uint8_t* p) { return f16_to_f32(load_u16le(p)); }

// A legacy block as integer codes: value = d * (code - bias) + m.
struct LegacyCodes {
  int code[kQK];
  int bias = 0;
  double d = 0, m = 0;
};

void nibble_codes(const uint8_t* qs, int* code) {
  for (int j = 0; j < kQK / 2; ++j) {
    code[j] = qs[j] & 0x0F;
    code[j + kQK / 2] = qs[j] >> 4;
  }
}

void add_fifth_bits(const uint8_t* qh_bytes, int* code) {
  const uint32_t qh = load_u32le(qh_bytes);
  for (int j = 0; j < kQK; ++j) code[j] |= static_cast<int>((qh >> j) & 1) << 4;
}

LegacyCodes legacy_codes(DType t, const uint8_t* row, int64_t b) {
  LegacyCodes c;
  switch (t) {
    case DType::kQ4_0: {
      const auto* blk = reinterpret_cast<const BlockQ4_0*>(row) + b;
      c.d = f16(blk->d), c.bias = 8;
      nibble_codes(blk->qs, c.code);
      break;
    }
    case DType::kQ4_1: {
      const auto* blk = reinterpret_cast<const BlockQ4_1*>(row) + b;
      c.d = f16(blk->d), c.m = f16(blk->m);
      nibble_codes(blk->qs, c.code);
      break;
    }
    case DType::kQ5_0: {
      const auto* blk = reinterpret_cast<const BlockQ5_0*>(row) + b;
      c.d = f16(blk->d), c.bias = 16;
      nibble_codes(blk->qs, c.code);
      add_fifth_bits(blk->qh, c.code);
      break;
    }
    case DType::kQ5_1: {
      const auto* blk = reinterpret_cast<const BlockQ5_1*>(row) + b;
      c.d = f16(blk->d), c.m = f16(blk->m);
      nibble_codes(blk->qs, c.code);
      add_fifth_bits(blk->qh, c.code);
      break;
    }
    case DType::kIQ4_NL: {
      const auto* blk = reinterpret_cast<const BlockIQ4_NL*>(row) + b;
      c.d = f16(blk->d);
      nibble_codes(blk->qs, c.code);
      for (int j = 0; j < kQK; ++j) c.code[j] = kIq4nlValues[c.code[j]];
      break;
    }
    case DType::kMXFP4: {
      const auto* blk = reinterpret_cast<const BlockMXFP4*>(row) + b;
      c.d = mxfp4_scale(blk->e);
      nibble_codes(blk->qs, c.code);
      for (int j = 0; j < kQK; ++j) c.code[j] = kMxfp4Values[c.code[j]];
      break;
    }
    default: {  // Q8_0
      const auto* blk = reinterpret_cast<const BlockQ8_0*>(row) + b;
      c.d = f16(blk->d);
      for (int j = 0; j < kQK; ++j) c.code[j] = blk->qs[j];
      break;
    }
  }
  return c;
}

double legacy_dot(const WeightMatrix& w, const uint8_t* row, const QuantizedX& qx, int64_t r) {
  double y = 0;
  for (int64_t b = 0; b < qx.blocks; ++b) {
    const LegacyCodes c = legacy_codes(w.dtype, row, b);
    const int8_t* q = qx.q_row(r) + b * kQK;
    int64_t dot = 0, sum = 0;
    for (int j = 0; j < kQK; ++j) {
      dot += static_cast<int64_t>(c.code[j]) * q[j];
      sum += q[j];
    }
    const int64_t idx = r * qx.blocks + b;
    y += c.d * qx.scale[static_cast<size_t>(idx)] * static_cast<double>(dot - c.bias * sum);
    if (c.m != 0) y += c.m * qx.scaled_sum[static_cast<size_t>(idx)];
  }
  return y;
}

// Codes of a K super-block and the integer scales that weigh them: value =
// d * scale[g] * (code - bias) - dmin * min[g] for element k in group g =
// k / group.
struct KCodes {
  int code[kQK_K];
  double d = 0, dmin = 0;
  int group = 32;      // elements per scale: 16 (Q2_K, Q3_K, Q6_K) or 32
  int bias = 0;        // code offset: 32 (Q6_K), 4 (Q3_K)
  int scale[16] = {};  // per group
  int min[16] = {};    // per group (Q2_K, Q4_K, Q5_K)
};

void q45_k_codes(DType t, const uint8_t* row, int64_t b, KCodes* c) {
  // Q4_K and Q5_K share the header; Q5_K adds a fifth bit from qh.
  const bool five = t == DType::kQ5_K;
  const auto* k4 = reinterpret_cast<const BlockQ4_K*>(row) + b;
  const auto* k5 = reinterpret_cast<const BlockQ5_K*>(row) + b;
  const uint8_t* header = five ? k5->d : k4->d;
  const uint8_t* scales = five ? k5->scales : k4->scales;
  const uint8_t* qs = five ? k5->qs : k4->qs;
  c->d = f16(header), c->dmin = f16(header + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    k_scale_min(j, scales, &sc, &mn);
    c->scale[j] = sc, c->min[j] = mn;
    for (int l = 0; l < 32; ++l) {
      int code = (qs[32 * (j / 2) + l] >> (4 * (j & 1))) & 0x0F;
      if (five) code |= ((k5->qh[l] >> j) & 1) << 4;
      c->code[32 * j + l] = code;
    }
  }
}

KCodes k_codes(DType t, const uint8_t* row, int64_t b) {
  KCodes c;
  switch (t) {
    case DType::kQ6_K: {
      const auto* blk = reinterpret_cast<const BlockQ6_K*>(row) + b;
      c.d = f16(blk->d), c.group = 16, c.bias = 32;
      for (int i = 0; i < 16; ++i) c.scale[i] = blk->scales[i];
      for (int k = 0; k < kQK_K; ++k) {
        const int half = k / 128, g = (k % 128) / 32, l = k % 32;
        const int lo = (blk->ql[64 * half + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 0x0F;
        c.code[k] = lo | (((blk->qh[32 * half + l] >> (2 * g)) & 3) << 4);
      }
      break;
    }
    case DType::kQ2_K: {
      const auto* blk = reinterpret_cast<const BlockQ2_K*>(row) + b;
      c.d = f16(blk->d), c.dmin = f16(blk->dmin), c.group = 16;
      for (int i = 0; i < 16; ++i) c.scale[i] = blk->scales[i] & 0x0F, c.min[i] = blk->scales[i] >> 4;
      for (int k = 0; k < kQK_K; ++k) c.code[k] = k_low2_bits(blk->qs, k);
      break;
    }
    case DType::kQ3_K: {
      const auto* blk = reinterpret_cast<const BlockQ3_K*>(row) + b;
      c.d = f16(blk->d), c.group = 16, c.bias = 4;
      for (int i = 0; i < 16; ++i) c.scale[i] = q3_k_scale(i, blk->scales) - 32;
      for (int k = 0; k < kQK_K; ++k)
        c.code[k] = k_low2_bits(blk->qs, k) | (((blk->hmask[k % 32] >> (k / 32)) & 1) << 2);
      break;
    }
    case DType::kIQ4_XS: {
      const auto* blk = reinterpret_cast<const BlockIQ4_XS*>(row) + b;
      c.d = f16(blk->d);
      for (int j = 0; j < 8; ++j) {
        c.scale[j] = iq4_xs_scale(j, *blk) - 32;
        nibble_codes(blk->qs + 16 * j, c.code + 32 * j);
      }
      for (int& code : c.code) code = kIq4nlValues[code];
      break;
    }
    default: q45_k_codes(t, row, b, &c); break;
  }
  return c;
}

// The exact integer parts of one super-block: S = sum over groups of
// scale * (sum code * q_x - bias * sum q_x), M = sum over groups of
// min * sum q_x.
void k_block_sums(const KCodes& c, const int8_t* q, const int16_t* sums16, int64_t* s, int64_t* mins) {
  *s = 0, *mins = 0;
  for (int g = 0; g < kQK_K / c.group; ++g) {
    int64_t dot = 0;
    for (int k = g * c.group; k < (g + 1) * c.group; ++k) dot += static_cast<int64_t>(c.code[k]) * q[k];
    const int64_t x_sum = c.group == 16 ? sums16[g] : sums16[2 * g] + sums16[2 * g + 1];
    *s += c.scale[g] * (dot - c.bias * x_sum);
    *mins += c.min[g] * x_sum;
  }
}

double k_dot(const WeightMatrix& w, const uint8_t* row, const QuantizedX& qx, int64_t r) {
  double y = 0;
  for (int64_t b = 0; b < qx.blocks; ++b) {
    const KCodes c = k_codes(w.dtype, row, b);
    int64_t weighted, mins;
    k_block_sums(c, qx.q_row(r) + b * kQK_K, qx.sums16.data() + (r * qx.blocks + b) * 16, &weighted, &mins);
    const double dx = qx.scale[static_cast<size_t>(r * qx.blocks + b)];
    y += c.d * dx * static_cast<double>(weighted) - c.dmin * dx * static_cast<double>(mins);
  }
  return y;
}

}  // namespace

Q8BlockTerms q8_block_terms(const WeightMatrix& w, int64_t o, const QuantizedX& qx, int64_t r, int64_t b) {
  thread_local std::vector<uint8_t> gathered;
  const auto* row = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(o) * w.row_bytes;
  if (w.layout != WeightLayout::kRows) {
    gathered.resize(w.row_bytes);
    gather_row_blocks(w, o, gathered.data());
    row = gathered.data();
  }
  Q8BlockTerms t;
  if (qx.format != ActFormat::kQ8x256) {
    const LegacyCodes c = legacy_codes(w.dtype, row, b);
    const int8_t* q = qx.q_row(r) + b * kQK;
    for (int j = 0; j < kQK; ++j) t.s += static_cast<int64_t>(c.code[j] - c.bias) * q[j];
    t.d = static_cast<float>(c.d), t.m = static_cast<float>(c.m);
    return t;
  }
  const KCodes c = k_codes(w.dtype, row, b);
  k_block_sums(c, qx.q_row(r) + b * kQK_K, qx.sums16.data() + (r * qx.blocks + b) * 16, &t.s, &t.mins);
  t.d = static_cast<float>(c.d), t.dmin = static_cast<float>(c.dmin);
  return t;
}

double q8_dot_ref(const WeightMatrix& w, int64_t o, const QuantizedX& qx, int64_t r) {
  const auto* row = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(o) * w.row_bytes;
  thread_local std::vector<uint8_t> gathered;
  if (w.layout != WeightLayout::kRows) {
    gathered.resize(w.row_bytes);
    gather_row_blocks(w, o, gathered.data());
    row = gathered.data();
  }
  return qx.format == ActFormat::kQ8x256 ? k_dot(w, row, qx, r) : legacy_dot(w, row, qx, r);
}

}  // namespace omnibus::matmul_detail
