// Dequantization checked bit for bit against an independent implementation:
// the hashes below come from the gguf Python package's numpy decoders
// (tools/check_quant_vs_gguf_py.py), run on the same pseudo-random blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tensor/quant.h"

namespace omnibus {
namespace {

struct Golden {
  DType type;
  uint64_t seed;
  uint64_t hash;  // FNV-1a-64 of the dequantized float32 bytes
};

// Output of tools/check_quant_vs_gguf_py.py.
constexpr Golden kGolden[] = {
    {DType::kF16, 1000, 0x8CDA1E8B3E937F16ULL},    {DType::kBF16, 1001, 0x7E3B0D1B4EB09909ULL},
    {DType::kQ4_0, 1002, 0x3D18333BCCE03F83ULL},   {DType::kQ4_1, 1003, 0x281A7C6377ADFDD0ULL},
    {DType::kQ5_0, 1004, 0x842DB86DED6EA1A7ULL},   {DType::kQ5_1, 1005, 0x9A1F32673CFD51E3ULL},
    {DType::kQ8_0, 1006, 0x7D0E8B32D654A734ULL},   {DType::kQ4_K, 1007, 0x1F43D2BCF7EDD724ULL},
    {DType::kQ5_K, 1008, 0x24A12C41C7E821B6ULL},   {DType::kQ6_K, 1009, 0xE0F8404B654F8559ULL},
    {DType::kQ2_K, 1010, 0xBA7325CF9566FA8EULL},   {DType::kQ3_K, 1011, 0x4158D80EA181EFE2ULL},
    {DType::kIQ4_NL, 1012, 0x83580106771F32A6ULL}, {DType::kIQ4_XS, 1013, 0x6E2F44358308B1B5ULL},
    {DType::kMXFP4, 1014, 0xF477E89F975A3B14ULL},
};

// The tool's "quantize:" lines: types whose quantizer repeats ggml's
// reference one, hashed over the quantized bytes.
constexpr Golden kQuantizeGolden[] = {
    {DType::kMXFP4, 2000, 0xE16735345FCD9D45ULL},
};

// The tool's generator: a 64-bit LCG, one byte (the top one) per step.
std::vector<uint8_t> random_bytes(uint64_t seed, size_t count) {
  std::vector<uint8_t> out(count);
  uint64_t state = seed;
  for (auto& b : out) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<uint8_t>(state >> 56);
  }
  return out;
}

// Offsets of the f16 fields in a block; their exponents are bounded so the
// scales stay finite (the tool does the same).
std::vector<int> f16_fields(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS: return {0};
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K: return {0, 2};
    case DType::kQ6_K: return {208};
    case DType::kQ2_K: return {80, 82};
    case DType::kQ3_K: return {108};
    default: return {};
  }
}

uint64_t fnv1a64(const void* data, size_t n) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<const uint8_t*>(data)[i];
    h *= 0x100000001B3ULL;
  }
  return h;
}

TEST(QuantGolden, DequantizeMatchesGgufPython) {
  for (const Golden& g : kGolden) {
    const DTypeInfo* info = dtype_info(g.type);
    ASSERT_NE(info, nullptr);
    const int64_t blocks = info->block_size > 1 ? 8 : 64;
    const int64_t n = blocks * info->block_size;
    auto bytes = random_bytes(g.seed, static_cast<size_t>(blocks * info->block_bytes));
    for (int64_t b = 0; b < blocks; ++b) {
      for (int off : f16_fields(g.type)) {
        uint8_t& hi = bytes[static_cast<size_t>(b * info->block_bytes + off + 1)];
        hi = static_cast<uint8_t>((hi & 0x80) | (hi & 0x3F));
      }
      // MXFP4's E8M0 exponent byte: 64..191, away from 0 and 1, the two
      // codes omnibus reads differently from ggml (tensor/quant_blocks.h).
      if (g.type == DType::kMXFP4) {
        uint8_t& e = bytes[static_cast<size_t>(b * info->block_bytes)];
        e = static_cast<uint8_t>(64 + (e & 0x7F));
      }
    }
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row_ref(g.type, bytes.data(), out.data(), n);
    EXPECT_EQ(fnv1a64(out.data(), out.size() * sizeof(float)), g.hash) << info->name;
  }
}

TEST(QuantGolden, QuantizeMatchesGgufPython) {
  for (const Golden& g : kQuantizeGolden) {
    const DTypeInfo* info = dtype_info(g.type);
    ASSERT_NE(info, nullptr);
    const auto bytes = random_bytes(g.seed, 256);
    std::vector<float> x(bytes.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(bytes[i]) - 128.0f) * 0.01f;
    std::vector<uint8_t> out(static_cast<size_t>(256 / info->block_size * info->block_bytes));
    quantize_row_ref(g.type, x.data(), out.data(), 256);
    EXPECT_EQ(fnv1a64(out.data(), out.size()), g.hash) << info->name;
  }
}

}  // namespace
}  // namespace omnibus
