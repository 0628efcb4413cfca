// GBNF for a range of integers written as JSON writes them, for the
// minimum/maximum keywords of JSON Schema (json_schema_grammar.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace omnibus {

// GBNF alternatives matching exactly the decimal integers from `lo` to `hi`
// (inclusive; an absent bound is unbounded) in JSON syntax: no leading
// zeros, no "+", and no "-0". Empty when lo > hi.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace omnibus
