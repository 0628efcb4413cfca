// Text ↔ token ids for the two tokenizer families of llama-style GGUF
// models, reproducing llama.cpp's tokenization exactly:
// - "gpt2": byte-level BPE (SmolLM, Llama 3, Qwen 2, GPT-2): special tokens
//   are cut out, the rest is split by the pre-tokenizer's regexes, each word
//   is mapped to the GPT-2 byte alphabet and merged by rank.
// - "llama": SentencePiece BPE (Llama 1/2, Mistral): spaces become U+2581, a
//   space is prefixed to each fragment that starts the text or follows a
//   special token, pairs merge by score, unknown characters fall back to
//   <0xXX> byte tokens.
//
// Thread-safety: immutable after create(); every method is const and safe to
// call from many threads at once. Nothing is cached between calls.
// Untrusted token ids (from a request) are checked: an id outside the
// vocabulary renders as empty text.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_map.h"
#include "tokenizer/vocab.h"

namespace omnibus {

class Tokenizer {
 public:
  // Checks `vocab` (sizes, ids, token types, merges, duplicate texts) and
  // builds the lookup tables. An unknown pre-tokenizer name falls back to
  // llama.cpp's default one with a warning.
  static Result<std::unique_ptr<Tokenizer>> create(VocabData vocab);
  // Tables point into the object itself: it stays where create() put it.
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: put BOS/EOS around the text as the vocabulary's add_bos /
  // add_eos say. parse_special: control tokens written in the text (like
  // "<|im_start|>") become those tokens; otherwise they are tokenized as
  // plain text. User-defined tokens are always matched whole.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes a token stands for (may be part of a UTF-8 character).
  // Control and unknown tokens render as "" unless `render_special`.
  std::string token_to_piece(int32_t id, bool render_special = false) const;

  // The text of `ids` as llama.cpp's detokenizer gives it: pieces joined,
  // the SentencePiece prefix space dropped from the first piece, and for
  // byte-level vocabularies that ask for it the "clean up tokenization
  // spaces" pass (" ," → ","). May contain invalid UTF-8 when `ids` cut a
  // character; StreamDecoder is the safe way to emit text.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  int32_t vocab_size() const { return static_cast<int32_t>(vocab_.tokens.size()); }
  bool is_valid_id(int32_t id) const { return id >= 0 && id < vocab_size(); }
  int32_t bos_id() const { return vocab_.bos_id; }
  int32_t eos_id() const { return vocab_.eos_id; }
  int32_t eot_id() const { return vocab_.eot_id; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  const std::vector<int32_t>& end_of_generation_ids() const { return vocab_.end_of_generation_ids; }
  bool is_end_of_generation(int32_t id) const;
  bool is_control(int32_t id) const;

  // The token's text as stored in the vocabulary ("" for a bad id).
  std::string_view token_text(int32_t id) const;
  // The id of the token whose stored text is exactly `text`, or -1.
  int32_t token_id(std::string_view text) const;

  const VocabData& vocab() const { return vocab_; }

  // The most input bytes one token can stand for (at least 4: an unknown
  // character becomes one token). A text of B bytes is at least
  // B / max_bytes_per_token() tokens, which lets a caller refuse a text too
  // long for the context without tokenizing it. A token's stored text is
  // never shorter than the input it covers: byte-level BPE stores each
  // input byte as one or two UTF-8 bytes, SentencePiece a space as the
  // 3-byte U+2581, byte tokens as "<0xAB>", and neither tokenizer drops
  // input bytes.
  size_t max_bytes_per_token() const { return max_bytes_per_token_; }

 private:
  Tokenizer() = default;
  Status build(VocabData vocab);
  void encode_spm(std::string_view text, bool after_special, std::vector<int32_t>* out) const;
  void encode_bpe(std::string_view text, std::vector<int32_t>* out) const;
  std::string render(int32_t id, bool render_special) const;
  std::string clean_up_spaces(std::string text) const;

  VocabData vocab_;
  bool is_spm_ = false;
  tokenizer_internal::PreTokenizerConfig pre_config_;
  std::unique_ptr<tokenizer_internal::PreTokenizer> pre_tokenizer_;
  tokenizer_internal::BpeMerges merges_;
  tokenizer_internal::StringIdMap token_ids_;
  tokenizer_internal::SpmTables spm_tables_;
  std::vector<uint8_t> attributes_;              // per token, kAttr* bits
  std::vector<int32_t> specials_;                // control, user-defined, unknown; longest first
  std::vector<int32_t> user_defined_specials_;   // the subset matched without parse_special
  size_t max_bytes_per_token_ = 4;
};

}  // namespace omnibus
