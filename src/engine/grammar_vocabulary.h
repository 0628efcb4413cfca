// The vocabulary as constrained decoding sees it: each token's text as it
// reaches the output (grammar/token_mask.h's TokenTrie). Shared by the
// serving engine and `omnibus grammar-bench`, so the benchmark times the
// masks the server computes.
#pragma once

#include <cstdint>
#include <memory>

#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace omnibus {

// `vocab_size` entries (the model's; ids past the tokenizer's have no text).
// Control and special tokens have no text, so no grammar produces them.
std::shared_ptr<const TokenTrie> make_token_trie(const Tokenizer& tokenizer, int32_t vocab_size);

}  // namespace omnibus
