#include "grammar/integer_range_grammar.h"

#include <algorithm>
#include <string>
#include <vector>

#include "grammar/regex_grammar.h"

namespace omnibus {
namespace {

// Digit strings of one length from `lo` to `hi` (leading zeros allowed):
// the first differing digit splits the range into at most three parts.
std::string digits_between(const std::string& lo, const std::string& hi) {
  if (lo == hi) return lo.empty() ? "" : gbnf_literal(lo);
  size_t p = 0;
  while (lo[p] == hi[p]) ++p;
  const size_t rest = lo.size() - p - 1;
  const std::string lo_rest = lo.substr(p + 1);
  const std::string hi_rest = hi.substr(p + 1);
  const bool lo_full = lo_rest == std::string(rest, '0');
  const bool hi_full = hi_rest == std::string(rest, '9');
  const char mid_lo = lo_full ? lo[p] : static_cast<char>(lo[p] + 1);
  const char mid_hi = hi_full ? hi[p] : static_cast<char>(hi[p] - 1);
  std::vector<std::string> alternatives;
  if (!lo_full)
    alternatives.push_back(
        join_nonempty({gbnf_literal(lo.substr(p, 1)), digits_between(lo_rest, std::string(rest, '9'))}, " "));
  if (mid_lo <= mid_hi) {
    const std::string digit =
        mid_lo == mid_hi ? gbnf_literal(std::string(1, mid_lo)) : std::string("[") + mid_lo + "-" + mid_hi + "]";
    alternatives.push_back(join_nonempty({digit, gbnf_repeat("[0-9]", rest, rest)}, " "));
  }
  if (!hi_full)
    alternatives.push_back(
        join_nonempty({gbnf_literal(hi.substr(p, 1)), digits_between(std::string(rest, '0'), hi_rest)}, " "));
  const std::string prefix = p ? gbnf_literal(lo.substr(0, p)) + " " : "";
  if (alternatives.size() == 1) return prefix + alternatives[0];
  return prefix + std::string("(").append(join_nonempty(alternatives, " | ")).append(")");
}

// Decimal numerals without sign or leading zeros from `lo` to `hi` (no hi:
// unbounded), as alternatives.
std::string unsigned_between(uint64_t lo, std::optional<uint64_t> hi) {
  const std::string lo_text = std::to_string(lo);
  const size_t last_length = hi ? std::to_string(*hi).size() : lo_text.size();
  std::vector<std::string> alternatives;
  for (size_t length = lo_text.size(); length <= last_length; ++length) {
    const std::string from = length == lo_text.size() ? lo_text : std::string("1").append(length - 1, '0');
    const std::string to = hi && length == last_length ? std::to_string(*hi) : std::string(length, '9');
    alternatives.push_back(digits_between(from, to));
  }
  if (!hi) alternatives.push_back("[1-9] " + gbnf_repeat("[0-9]", lo_text.size(), std::nullopt));
  return join_nonempty(alternatives, " | ");
}

uint64_t magnitude(int64_t v) { return v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v); }

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alternatives;
  const int64_t negative_hi = hi ? std::min<int64_t>(*hi, -1) : -1;
  if (!lo || *lo <= negative_hi) {
    alternatives.push_back(
        "\"-\" (" + unsigned_between(magnitude(negative_hi), lo ? std::optional(magnitude(*lo)) : std::nullopt) + ")");
  }
  if (!hi || *hi >= 0) {
    const int64_t from = lo ? std::max<int64_t>(*lo, 0) : 0;
    alternatives.push_back(
        unsigned_between(static_cast<uint64_t>(from), hi ? std::optional(static_cast<uint64_t>(*hi)) : std::nullopt));
  }
  return join_nonempty(alternatives, " | ");
}

}  // namespace omnibus
