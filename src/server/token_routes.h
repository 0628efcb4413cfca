// POST /tokenize and POST /detokenize, as llama-server answers them:
//   {"content": "text", "add_special": true, "parse_special": true} → {"tokens": [ids]}
//   {"tokens": [ids]} → {"content": "text"}
// add_special (default true) puts BOS/EOS as the vocabulary asks;
// parse_special (default true) turns control-token text into those tokens.
// Ids are checked against the vocabulary; a text that could not fit in
// `context_length` tokens is refused before it is tokenized
// (check_text_can_fit). Pure functions of the body and
// the tokenizer; thread-safe; never throw.
#pragma once

#include <string>
#include <string_view>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace omnibus::server {

// The JSON response body, or a 400 naming the field.
ApiResult<std::string> handle_tokenize(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                       int64_t context_length);
ApiResult<std::string> handle_detokenize(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits);

}  // namespace omnibus::server
