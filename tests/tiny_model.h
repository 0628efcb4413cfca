// Builds tiny random-weight models as GGUF bytes with our writer, so tests
// can run the real loader and forward pass with no model download. Also
// holds a plain, slow reference forward pass (double precision, dequantized
// weights) that the engine's forward pass is checked against.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "kernels/kernel_table.h"
#include "model/model.h"
#include "tensor/dtype.h"

namespace omnibus::testing {

struct TinyModelSpec {
  std::string architecture = "llama";  // any of find_architecture's names
  int n_layer = 2;
  int n_embd = 64;
  int n_head = 4;
  int n_head_kv = 2;
  int n_ff = 96;
  int vocab = 80;
  DType matrix_type = DType::kF32;   // attention and MLP matrices
  // The routed experts' matrices when set (gpt-oss files keep them in
  // MXFP4 beside Q8_0 attention); matrix_type otherwise.
  std::optional<DType> expert_type;
  DType embedding_type = DType::kF32;
  bool tied_output = true;
  float rope_base = 10000.0f;
  int head_dim = 0;        // 0: n_embd / n_head; else written as attention.key_length
  int sliding_window = 4;  // gemma3 only: its window layers' span (0: key left out)
  uint32_t seed = 1;
  int context_length = 256;
  float rms_eps = 1e-5f;
  float embedding_scale = 1.0f;  // token_embd is uniform(-scale, scale)
  // Write a GPT-2 style byte-level BPE vocabulary of `vocab` tokens (the 256
  // byte tokens, then <|endoftext|>, <|im_start|>, <|im_end|>, then fillers;
  // vocab >= 259) so that llama.cpp loads the file too (it refuses a GGUF
  // without a tokenizer). omnibus's forward pass never needs it.
  bool with_tokenizer = false;
  // Mixture of experts (architectures with ArchitectureSpec::moe): experts
  // of n_ff_expert (n_ff when 0) in place of the MLP.
  int n_expert = 8;
  int n_expert_used = 2;
  int n_ff_expert = 0;
  int n_ff_shared_expert = 0;  // the shared expert's width (architectures that have one; n_ff when 0)
  // phi3's fused attn_qkv (its fused gate/up comes with the architecture).
  bool fused_qkv = false;
  int rope_dims = 0;        // rope.dimension_count: rotate only these leading dims of each head (0: all)
  bool longrope = false;    // rope_factors_short/long, attn_factor, original context = context_length / 4
  // Llama 3.1's RoPE scaling as its converter writes it: a rope_freqs
  // tensor of per-pair divisors (factor 8 past wavelengths of 8,192).
  bool llama3_rope_freqs = false;
  // YaRN (rope.scaling.type yarn) of this factor, original context
  // context_length / 4; 0: none.
  float yarn_factor = 0;
  // YaRN's rope.scaling.yarn_beta_fast / _slow; 0: not written (32 and 1).
  float yarn_beta_fast = 0, yarn_beta_slow = 0;
  std::string omit_tensor;   // leave this tensor out (to test load errors)
  std::string extra_tensor;  // add this [n_embd] tensor the architecture does not have
};

// The GGUF bytes of a model built from the spec (weights random, seeded).
std::vector<uint8_t> make_tiny_model_bytes(const TinyModelSpec& spec);

// Loads the bytes as a Model. `bytes` must outlive the model.
// `layout_for`: the kernels whose layout the matrices are repacked into, as
// the CPU backend loads them (backends/cpu/weight_repack.h); null: the
// file's row layout.
std::shared_ptr<const Model> load_tiny_model(const std::vector<uint8_t>& bytes,
                                             const KernelTable* layout_for = &kernels());
Result<std::shared_ptr<const Model>> try_load_tiny_model(const std::vector<uint8_t>& bytes,
                                                          const ModelLoadOptions& options = {});

// Logits (vocab per position) of every position of `tokens`, computed by the
// plain reference forward pass.
std::vector<float> reference_logits(const Model& model, const std::vector<int32_t>& tokens);

}  // namespace omnibus::testing
