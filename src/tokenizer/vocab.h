// The tokenizer's description of a vocabulary, as plain data: what a GGUF
// file's tokenizer.* keys hold, after defaults are applied. Tests build it by
// hand; vocab_from_gguf.h fills it from a model file. Tokenizer::create
// checks it again, so a hand-built VocabData cannot make the tokenizer read
// out of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace omnibus {

// tokenizer.ggml.token_type values (SentencePiece's piece types).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // <s>, <|im_start|>: special, hidden when decoding
  kUserDefined = 4,  // added by the model's author; always matched whole
  kUnused = 5,
  kByte = 6,         // SentencePiece byte fallback, "<0x0A>"
};

struct VocabData {
  std::string model;  // "gpt2" (byte-level BPE) or "llama" (SentencePiece BPE)
  std::string pre;    // pre-tokenizer name for "gpt2": "smollm", "llama-bpe", "qwen2", ...
  std::vector<std::string> tokens;
  std::vector<float> scores;         // per token; empty means all 0 (SPM merges by score)
  std::vector<int32_t> token_types;  // per token, TokenType values; empty means all normal
  std::vector<std::string> merges;   // "left right", rank = index (byte-level BPE)

  // Special token ids; -1 when the vocabulary has none.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;  // end of turn (<|im_end|>, <|eot_id|>, ...)
  int32_t eom_id = -1;  // end of message (<|eom_id|>)
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  // Every id that ends generation: eos, eot, eom and the tokens whose text
  // llama.cpp treats as end-of-generation. See detect_end_of_generation_ids().
  std::vector<int32_t> end_of_generation_ids;

  bool add_bos = false;           // encode(add_special) puts BOS first
  bool add_eos = false;           // encode(add_special) puts EOS last
  bool add_space_prefix = false;  // SPM: a space before text that starts a fragment
  // Phi-3 (llama.cpp decides by general.name holding "phi3" or "phi-3"):
  // whitespace after a special token is dropped, except after <unk>, <s>
  // and <|endoftext|>.
  bool rstrip_after_specials = false;
  std::string chat_template;      // tokenizer.chat_template (Jinja source), may be empty
};

// Texts llama.cpp recognises as end-of-turn / end-of-generation tokens.
// A harmony vocabulary (gpt-oss: it has "<|return|>" and "<|call|>") ends
// generation on those two and not on "<|end|>", which there closes one
// message of several (the thoughts before the answer), as llama.cpp does.
inline constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>",      "<|im_end|>",         "<|end|>",    "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
    "<|end_of_text|>", "<end_of_utterance>", "<|return|>", "<|call|>",
};

// The model-type defaults llama.cpp uses when a file does not set the flags
// or ids: SPM ("llama") adds BOS and a space prefix and has <unk>/<s>/</s>
// at 0/1/2; byte-level BPE adds BOS only for Llama-3-style pre-tokenizers.
// Sets add_bos, add_eos, add_space_prefix and, for SPM, the default ids.
void apply_model_defaults(VocabData* vocab);

// The first token (in kEndOfGenerationTexts order) that can serve as
// end-of-turn, or -1.
int32_t detect_eot_id(const VocabData& vocab);

// eos, eot, eom and every token whose text is in kEndOfGenerationTexts;
// sorted, no duplicates, only ids inside the vocabulary.
std::vector<int32_t> detect_end_of_generation_ids(const VocabData& vocab);

}  // namespace omnibus
