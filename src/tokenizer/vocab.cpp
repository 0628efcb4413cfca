#include "tokenizer/vocab.h"

#include <algorithm>

#include "tokenizer/pretokenizer.h"

namespace omnibus {

void apply_model_defaults(VocabData* vocab) {
  if (vocab->model == "llama") {
    vocab->add_bos = true;
    vocab->add_eos = false;
    vocab->add_space_prefix = true;
    const int32_t n = static_cast<int32_t>(vocab->tokens.size());
    vocab->unk_id = n > 0 ? 0 : -1;
    vocab->bos_id = n > 1 ? 1 : -1;
    vocab->eos_id = n > 2 ? 2 : -1;
  } else {
    vocab->add_bos = tokenizer_internal::pre_tokenizer_config(vocab->pre).add_bos;
    vocab->add_eos = false;
    vocab->add_space_prefix = false;
  }
}

namespace {

bool has_token(const VocabData& vocab, std::string_view text) {
  return std::find(vocab.tokens.begin(), vocab.tokens.end(), text) != vocab.tokens.end();
}

// gpt-oss's harmony vocabulary: "<|end|>" closes a message, not the turn.
bool is_harmony(const VocabData& vocab) { return has_token(vocab, "<|return|>") && has_token(vocab, "<|call|>"); }

}  // namespace

int32_t detect_eot_id(const VocabData& vocab) {
  const bool harmony = is_harmony(vocab);
  for (std::string_view text : kEndOfGenerationTexts) {
    if (text == "<|eom_id|>") continue;  // end of message, not of turn
    if (harmony && text == "<|end|>") continue;
    for (size_t id = 0; id < vocab.tokens.size(); ++id) {
      if (vocab.tokens[id] == text) return static_cast<int32_t>(id);
    }
  }
  return -1;
}

std::vector<int32_t> detect_end_of_generation_ids(const VocabData& vocab) {
  const int32_t n = static_cast<int32_t>(vocab.tokens.size());
  std::vector<int32_t> ids;
  for (int32_t id : {vocab.eos_id, vocab.eot_id, vocab.eom_id}) {
    if (id >= 0 && id < n) ids.push_back(id);
  }
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = vocab.tokens[id];
    for (std::string_view eog : kEndOfGenerationTexts) {
      if (text == eog) ids.push_back(id);
    }
  }
  if (is_harmony(vocab)) {
    std::erase_if(ids, [&vocab](int32_t id) { return vocab.tokens[static_cast<size_t>(id)] == "<|end|>"; });
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace omnibus
