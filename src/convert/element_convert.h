// A checkpoint's float elements in the type a GGUF tensor stores them in.
#pragma once

#include <cstdint>
#include <span>

#include "convert/safetensors_file.h"
#include "tensor/dtype.h"

namespace omnibus {

// The tensor layer's type of a float safetensors dtype (F32, F16, BF16).
DType float_dtype(SafetensorsDType t);

// Bytes a converted element takes: F32 4, F16 and BF16 2.
inline size_t float_dtype_bytes(DType t) { return t == DType::kF32 ? 4 : 2; }

// Each element of `src` (of float type `from`: F32, F16 or BF16; U8
// sources never reach here) plus `shift` as `to`: the
// same bits where the types agree and nothing is added, else through
// float32 with round-to-nearest-even (the tensor layer's codecs; numpy's
// astype and torch's to() round the same way, so llama.cpp's converter
// too), a chunk at a time. An F16 source's sum is rounded to F16 first:
// llama.cpp's converter adds to the torch tensor as loaded, F16 or F32
// (BF16 is widened to F32 before).
void convert_elements(std::span<const uint8_t> src, SafetensorsDType from, std::span<uint8_t> dst, DType to,
                      float shift = 0.0f);

}  // namespace omnibus
