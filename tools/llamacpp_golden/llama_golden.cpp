// Teacher-forced argmax / top-2 gaps, chunk NLLs and greedy continuations
// from llama.cpp's own library (no llama-cpp-python), with
// tools/make_golden.py's settings (n_ctx 1024 or LLG_N_CTX, n_batch = n_ubatch = 512,
// flash attention on unless LLG_FA_OFF is set, f16 KV, 2 threads), for token
// sequences (at most 512 tokens each) read from stdin, one a line:
//   T name ids...   -> "A argmax..." and "GAP gaps..." (milli-logits)
//   P ids...        -> "NLL mean" (of tokens 1.. from the logits before them)
//   G name ids...   -> "GEN 64 argmax tokens" and "GAP gaps..."
//   L name FROM ids... -> "LOGITS n vocab", then n lines of vocab logits
//                      (%.9g): the full rows of positions FROM.. (at most
//                      512 of them; tools/make_arch_golden.py)
// Not part of the build: make_golden_lib.py says how to compile it against
// a llama.cpp build tree, and drives it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

static llama_context* g_ctx;
static int g_vocab;

static void eval(const std::vector<llama_token>& toks, int pos0, bool all) {
  for (size_t start = 0; start < toks.size(); start += 512) {
    const int n = std::min<int>(512, toks.size() - start);
    llama_batch b = llama_batch_init(n, 0, 1);
    b.n_tokens = n;
    for (int i = 0; i < n; ++i) {
      b.token[i] = toks[start + i];
      b.pos[i] = pos0 + start + i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = all || (start + i + 1 == toks.size());
    }
    if (llama_decode(g_ctx, b) != 0) {
      fprintf(stderr, "decode failed\n");
      exit(1);
    }
    llama_batch_free(b);
  }
}

// Only valid when the whole sequence fits one batch of outputs: we read
// logits right after the last decode, so sequences are <= 512 tokens.
static int argmax_gap(const float* row, int* gap_milli) {
  int best = 0, second = -1;
  for (int i = 1; i < g_vocab; ++i) {
    if (row[i] > row[best])
      second = best, best = i;
    else if (second < 0 || row[i] > row[second])
      second = i;
  }
  if (second < 0) second = best == 0 ? 1 : 0;
  *gap_milli = (int)std::lround(((double)row[best] - row[second]) * 1000);
  return best;
}

int main(int argc, char** argv) {
  llama_backend_init();
  auto mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  auto cp = llama_context_default_params();
  cp.n_ctx = getenv("LLG_N_CTX") ? atoi(getenv("LLG_N_CTX")) : 1024;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.flash_attn_type = getenv("LLG_FA_OFF") ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_ENABLED;
  g_ctx = llama_init_from_model(model, cp);
  g_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string kind, name;
    in >> kind;
    if (kind != "P") in >> name;
    std::vector<llama_token> toks;
    for (int t; in >> t;) toks.push_back(t);
    llama_memory_clear(llama_get_memory(g_ctx), true);
    if (kind == "L") {
      // L name FROM ids...: the rows of positions FROM.. only (at most 512:
      // the last batch's outputs are the ones that can be read).
      const size_t from = toks.empty() ? 0 : static_cast<size_t>(toks.front());
      toks.erase(toks.begin());
      if (from > 0) eval(std::vector<llama_token>(toks.begin(), toks.begin() + from), 0, false);
      const std::vector<llama_token> rest(toks.begin() + from, toks.end());
      eval(rest, static_cast<int>(from), true);
      printf("LOGITS %zu %d\n", rest.size(), g_vocab);
      for (size_t i = 0; i < rest.size(); ++i) {
        const float* row = llama_get_logits_ith(g_ctx, (int)i);
        for (int v = 0; v < g_vocab; ++v) printf(v ? " %.9g" : "%.9g", row[v]);
        printf("\n");
      }
    } else if (kind == "T" || kind == "P") {
      eval(toks, 0, true);
      const int n = toks.size();
      if (kind == "T") {
        std::string a = "A", g = "GAP";
        for (int i = 0; i < n; ++i) {
          int gap;
          const int am = argmax_gap(llama_get_logits_ith(g_ctx, i), &gap);
          a += " " + std::to_string(am);
          g += " " + std::to_string(gap);
        }
        printf("%s\n%s\n", a.c_str(), g.c_str());
      } else {
        double total = 0;
        for (int i = 0; i + 1 < n; ++i) {
          const float* row = llama_get_logits_ith(g_ctx, i);
          double mx = row[0];
          for (int v = 1; v < g_vocab; ++v) mx = std::max(mx, (double)row[v]);
          double s = 0;
          for (int v = 0; v < g_vocab; ++v) s += std::exp((double)row[v] - mx);
          total += -(((double)row[toks[i + 1]] - mx) - std::log(s));
        }
        printf("NLL %.17g\n", total / (n - 1));
      }
    } else {
      eval(toks, 0, false);
      std::string gen = "GEN", gaps = "GAP";
      int pos = toks.size();
      for (int step = 0; step < 64; ++step) {
        int gap;
        const int next = argmax_gap(llama_get_logits_ith(g_ctx, -1), &gap);
        gen += " " + std::to_string(next);
        gaps += " " + std::to_string(gap);
        if (step + 1 < 64) eval({next}, pos++, false);
      }
      printf("%s\n%s\n", gen.c_str(), gaps.c_str());
    }
    fflush(stdout);
  }
  llama_free(g_ctx);
  llama_model_free(model);
  return 0;
}
