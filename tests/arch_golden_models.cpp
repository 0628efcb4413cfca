#include "arch_golden_models.h"

namespace omnibus::testing {
namespace {

// The real model's head layout (head size, heads per KV head, RoPE base,
// eps) in fewer, narrower layers, and a vocabulary small enough that every
// position's full row of logits can be committed. Widths are multiples of
// 256 so that K-quant matrices fit. Outputs are untied: with a tied one,
// random weights make the model repeat its input token.
TinyModelSpec golden_spec(const char* architecture, int n_layer, int n_head, int n_head_kv, int head_dim,
                          DType matrices, DType embedding, float rope_base, float rms_eps, uint32_t seed) {
  TinyModelSpec s;
  s.architecture = architecture;
  s.n_layer = n_layer;
  s.n_embd = 512;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.head_dim = head_dim;
  s.n_ff = 1536;
  s.vocab = 272;
  s.matrix_type = matrices;
  s.embedding_type = embedding;
  s.tied_output = false;
  s.rope_base = rope_base;
  s.rms_eps = rms_eps;
  s.context_length = 4096;
  s.with_tokenizer = true;
  s.seed = seed;
  return s;
}

// `count` experts of `width`, `used` a token.
void with_experts(TinyModelSpec& s, int count, int used, int width) {
  s.n_expert = count;
  s.n_expert_used = used;
  s.n_ff_expert = width;
}

std::vector<ArchGoldenModel> make_models() {
  std::vector<ArchGoldenModel> models;
  // Llama 3.2 1B: 32 heads of 64 over 2,048 wide, 8 KV heads, RoPE base
  // 500,000. Q4_0 matrices, Q8_0 embedding.
  models.push_back({"llama", golden_spec("llama", 3, 8, 2, 64, DType::kQ4_0, DType::kQ8_0, 500000.0f, 1e-5f, 1)});
  // Llama 3.1 / 3.2: the same heads with the RoPE scaling of their
  // rope_freqs tensor (llama3: factor 8 past the 8,192-token original
  // context), checked at positions 8,704-8,959 (tools/make_arch_golden.py
  // LONG). Q4_K matrices, Q6_K embedding.
  ArchGoldenModel llama31{"llama31",
                          golden_spec("llama", 3, 8, 2, 64, DType::kQ4_K, DType::kQ6_K, 500000.0f, 1e-5f, 31)};
  llama31.spec.llama3_rope_freqs = true;
  llama31.spec.context_length = 131072;
  models.push_back(llama31);
  // Qwen2.5-0.5B: 14 heads of 64 over 896 wide, 2 KV heads, q/k/v biases,
  // RoPE base 1e6, eps 1e-6.
  models.push_back({"qwen2", golden_spec("qwen2", 3, 8, 2, 64, DType::kQ8_0, DType::kQ8_0, 1e6f, 1e-6f, 2)});
  // Qwen3-0.6B: 16 heads of 128 over 1,024 wide (q_dim = 2 x n_embd), 8 KV
  // heads, per-head q/k norms, RoPE base 1e6, eps 1e-6. Q4_K matrices and a
  // Q6_K embedding, as in a Q4_K_M file.
  models.push_back({"qwen3", golden_spec("qwen3", 3, 8, 4, 128, DType::kQ4_K, DType::kQ6_K, 1e6f, 1e-6f, 38)});
  // The same heads with YaRN as Qwen3's long-context files set it (factor 4
  // here over an original context of 1,024, as 4 x 32,768 there), checked
  // at positions 1,728-1,983 of one sequence (tools/make_arch_golden.py
  // LONG): past the original context, where YaRN's blend and magnitude
  // matter most.
  ArchGoldenModel qwen3_yarn{"qwen3yarn",
                             golden_spec("qwen3", 3, 8, 4, 128, DType::kQ4_K, DType::kQ6_K, 1e6f, 1e-6f, 39)};
  qwen3_yarn.spec.yarn_factor = 4;
  models.push_back(qwen3_yarn);
  // Qwen3-30B-A3B: Qwen3's attention with 32 heads of 128 over 2,048 wide,
  // 4 KV heads; 128 experts of 768, 8 of them per token, weights
  // normalised. Here 8 heads per KV head as there, 16 experts of 256, 4 per
  // token.
  ArchGoldenModel moe{"qwen3moe", golden_spec("qwen3moe", 3, 8, 1, 128, DType::kQ4_K, DType::kQ6_K, 1e6f, 1e-6f, 30)};
  with_experts(moe.spec, 16, 4, 256);
  models.push_back(moe);
  // Qwen1.5-MoE-A2.7B: Qwen2's attention (16 heads of 128 over 2,048, so
  // q_dim = n_embd, biases), 60 experts of 1,408, 4 a token, weights as
  // the softmax gives them, and a shared expert of 5,632 behind a sigmoid
  // gate. Here 4 heads of 128, 16 experts of 256, 4 a token, a shared
  // expert of 512.
  ArchGoldenModel qwen2moe{"qwen2moe",
                           golden_spec("qwen2moe", 3, 4, 4, 128, DType::kQ8_0, DType::kQ8_0, 1e6f, 1e-6f, 57)};
  with_experts(qwen2moe.spec, 16, 4, 256);
  qwen2moe.spec.n_ff_shared_expert = 512;
  models.push_back(qwen2moe);
  // Phi-4-mini: 24 heads of 128 over 3,072 wide, 8 KV heads, RoPE on 96
  // of each head's 128 dims with longrope factors and attention factor,
  // fused attn_qkv and gate/up. Here 4 heads of 128 (q_dim = n_embd, as
  // llama.cpp's phi3 requires), 2 per KV head, the same partial RoPE; the
  // golden context (1,024) is the original one, so the short factors apply.
  ArchGoldenModel phi{"phi3", golden_spec("phi3", 3, 4, 2, 128, DType::kQ4_K, DType::kQ8_0, 10000.0f, 1e-5f, 4)};
  phi.spec.fused_qkv = true;
  phi.spec.rope_dims = 96;
  phi.spec.longrope = true;
  models.push_back(phi);
  // The same model run with a context of 2,048, past the original 1,024:
  // llama.cpp (by its n_ctx) and omnibus (by the runner's context) turn by
  // the long factors; checked at positions 1,728-1,983 of one sequence
  // (tools/make_arch_golden.py LONG).
  ArchGoldenModel phi_long = phi;
  phi_long.name = "phi3long";
  models.push_back(phi_long);
  // gpt-oss-20b: 64 heads of 64 over 2,880 wide, 8 per KV head, biased
  // q/k/v/o, attention sinks, every other layer a window of 128 with the
  // same YaRN RoPE (factor 32 over 4,096, base 150,000), 32 experts of
  // 2,880, 4 a token, with biases and the clamped SwiGLU. Here 8 heads of
  // 64 on one KV head, four layers, a window of 32 positions (the golden
  // sequences are 128 long), YaRN factor 4 over 1,024, 16 experts of 256.
  // Q8_0 experts here; "gptossmxfp4" below has the published files' mix.
  ArchGoldenModel gpt_oss{"gptoss",
                          golden_spec("gpt-oss", 4, 8, 1, 64, DType::kQ8_0, DType::kQ8_0, 150000.0f, 1e-5f, 21)};
  gpt_oss.spec.sliding_window = 32;
  gpt_oss.spec.yarn_factor = 4;
  with_experts(gpt_oss.spec, 16, 4, 256);
  models.push_back(gpt_oss);
  // The same model as published files store it (llama-quantize's
  // MXFP4_MOE): MXFP4 experts, Q8_0 elsewhere.
  ArchGoldenModel gpt_oss_mxfp4 = gpt_oss;
  gpt_oss_mxfp4.name = "gptossmxfp4";
  gpt_oss_mxfp4.spec.expert_type = DType::kMXFP4;
  models.push_back(gpt_oss_mxfp4);
  // Gemma 3 270M: 4 heads of 256 over 640 wide, one KV head, five window
  // layers to one global. Six layers and a window of 32 positions (the
  // golden sequences are 128 long).
  ArchGoldenModel gemma{"gemma3", golden_spec("gemma3", 6, 4, 1, 256, DType::kQ4_K, DType::kQ8_0, 1e6f, 1e-6f, 3)};
  gemma.spec.sliding_window = 32;
  models.push_back(gemma);
  return models;
}

}  // namespace

const std::vector<ArchGoldenModel>& arch_golden_models() {
  static const std::vector<ArchGoldenModel> models = make_models();
  return models;
}

}  // namespace omnibus::testing
