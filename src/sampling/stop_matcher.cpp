#include "sampling/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace omnibus {
namespace {

// Bytes a sequence starting with this lead byte should have; 0 for a
// continuation byte or a byte that cannot start one.
size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;
}

}  // namespace

size_t incomplete_utf8_tail(std::string_view text) {
  // Look back over at most 3 continuation bytes for the lead byte.
  const size_t look = std::min<size_t>(text.size(), 4);
  for (size_t back = 1; back <= look; ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // continuation byte
    const size_t need = utf8_sequence_length(byte);
    return need > back ? back : 0;
  }
  return 0;
}

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::Step StopMatcher::feed(std::string_view piece) {
  if (stopped_) return {"", true};
  held_.append(piece);
  size_t position = 0;
  size_t stop_index = 0;
  if (find_first_stop(position, stop_index)) {
    stopped_ = true;
    matched_stop_ = stops_[stop_index];
    Step step{held_.substr(0, position), true};
    held_.clear();
    return step;
  }
  const size_t hold = std::max(stop_prefix_tail(), incomplete_utf8_tail(held_));
  const size_t emit = held_.size() - hold;
  Step step{held_.substr(0, emit), false};
  held_.erase(0, emit);
  return step;
}

std::string StopMatcher::finish() {
  std::string rest = std::move(held_);
  held_.clear();
  return rest;
}

bool StopMatcher::find_first_stop(size_t& position, size_t& stop_index) const {
  bool found = false;
  size_t best_end = 0;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = held_.find(stops_[i]);
    if (at == std::string::npos) continue;
    const size_t end = at + stops_[i].size();
    // Earliest end first; at equal ends the earlier start (longer stop).
    if (!found || end < best_end || (end == best_end && at < position)) {
      found = true;
      best_end = end;
      position = at;
      stop_index = i;
    }
  }
  return found;
}

size_t StopMatcher::stop_prefix_tail() const {
  const std::string_view held(held_);
  size_t longest = 0;
  for (const std::string& stop : stops_) {
    const size_t max_len = std::min(stop.size() - 1, held.size());
    for (size_t len = max_len; len > longest; --len) {
      if (held.substr(held.size() - len) == std::string_view(stop).substr(0, len)) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

}  // namespace omnibus
