#include "tokenizer/utf8.h"

namespace omnibus::tokenizer_internal {

size_t utf8_lead_length(uint8_t lead) {
  static constexpr uint8_t kLengthByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengthByHighNibble[lead >> 4];
}

namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// One code point the way llama.cpp's decoder reads it; false when the bytes
// at `offset` do not decode (the caller then emits U+FFFD and skips a byte).
bool decode_one_lenient(std::string_view text, size_t* offset, uint32_t* cp) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data()) + *offset;
  const size_t left = text.size() - *offset;
  const uint8_t b0 = p[0];
  if (b0 < 0x80) {
    *cp = b0;
    *offset += 1;
    return true;
  }
  size_t n = 0;
  uint32_t value = 0;
  if ((b0 & 0x40) == 0) return false;  // stray continuation byte
  if ((b0 & 0x20) == 0) {
    n = 2;
    value = b0 & 0x1F;
  } else if ((b0 & 0x10) == 0) {
    n = 3;
    value = b0 & 0x0F;
  } else if ((b0 & 0x08) == 0) {
    n = 4;
    value = b0 & 0x07;
  } else {
    return false;
  }
  if (left < n) return false;
  for (size_t i = 1; i < n; ++i) {
    if (!is_continuation(p[i])) return false;
    value = (value << 6) | (p[i] & 0x3F);
  }
  *cp = value;
  *offset += n;
  return true;
}

}  // namespace

std::vector<uint32_t> decode_utf8_lenient(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    uint32_t cp = 0;
    if (decode_one_lenient(text, &offset, &cp)) {
      out.push_back(cp);
    } else {
      out.push_back(kReplacementChar);
      ++offset;
    }
  }
  return out;
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp > 0x10FFFF) cp = kReplacementChar;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

Utf8Step next_utf8_sequence(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t b0 = p[0];
  if (b0 < 0x80) return {Utf8Step::kValid, 1};
  // Allowed range of the second byte and total length, per lead byte
  // (Unicode Table 3-7); later bytes are always 80..BF.
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 == 0xE0) {
    n = 3, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    n = 3;
  } else if (b0 == 0xED) {
    n = 3, hi = 0x9F;
  } else if (b0 == 0xF0) {
    n = 4, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    n = 4;
  } else if (b0 == 0xF4) {
    n = 4, hi = 0x8F;
  } else {
    return {Utf8Step::kInvalid, 1};
  }
  for (size_t i = 1; i < n; ++i) {
    if (i >= bytes.size()) return {Utf8Step::kIncomplete, i};
    const uint8_t b = p[i];
    const bool ok = i == 1 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return {Utf8Step::kInvalid, i};
  }
  return {Utf8Step::kValid, n};
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Step step = next_utf8_sequence(text.substr(pos));
    if (step.kind != Utf8Step::kValid) return false;
    pos += step.length;
  }
  return true;
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Step step = next_utf8_sequence(text.substr(pos));
    if (step.kind == Utf8Step::kValid) {
      out.append(text.substr(pos, step.length));
    } else {
      append_utf8(kReplacementChar, &out);
    }
    pos += step.length;
  }
  return out;
}

}  // namespace omnibus::tokenizer_internal
