// Converts a Hugging Face checkpoint folder (config.json, *.safetensors,
// tokenizer.json, tokenizer_config.json) into a GGUF file as llama.cpp's
// convert_hf_to_gguf.py would write it: the same tensor names, shapes,
// metadata and float conversions (docs/design/safetensors-convert.md).
// Tensors stream from the mapped safetensors into the file one at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "convert/hf_checkpoint.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

namespace omnibus {

struct ConvertOptions {
  // The matrices' type: F16 (llama.cpp's default), BF16 or F32. Norms,
  // biases and rope_freqs are always F32.
  DType matrix_type = DType::kF16;
  std::string name;  // general.name; the folder's name when empty
  // Told each tensor as it is written (progress on long conversions).
  std::function<void(int index, int count, const std::string& gguf_name)> on_tensor;
};

class HfConversion {
 public:
  // Reads and checks everything (config, tokenizer, every tensor's name and
  // shape) before a byte is written.
  static Result<std::unique_ptr<HfConversion>> plan(const std::string& dir, const ConvertOptions& options);

  // Writes `path` (through `path`.partial, renamed when complete). Refuses
  // a path that is a directory, a device or another non-regular file, or
  // one of the checkpoint's own files.
  Status write(const std::string& path) const;
  // The whole file in memory (tests).
  Result<std::vector<uint8_t>> bytes() const { return writer_.build(); }

  const HfModelConfig& config() const { return config_; }
  int tensor_count() const { return tensor_count_; }

 private:
  HfConversion() = default;
  std::string dir_;
  HfCheckpoint checkpoint_;
  HfModelConfig config_;
  GgufWriter writer_;
  int tensor_count_ = 0;
};

// The checkpoint folder's own name ("Qwen3-0.6B" for "~/m/Qwen3-0.6B/" or
// for "." inside it): general.name and the default output file's stem.
std::string checkpoint_name(const std::string& dir);

// Hugging Face rotate-half Q/K rows to ggml's pairwise RoPE order: within each
// of `heads` heads of r rows, row 2i + j of the result is row j * r / 2 + i of
// the source (j in {0, 1}). `row_bytes` per row.
void permute_rope_rows(std::span<const uint8_t> src, std::span<uint8_t> dst, int heads, size_t row_bytes);

}  // namespace omnibus
