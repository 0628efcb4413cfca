// libFuzzer target for model loading: a GGUF that parses is read as a model
// (hyper-parameters, architecture, weight binding: fused and 3-D expert
// tensors as views, longrope factors) and its matrices repacked as the CPU
// backend loads them (WeightRepacker). Any input
// must load or fail with a Status that says something, never crash, read
// out of bounds or allocate far beyond its size (ASan/UBSan, fuzz_all.sh's
// limits). Seeds: tiny models of each architecture
// (tests/write_golden_model --fuzz-seeds).
#include <cstddef>
#include <cstdint>
#include <span>

#include "backends/cpu/weight_repack.h"
#include "base/mapped_file.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/model_cost.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = omnibus::GgufFile::parse(omnibus::MappedFile::from_memory(std::span<const uint8_t>(data, size)));
  if (!file.is_ok()) return 0;  // gguf_fuzz covers the reader
  static const omnibus::WeightRepacker repacker;
  auto model = omnibus::Model::from_gguf(std::move(file).value(), {.preparer = &repacker});
  if (!model.is_ok()) {
    if (model.status().message().empty()) __builtin_trap();  // every error must say something
    return 0;
  }
  const omnibus::ModelConfig& c = (*model)->config();
  volatile uint64_t sink = (*model)->weight_bytes_per_token() + static_cast<uint64_t>(c.default_context());
  sink = sink + static_cast<uint64_t>(omnibus::token_cost(**model).matmul_flops);
  (void)sink;
  return 0;
}
