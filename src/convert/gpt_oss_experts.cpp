#include "convert/gpt_oss_experts.h"

#include <algorithm>
#include <cstring>

#include "convert/element_convert.h"

namespace omnibus {
namespace {

constexpr std::string_view kParts[] = {"gate_up_proj",        "gate_up_proj_bias", "gate_up_proj_blocks",
                                       "gate_up_proj_scales", "down_proj",         "down_proj_bias",
                                       "down_proj_blocks",    "down_proj_scales"};
constexpr int64_t kMxfp4Elements = 32;    // a block's elements
constexpr int64_t kMxfp4CodeBytes = 16;   // its codes, two a byte
constexpr int64_t kMxfp4BlockBytes = 17;  // ggml's block: the exponent, then the codes

// Each expert's matrix read from a float source through strides: element
// (expert, row, column) is the source's element expert * expert_stride +
// row * row_stride + column * column_stride + offset. What takes every
// other column of gate_up_proj, or reads a stored-transposed matrix by rows.
struct FloatView {
  const SafetensorsTensor* source;
  int64_t experts, rows, columns;
  int64_t expert_stride, row_stride, column_stride, offset;
};

// A block of output rows at a time, gathered column by column (a column's
// rows lie next to each other in the source: stored transposed), so the
// reads walk the source in order instead of striding across it per element;
// then the block's rows, contiguous in the output, converted in one call.
void fill_floats(const FloatView& v, DType to, std::span<uint8_t> out) {
  constexpr int64_t kRowBlock = 64;
  const size_t in_bytes = safetensors_dtype_bytes(v.source->dtype), out_bytes = float_dtype_bytes(to);
  std::vector<uint8_t> block(static_cast<size_t>(std::min(kRowBlock, v.rows) * v.columns) * in_bytes);
  const uint8_t* src = v.source->bytes.data();
  for (int64_t e = 0; e < v.experts; ++e)
    for (int64_t r0 = 0; r0 < v.rows; r0 += kRowBlock) {
      const int64_t rows = std::min(kRowBlock, v.rows - r0);
      for (int64_t col = 0; col < v.columns; ++col) {
        const int64_t first = e * v.expert_stride + r0 * v.row_stride + col * v.column_stride + v.offset;
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(block.data() + (r * v.columns + col) * in_bytes, src + (first + r * v.row_stride) * in_bytes,
                      in_bytes);
      }
      const size_t elements = static_cast<size_t>(rows * v.columns);
      convert_elements(
          std::span<const uint8_t>(block.data(), elements * in_bytes), v.source->dtype,
          out.subspan(static_cast<size_t>((e * v.rows + r0) * v.columns) * out_bytes, elements * out_bytes), to);
    }
}

// Each expert's MXFP4 matrix from Hugging Face's blocks and scales: output
// row r of an expert is the source's row r * row_step + row_offset.
struct Mxfp4View {
  const SafetensorsTensor* blocks;
  const SafetensorsTensor* scales;
  int64_t experts, rows, groups;  // groups: blocks a row
  int64_t source_rows, row_step, row_offset;
};

void fill_mxfp4(const Mxfp4View& v, std::span<uint8_t> out) {
  uint8_t* dst = out.data();
  for (int64_t e = 0; e < v.experts; ++e)
    for (int64_t r = 0; r < v.rows; ++r) {
      const int64_t source_row = e * v.source_rows + r * v.row_step + v.row_offset;
      const uint8_t* codes = v.blocks->bytes.data() + source_row * v.groups * kMxfp4CodeBytes;
      const uint8_t* exponents = v.scales->bytes.data() + source_row * v.groups;
      for (int64_t g = 0; g < v.groups; ++g, dst += kMxfp4BlockBytes) {
        dst[0] = exponents[g];
        repack_mxfp4_nibbles(codes + g * kMxfp4CodeBytes, dst + 1);
      }
    }
}

class LayerParts {
 public:
  LayerParts(int layer, const std::map<std::string, const SafetensorsTensor*>& parts) : layer_(layer), parts_(parts) {}

  const SafetensorsTensor* find(const std::string& part) const {
    const auto it = parts_.find(part);
    return it == parts_.end() ? nullptr : it->second;
  }

  // The part, of bytes (U8) or of floats, shaped `shape` (outermost first).
  Result<const SafetensorsTensor*> get(const std::string& part, std::vector<int64_t> shape, bool bytes) const {
    const SafetensorsTensor* t = find(part);
    if (t == nullptr) return Status::corrupt(where(part) + " is missing");
    if ((t->dtype == SafetensorsDType::kU8) != bytes)
      return Status::corrupt(where(part) + " is " + safetensors_dtype_name(t->dtype) + ", not " +
                             (bytes ? "U8 (MXFP4)" : "F32, F16 or BF16"));
    if (t->shape != shape)
      return Status::corrupt(where(part) + " is " + shape_text(t->shape) + ", but config.json makes it " +
                             shape_text(shape));
    return t;
  }

  std::string where(const std::string& part) const {
    return "model.layers." + std::to_string(layer_) + ".mlp.experts." + part;
  }

 private:
  int layer_;
  const std::map<std::string, const SafetensorsTensor*>& parts_;
};

}  // namespace

bool is_gpt_oss_expert_part(std::string_view part) {
  for (std::string_view p : kParts)
    if (part == p) return true;
  return false;
}

void repack_mxfp4_nibbles(const uint8_t hf[16], uint8_t ggml[16]) {
  auto code = [hf](int i) { return i % 2 == 0 ? hf[i / 2] & 0x0F : hf[i / 2] >> 4; };
  for (int j = 0; j < 16; ++j) ggml[j] = static_cast<uint8_t>(code(j) | code(j + 16) << 4);
}

Result<std::vector<ExpertStackTensor>> plan_gpt_oss_experts(
    int layer, const std::map<std::string, const SafetensorsTensor*>& parts, const HfModelConfig& c,
    DType matrix_type) {
  const LayerParts p(layer, parts);
  const int64_t experts = c.n_expert, hidden = c.n_embd, ff = c.n_ff_expert;
  const std::string blk = "blk." + std::to_string(layer) + ".";
  std::vector<ExpertStackTensor> out;
  // gate_up_proj: gate from the even rows (columns, stored transposed), up from the odd.
  // down_proj: hidden rows of ff columns.
  struct Matrix {
    const char* part;
    int64_t rows, columns;  // GGUF's, of one expert
    bool interleaved;       // gate and up in one tensor
  };
  for (const Matrix m : {Matrix{"gate_up_proj", ff, hidden, true}, Matrix{"down_proj", hidden, ff, false}}) {
    const std::string part = m.part;
    const SafetensorsTensor* dense = p.find(part);
    const bool mxfp4 = p.find(part + "_blocks") != nullptr || p.find(part + "_scales") != nullptr;
    if (dense != nullptr && mxfp4)
      return Status::corrupt(p.where(part) + " is in the checkpoint both as floats and as MXFP4 blocks");
    const int64_t stored_rows = m.interleaved ? 2 * m.rows : m.rows;  // of one expert
    const std::vector<std::string> names = m.interleaved ? std::vector<std::string>{"ffn_gate_exps", "ffn_up_exps"}
                                                         : std::vector<std::string>{"ffn_down_exps"};
    const std::vector<int64_t> dims = {m.columns, m.rows, experts};
    if (!mxfp4) {
      OMNIBUS_ASSIGN_OR_RETURN(const SafetensorsTensor* t, p.get(part, {experts, m.columns, stored_rows}, false));
      for (size_t i = 0; i < names.size(); ++i) {
        const FloatView v{t,           experts,   m.rows, m.columns, m.columns * stored_rows, int64_t(names.size()),
                          stored_rows, int64_t(i)};
        out.push_back({blk + names[i] + ".weight", dims, matrix_type,
                       [v, matrix_type](std::span<uint8_t> bytes) { fill_floats(v, matrix_type, bytes); }});
      }
    } else {
      if (m.columns % kMxfp4Elements != 0)
        return Status::corrupt(p.where(part) + "_blocks: MXFP4 rows of " + std::to_string(m.columns) +
                               " elements, not a multiple of 32");
      const int64_t groups = m.columns / kMxfp4Elements;
      OMNIBUS_ASSIGN_OR_RETURN(const SafetensorsTensor* blocks,
                               p.get(part + "_blocks", {experts, stored_rows, groups, kMxfp4CodeBytes}, true));
      OMNIBUS_ASSIGN_OR_RETURN(const SafetensorsTensor* scales,
                               p.get(part + "_scales", {experts, stored_rows, groups}, true));
      for (size_t i = 0; i < names.size(); ++i) {
        const Mxfp4View v{blocks, scales, experts, m.rows, groups, stored_rows, int64_t(names.size()), int64_t(i)};
        out.push_back(
            {blk + names[i] + ".weight", dims, DType::kMXFP4, [v](std::span<uint8_t> bytes) { fill_mxfp4(v, bytes); }});
      }
    }
    // The biases, in F32 as llama.cpp keeps every tensor not named .weight.
    OMNIBUS_ASSIGN_OR_RETURN(const SafetensorsTensor* bias, p.get(part + "_bias", {experts, stored_rows}, false));
    for (size_t i = 0; i < names.size(); ++i) {
      const FloatView v{bias, experts, 1, m.rows, stored_rows, 0, int64_t(names.size()), int64_t(i)};
      out.push_back({blk + names[i] + ".bias", {m.rows, experts}, DType::kF32, [v](std::span<uint8_t> bytes) {
                       fill_floats(v, DType::kF32, bytes);
                     }});
    }
  }
  return out;
}

}  // namespace omnibus
