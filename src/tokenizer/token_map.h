// A string-keyed hash map that can be searched with a string_view (no copy
// of the key per lookup), used for text → token id and merge → rank.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace omnibus::tokenizer_internal {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using StringIdMap = std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>>;

// The id stored for `key`, or -1.
inline int32_t find_id(const StringIdMap& map, std::string_view key) {
  const auto it = map.find(key);
  return it == map.end() ? -1 : it->second;
}

}  // namespace omnibus::tokenizer_internal
