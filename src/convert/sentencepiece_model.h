// A SentencePiece tokenizer.model (the protobuf ModelProto that Llama 2,
// Mistral 7B v0.1-v0.3, Phi-3 and Gemma ship), read by hand: the pieces
// with their scores and types, and the trainer and normalizer settings
// conversion looks at (the model type: GGUF's "llama" tokenizer runs BPE
// models only; add_dummy_prefix) or reports.
//
// Only what conversion needs is kept; every other field is skipped by its
// wire type. A damaged file (a length past the end, a varint too long, a
// deprecated group, a piece that is not UTF-8-sized) is an error, never a
// read out of bounds: the file comes from whoever published the checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace omnibus {

struct SentencePiece {
  std::string text;
  float score = 0.0f;
  // sentencepiece_model.proto's Type, which GGUF's token types copy:
  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
  int type = 1;
};

struct SentencePieceModel {
  std::vector<SentencePiece> pieces;
  // TrainerSpec.model_type: 1 unigram (the proto's default), 2 BPE, 3 word, 4 char.
  int model_type = 1;
  bool byte_fallback = false;
  // NormalizerSpec: a space put before the text (the proto's default true),
  // and its own name ("identity" where the text is not normalised).
  bool add_dummy_prefix = true;
  std::string normalizer_name;
};

// The ModelProto in `bytes`, or why not. A model with no pieces is an error.
// Pieces past the first `max_pieces` are checked but not kept (a model's
// embedding has no rows for them).
Result<SentencePieceModel> parse_sentencepiece_model(std::string_view bytes, size_t max_pieces = size_t{1} << 24);

}  // namespace omnibus
