// llama.cpp's intermediate tensors for one prompt, for a per-tensor
// comparison with omnibus (OMNIBUS_DUMP_DIR in a build with
// omnibus_tensor_dump.patch; compare_dumps.py beside this file compares
// the two directories and says how to run all three).
//
// Runs one batch of token ids (read from stdin, whitespace-separated, at
// most 512) with llama_golden's settings (n_ctx 1024, n_batch = n_ubatch =
// 512, flash attention on unless LLG_FA_OFF is set, f16 KV, 2 threads) and
// an eval callback that writes every named float32 node (attn_norm-0,
// Qcur-0, kqv_out-0, ffn_out-0, l_out-0, result_output-1, ...) and every
// matrix product by a weight (mm.blk.0.attn_output.weight, ...) to
// OUT_DIR/<name>.f32: raw float32, one row of ne[0] (times ne[1] for 3-d
// tensors) per token. A name seen twice (Qcur before and after RoPE) keeps
// its last value.
//
// Not part of the build; compile it as llama_golden (make_golden_lib.py):
//   g++ -O2 -std=c++17 -I$L/include -I$L/ggml/include dump_tensors.cpp \
//       -o /tmp/llama_dump $L/build/src/libllama.a $L/build/ggml/src/libggml.a \
//       $L/build/ggml/src/libggml-cpu.a $L/build/ggml/src/libggml-base.a -fopenmp -lpthread -ldl
// Usage: /tmp/llama_dump MODEL OUT_DIR < ids.txt
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

static std::string g_out;

static bool on_eval(ggml_tensor* t, bool ask, void*) {
  if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return false;
  std::string name = t->name;
  if (t->op == GGML_OP_MUL_MAT && t->src[0] != nullptr && t->src[0]->buffer != nullptr &&
      ggml_backend_buffer_get_usage(t->src[0]->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
    name = std::string("mm.") + t->src[0]->name;
  else if (name.empty() || name.rfind("node_", 0) == 0 || name.find(' ') != std::string::npos)
    return false;
  if (ask) return true;
  std::vector<float> data(ggml_nelements(t));
  ggml_backend_tensor_get(t, data.data(), 0, ggml_nbytes(t));
  FILE* f = fopen((g_out + "/" + name + ".f32").c_str(), "wb");
  if (f == nullptr) return true;
  fwrite(data.data(), sizeof(float), data.size(), f);
  fclose(f);
  return true;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL OUT_DIR < ids.txt\n", argv[0]);
    return 2;
  }
  g_out = argv[2];
  std::vector<llama_token> toks;
  for (int t; std::cin >> t;) toks.push_back(t);
  if (toks.empty() || toks.size() > 512) return 2;
  llama_backend_init();
  auto mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  auto cp = llama_context_default_params();
  cp.n_ctx = 1024;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.flash_attn_type = getenv("LLG_FA_OFF") ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_ENABLED;
  cp.cb_eval = on_eval;
  cp.cb_eval_user_data = nullptr;
  llama_context* ctx = llama_init_from_model(model, cp);
  const int n = toks.size();
  llama_batch b = llama_batch_init(n, 0, 1);
  b.n_tokens = n;
  for (int i = 0; i < n; ++i) {
    b.token[i] = toks[i];
    b.pos[i] = i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  if (llama_decode(ctx, b) != 0) {
    fprintf(stderr, "decode failed\n");
    return 1;
  }
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
