// Per-family row codecs behind quant.h's dispatch (internal to tensor/ and
// its tests). n is always a multiple of the family's block size.
#pragma once

#include <cstdint>

namespace omnibus::quant_detail {

void dequantize_q4_0(const uint8_t* src, float* dst, int64_t n);
void dequantize_q4_1(const uint8_t* src, float* dst, int64_t n);
void dequantize_q5_0(const uint8_t* src, float* dst, int64_t n);
void dequantize_q5_1(const uint8_t* src, float* dst, int64_t n);
void dequantize_q8_0(const uint8_t* src, float* dst, int64_t n);
void quantize_q4_0(const float* src, uint8_t* dst, int64_t n);
void quantize_q4_1(const float* src, uint8_t* dst, int64_t n);
void quantize_q5_0(const float* src, uint8_t* dst, int64_t n);
void quantize_q5_1(const float* src, uint8_t* dst, int64_t n);
void quantize_q8_0(const float* src, uint8_t* dst, int64_t n);

void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n);
void quantize_q4_k(const float* src, uint8_t* dst, int64_t n);
void quantize_q5_k(const float* src, uint8_t* dst, int64_t n);
void quantize_q6_k(const float* src, uint8_t* dst, int64_t n);

void dequantize_q2_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q3_k(const uint8_t* src, float* dst, int64_t n);
void quantize_q2_k(const float* src, uint8_t* dst, int64_t n);
void quantize_q3_k(const float* src, uint8_t* dst, int64_t n);

void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t n);
void quantize_iq4_nl(const float* src, uint8_t* dst, int64_t n);
void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t n);

void dequantize_mxfp4(const uint8_t* src, float* dst, int64_t n);
void quantize_mxfp4(const float* src, uint8_t* dst, int64_t n);

}  // namespace omnibus::quant_detail
