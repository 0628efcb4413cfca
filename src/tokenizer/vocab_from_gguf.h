// Reading a GGUF file's tokenizer.* keys into VocabData. The only place the
// tokenizer layer touches the GGUF format.
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/vocab.h"

namespace omnibus {

// Reads tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
// *_token_id, add_bos_token, add_eos_token, add_space_prefix} and
// tokenizer.chat_template; applies the model-type defaults for what is
// missing. Errors name the key: a missing required key, a wrong type,
// arrays whose lengths disagree, ids outside the vocabulary, token types
// outside 0..6, merges that are not "left right".
Result<VocabData> vocab_from_gguf(const GgufFile& file);

}  // namespace omnibus
