// gpt-oss's experts as Hugging Face stores them, to GGUF's per-layer expert
// stacks (what llama.cpp's GptOssModel converter writes).
//
// A layer keeps each expert matrix of all its experts in one tensor, under
// model.layers.N.mlp.experts.:
//  * gate_up_proj [experts, hidden, 2 x ff] and down_proj [experts, ff,
//    hidden]: floats, stored input-major (each GGUF row is a column here);
//    gate and up interleaved, gate in the even columns and up in the odd;
//  * or, in the published checkpoints (quantization_config mxfp4),
//    <matrix>_blocks [experts, rows, columns / 32, 16] (two 4-bit E2M1
//    codes a byte, the even element in the low nibble) and <matrix>_scales
//    [experts, rows, columns / 32] (E8M0 exponents), output-major, gate and
//    up rows interleaved;
//  * gate_up_proj_bias [experts, 2 x ff] (interleaved too) and
//    down_proj_bias [experts, hidden].
// GGUF has ffn_{gate,up,down}_exps.weight [experts, rows, columns] (F16,
// BF16 or F32 from floats; MXFP4 kept as MXFP4, its blocks repacked as
// ggml's: the exponent, then 16 bytes holding element j in the low nibble
// of byte j and element j + 16 in its high nibble) and
// ffn_{gate,up,down}_exps.bias [experts, rows] in F32.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "convert/hf_config.h"
#include "convert/safetensors_file.h"
#include "tensor/dtype.h"

namespace omnibus {

// Whether `part` (after "mlp.experts.") is one of the tensors above.
bool is_gpt_oss_expert_part(std::string_view part);

struct ExpertStackTensor {
  std::string name;           // "blk.3.ffn_gate_exps.weight"
  std::vector<int64_t> dims;  // ggml order: columns, rows, experts
  DType dtype;
  std::function<void(std::span<uint8_t>)> fill;  // writes the tensor's bytes; its sources outlive it
};

// The six expert tensors of `layer` from its parts (by part name), each
// checked against the config's shapes; an error naming what is missing,
// doubled (floats and blocks for one matrix) or misshapen.
Result<std::vector<ExpertStackTensor>> plan_gpt_oss_experts(
    int layer, const std::map<std::string, const SafetensorsTensor*>& parts, const HfModelConfig& c, DType matrix_type);

// One MXFP4 block of Hugging Face's nibble order (element 2k in the low
// nibble of byte k, 2k + 1 in its high nibble) in ggml's (element j low in
// byte j, j + 16 high).
void repack_mxfp4_nibbles(const uint8_t hf[16], uint8_t ggml[16]);

}  // namespace omnibus
