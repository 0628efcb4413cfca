#include "engine/grammar_vocabulary.h"

#include <algorithm>
#include <string>
#include <vector>

namespace omnibus {

std::shared_ptr<const TokenTrie> make_token_trie(const Tokenizer& tokenizer, int32_t vocab_size) {
  std::vector<std::string> texts(static_cast<size_t>(std::max(vocab_size, 0)));
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (tokenizer.is_valid_id(id) && !tokenizer.is_control(id))
      texts[static_cast<size_t>(id)] = tokenizer.token_to_piece(id);
  }
  return std::make_shared<const TokenTrie>(std::move(texts));
}

}  // namespace omnibus
