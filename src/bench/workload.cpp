#include "bench/workload.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "bench/text_source.h"

namespace omnibus::bench {
namespace {

using Json = nlohmann::json;

int64_t jittered(int64_t length, double jitter, std::mt19937_64& rng) {
  if (jitter <= 0) return length;
  std::uniform_real_distribution<double> scale(1 - jitter, 1 + jitter);
  return std::max<int64_t>(1, std::llround(static_cast<double>(length) * scale(rng)));
}

Turn make_turn(TextSource& text, int64_t input_len, int64_t output_len, const std::string& lead) {
  Turn t;
  t.max_tokens = output_len;
  auto [body, tokens] = text.words_of_tokens(input_len, lead);
  t.user = std::move(body);
  t.user_tokens = tokens;
  return t;
}

Result<Json> parse_line(const std::string& line, size_t line_no, const std::string& path) {
  Json doc = Json::parse(line, nullptr, false);
  if (!doc.is_object()) return Status::invalid_argument(fmt::format("{}:{}: not a JSON object", path, line_no));
  return doc;
}

// One JSONL entry as a conversation.
Result<Conversation> conversation_from_json(const Json& doc, const WorkloadSpec& spec, const std::string& where) {
  Conversation c;
  int64_t max_tokens = spec.output_len;
  if (doc.contains("max_tokens")) {
    if (!doc["max_tokens"].is_number_integer() || doc["max_tokens"].get<int64_t>() < 1) {
      return Status::invalid_argument(fmt::format("{}: 'max_tokens' must be a positive integer", where));
    }
    max_tokens = doc["max_tokens"].get<int64_t>();
  }
  if (doc.contains("system") && doc["system"].is_string()) c.system = doc["system"].get<std::string>();
  if (doc.contains("prompt") && doc["prompt"].is_string()) {
    c.turns.push_back({doc["prompt"].get<std::string>(), max_tokens, 0});
  } else if (doc.contains("turns") && doc["turns"].is_array() && !doc["turns"].empty()) {
    for (const Json& t : doc["turns"]) {
      if (!t.is_string()) return Status::invalid_argument(fmt::format("{}: every entry of 'turns' must be a string", where));
      c.turns.push_back({t.get<std::string>(), max_tokens, 0});
    }
  } else if (doc.contains("messages") && doc["messages"].is_array() && !doc["messages"].empty()) {
    // A chat given whole: everything before the last user message is history.
    std::string history;
    for (const Json& m : doc["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string()) {
        return Status::invalid_argument(fmt::format("{}: each message needs string 'role' and 'content'", where));
      }
      const std::string role = m["role"].get<std::string>();
      const std::string content = m["content"].get<std::string>();
      if (role == "system") {
        c.system = content;
      } else {
        if (!history.empty()) history += "\n\n";
        history += content;
      }
    }
    c.turns.push_back({history, max_tokens, 0});
  } else {
    return Status::invalid_argument(fmt::format("{}: needs a string 'prompt', a 'turns' list or a 'messages' list", where));
  }
  return c;
}

Result<std::vector<Conversation>> read_jsonl(const WorkloadSpec& spec, int64_t count) {
  std::ifstream in(spec.dataset);
  if (!in) return Status::io_error(fmt::format("cannot open dataset '{}'", spec.dataset));
  std::vector<Conversation> entries;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    OMNIBUS_ASSIGN_OR_RETURN(Json doc, parse_line(line, line_no, spec.dataset));
    OMNIBUS_ASSIGN_OR_RETURN(Conversation c, conversation_from_json(doc, spec, fmt::format("{}:{}", spec.dataset, line_no)));
    entries.push_back(std::move(c));
  }
  if (entries.empty()) return Status::invalid_argument(fmt::format("dataset '{}' has no entries", spec.dataset));
  std::vector<Conversation> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(entries[static_cast<size_t>(i) % entries.size()]);
  return out;
}

}  // namespace

Result<WorkloadKind> parse_workload_kind(const std::string& name) {
  for (WorkloadKind k : {WorkloadKind::kRandom, WorkloadKind::kSharedPrefix, WorkloadKind::kMultiTurn,
                         WorkloadKind::kLongDoc, WorkloadKind::kCode, WorkloadKind::kJsonl}) {
    if (name == workload_kind_name(k)) return k;
  }
  return Status::invalid_argument(fmt::format(
      "unknown workload '{}' (know: random, shared-prefix, multi-turn, long-doc, code, jsonl)", name));
}

const char* workload_kind_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kRandom: return "random";
    case WorkloadKind::kSharedPrefix: return "shared-prefix";
    case WorkloadKind::kMultiTurn: return "multi-turn";
    case WorkloadKind::kLongDoc: return "long-doc";
    case WorkloadKind::kCode: return "code";
    case WorkloadKind::kJsonl: return "jsonl";
  }
  return "?";
}

Status validate(const WorkloadSpec& s) {
  auto positive = [](int64_t v, const char* name) {
    return v >= 1 ? Status::ok() : Status::invalid_argument(fmt::format("{} must be >= 1 (got {})", name, v));
  };
  for (Status st : {positive(s.input_len, "--input-len"), positive(s.output_len, "--output-len"),
                    positive(s.num_prefixes, "--num-prefixes"), positive(s.prefix_len, "--prefix-len"),
                    positive(s.turns, "--turns"), positive(s.doc_len, "--doc-len")}) {
    if (!st.is_ok()) return st;
  }
  if (!(s.len_jitter >= 0 && s.len_jitter < 1)) {
    return Status::invalid_argument(fmt::format("--len-jitter must be in [0, 1) (got {})", s.len_jitter));
  }
  if (s.kind == WorkloadKind::kJsonl && s.dataset.empty()) {
    return Status::invalid_argument("the jsonl workload needs --dataset FILE");
  }
  return Status::ok();
}

int64_t estimate_tokens(const std::string& text) { return std::max<int64_t>(1, static_cast<int64_t>(text.size() + 3) / 4); }

Result<std::vector<Conversation>> make_workload(const WorkloadSpec& spec, int64_t count, const TokenCounter& counter) {
  OMNIBUS_RETURN_IF_ERROR(validate(spec));
  if (spec.kind == WorkloadKind::kJsonl) return read_jsonl(spec, count);
  // The shared material draws from a stream of `seed` alone; the questions
  // and turns from their own stream of `seed` and `variant`.
  const uint64_t conversation_seed = spec.seed ^ (spec.variant * 0xd1b54a32d192ed03ULL);
  std::mt19937_64 rng(conversation_seed);
  std::vector<Conversation> shared;  // system prompts shared across conversations
  {
    TextSource shared_text(spec.seed ^ 0x9e3779b97f4a7c15ULL, counter);
    if (spec.kind == WorkloadKind::kSharedPrefix) {
      for (int64_t p = 0; p < spec.num_prefixes; ++p) {
        auto [body, tokens] = shared_text.words_of_tokens(spec.prefix_len, fmt::format("You are assistant {}.", p));
        shared.push_back({std::move(body), tokens, {}});
      }
    } else if (spec.kind == WorkloadKind::kLongDoc) {
      auto [body, tokens] = shared_text.words_of_tokens(spec.doc_len, "Read this document.");
      shared.push_back({std::move(body), tokens, {}});
    }
  }
  TextSource text(conversation_seed ^ 0x7f4a7c159e3779b9ULL, counter);
  std::vector<Conversation> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t in_len = jittered(spec.input_len, spec.len_jitter, rng);
    const int64_t out_len = jittered(spec.output_len, spec.len_jitter, rng);
    Conversation c;
    switch (spec.kind) {
      case WorkloadKind::kRandom:
        c.turns.push_back(make_turn(text, in_len, out_len, fmt::format("Request {}:", i)));
        break;
      case WorkloadKind::kSharedPrefix:
      case WorkloadKind::kLongDoc: {
        const Conversation& s = shared[static_cast<size_t>(i) % shared.size()];
        c.system = s.system;
        c.system_tokens = s.system_tokens;
        c.turns.push_back(make_turn(text, in_len, out_len, fmt::format("Question {}:", i)));
        break;
      }
      case WorkloadKind::kMultiTurn:
        for (int64_t t = 0; t < spec.turns; ++t) {
          c.turns.push_back(make_turn(text, jittered(spec.input_len, spec.len_jitter, rng), out_len,
                                      fmt::format("User {} turn {}:", i, t)));
        }
        break;
      case WorkloadKind::kCode: {
        auto [body, tokens] = text.code_of_tokens(in_len, i);
        c.turns.push_back({std::move(body), out_len, tokens});
        break;
      }
      case WorkloadKind::kJsonl:
        break;  // handled above
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Message> messages_for_turn(const Conversation& c, size_t turn, const std::vector<std::string>& answers) {
  std::vector<Message> messages;
  if (!c.system.empty()) messages.push_back({"system", c.system});
  for (size_t t = 0; t < turn && t < c.turns.size(); ++t) {
    messages.push_back({"user", c.turns[t].user});
    messages.push_back({"assistant", t < answers.size() ? answers[t] : std::string()});
  }
  if (turn < c.turns.size()) messages.push_back({"user", c.turns[turn].user});
  return messages;
}

}  // namespace omnibus::bench
