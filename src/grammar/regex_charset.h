// The regex converter's character sets and UTF-8 helpers (regex_grammar.cpp):
// a set of code points as sorted ranges with the set operations the
// converter needs, and UTF-8 encoding and strict decoding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace omnibus::regex_internal {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of code points as sorted, disjoint, non-adjacent inclusive ranges.
class CharSet {
 public:
  using Range = std::pair<uint32_t, uint32_t>;

  static CharSet of(uint32_t lo, uint32_t hi) {
    CharSet s;
    s.add(lo, hi);
    return s;
  }
  void add(uint32_t lo, uint32_t hi) {
    ranges_.emplace_back(lo, hi);
    normalize();
  }
  void add(const CharSet& other) {
    ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
    normalize();
  }
  CharSet complement() const {
    CharSet out;
    uint32_t next = 0;
    for (const auto& [lo, hi] : ranges_) {
      if (lo > next) out.ranges_.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= kMaxCodePoint) out.ranges_.emplace_back(next, kMaxCodePoint);
    return out;
  }
  CharSet minus(const CharSet& other) const {
    CharSet u = complement();
    u.add(other);
    return u.complement();
  }
  bool empty() const { return ranges_.empty(); }
  bool contains(uint32_t c) const {
    for (const auto& [lo, hi] : ranges_) {
      if (c >= lo && c <= hi) return true;
    }
    return false;
  }
  // The one code point in the set, or -1 when it has none or several.
  int64_t single() const {
    if (ranges_.size() != 1 || ranges_[0].first != ranges_[0].second) return -1;
    return ranges_[0].first;
  }
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  void normalize() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<Range> merged;
    for (const Range& r : ranges_) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    ranges_ = std::move(merged);
  }

  std::vector<Range> ranges_;
};

inline const CharSet& surrogates() {
  static const CharSet s = CharSet::of(0xD800, 0xDFFF);
  return s;
}

// Characters JSON text cannot hold raw inside a string.
inline const CharSet& json_escaped_chars() {
  static const CharSet s = [] {
    CharSet c = CharSet::of(0, 0x1F);
    c.add('"', '"');
    c.add('\\', '\\');
    return c;
  }();
  return s;
}

inline void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// False on malformed UTF-8 (including overlong forms and surrogates).
inline bool decode_utf8(std::string_view text, std::u32string& out) {
  for (size_t i = 0; i < text.size();) {
    const auto b0 = static_cast<uint8_t>(text[i]);
    size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<uint8_t>(text[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    out += static_cast<char32_t>(cp);
    i += n;
  }
  return true;
}

}  // namespace omnibus::regex_internal
