#include "bench/text_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace omnibus::bench {
namespace {

constexpr std::array<const char*, 96> kWords = {
    "time",    "year",    "people",  "way",     "day",      "man",     "thing",   "woman",   "life",    "child",
    "world",   "school",  "state",   "family",  "student",  "group",   "country", "problem", "hand",    "part",
    "place",   "case",    "week",    "company", "system",   "program", "question","work",    "number",  "night",
    "point",   "home",    "water",   "room",    "mother",   "area",    "money",   "story",   "fact",    "month",
    "lot",     "right",   "study",   "book",    "eye",      "job",     "word",    "business","issue",   "side",
    "kind",    "head",    "house",   "service", "friend",   "father",  "power",   "hour",    "game",    "line",
    "end",     "member",  "law",     "car",     "city",     "name",    "team",    "minute",  "idea",    "kid",
    "body",    "back",    "parent",  "face",    "others",   "level",   "office",  "door",    "health",  "person",
    "art",     "war",     "history", "party",   "result",   "change",  "morning", "reason",  "research","girl",
    "guy",     "moment",  "air",     "teacher", "force",    "education"};

constexpr std::array<const char*, 8> kNames = {"price", "weight", "score", "count", "length", "speed", "total", "rate"};

}  // namespace

std::pair<std::string, int64_t> TextSource::fit(int64_t tokens, double& units_per_token,
                                                 const std::function<std::string(int64_t)>& make) {
  int64_t units = std::max<int64_t>(1, std::llround(static_cast<double>(tokens) * units_per_token));
  std::string best_text;
  int64_t best_tokens = -1;
  const int64_t tolerance = std::max<int64_t>(1, tokens / 50);
  for (int attempt = 0; attempt < 6; ++attempt) {
    std::string text = make(units);
    const int64_t got = std::max<int64_t>(1, counter_(text));
    if (best_tokens < 0 || std::llabs(got - tokens) < std::llabs(best_tokens - tokens)) {
      best_text = text;
      best_tokens = got;
    }
    units_per_token = static_cast<double>(units) / static_cast<double>(got);
    if (std::llabs(got - tokens) <= tolerance) break;
    const int64_t next = std::max<int64_t>(1, std::llround(static_cast<double>(tokens) * units_per_token));
    units = next == units ? units + (got < tokens ? 1 : -1) : next;
    if (units < 1) break;
  }
  return {std::move(best_text), best_tokens};
}

std::pair<std::string, int64_t> TextSource::words_of_tokens(int64_t tokens, const std::string& lead) {
  // One word sequence per call; fitting uses prefixes of it.
  std::vector<const char*> words;
  std::uniform_int_distribution<size_t> pick(0, kWords.size() - 1);
  auto make = [&](int64_t n) {
    while (static_cast<int64_t>(words.size()) < n) words.push_back(kWords[pick(rng_)]);
    std::string text = lead;
    for (int64_t i = 0; i < n; ++i) {
      if (!text.empty()) text += ' ';
      text += words[static_cast<size_t>(i)];
    }
    return text;
  };
  return fit(tokens, words_per_token_, make);
}

std::pair<std::string, int64_t> TextSource::code_of_tokens(int64_t tokens, int64_t variant) {
  const std::string name = kNames[static_cast<size_t>(variant) % kNames.size()];
  auto make = [&](int64_t functions) {
    std::string text = fmt::format("# Helpers for {} (module {}).\n\n", name, variant);
    for (int64_t k = 0; k < functions; ++k) {
      text += fmt::format(
          "def scaled_{0}_{1}(values, scale={1}):\n"
          "    total = 0\n"
          "    for value in values:\n"
          "        total += value * scale\n"
          "    return total\n\n",
          name, k);
    }
    text += fmt::format("def scaled_{0}_{1}(values, scale={1}):\n    total = 0\n", name, functions);
    return text;
  };
  return fit(tokens, functions_per_token_, make);
}

}  // namespace omnibus::bench
