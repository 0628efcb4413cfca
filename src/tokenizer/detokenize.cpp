// Tokenizer: ids back to text (token_to_piece, decode). Kept apart from
// encoding because it follows its own llama.cpp rules: which token types
// render, the SentencePiece prefix space, and the clean-up passes.
#include <cstdio>

#include "tokenizer/byte_level.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_attributes.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace omnibus {

using namespace tokenizer_internal;

namespace {

// Byte-level token text back to the bytes it stands for. A character outside
// the GPT-2 alphabet is written out the way llama.cpp does, so a broken
// vocabulary shows up in the output instead of vanishing.
std::string decode_byte_level(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (uint32_t cp : decode_utf8_lenient(text)) {
    const int byte = byte_from_gpt2_codepoint(cp);
    if (byte >= 0) {
      out.push_back(static_cast<char>(byte));
      continue;
    }
    std::string utf8;
    append_utf8(cp, &utf8);
    out += "[UNK_BYTE_0x";
    for (char c : utf8) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", static_cast<uint8_t>(c));
      out += hex;
    }
    out += text + "]";
  }
  return out;
}

}  // namespace

std::string Tokenizer::render(int32_t id, bool render_special) const {
  if (!is_valid_id(id)) return {};
  const uint8_t attr = attributes_[id];
  if (!render_special && (attr & (kAttrUnknown | kAttrControl))) return {};
  const std::string& text = vocab_.tokens[id];
  if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
  if (attr & kAttrNormal) return is_spm_ ? replace_spm_spaces(text) : decode_byte_level(text);
  if (attr & kAttrByte) return std::string(1, static_cast<char>(byte_token_value(text)));
  return {};  // unused and undefined tokens render as nothing
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const { return render(id, render_special); }

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  bool strip_space = vocab_.add_space_prefix;  // only the very first piece
  for (int32_t id : ids) {
    std::string piece = render(id, render_special);
    if (strip_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    strip_space = false;
    out += piece;
  }
  if (!is_spm_ && pre_config_.clean_spaces) out = clean_up_spaces(std::move(out));
  return out;
}

// llama.cpp's three clean-up passes, done in place with the same index
// arithmetic so that odd inputs (" ' ' ", runs of spaces) come out the same.
std::string Tokenizer::clean_up_spaces(std::string t) const {
  // 1: " ?", " !", " .", " ," lose the space.
  size_t n = t.size(), total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    t[total++] = x;
  }
  // 2: a lone apostrophe between spaces loses both spaces.
  n = total, total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --total;
      t[++i] = '\0';
    }
    t[total++] = x;
  }
  // 3: " 's", " 'm", " 're", " 've" lose the space.
  n = total, total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (i + 2 < n) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    t[total++] = x;
  }
  t.resize(total);
  return t;
}

}  // namespace omnibus
