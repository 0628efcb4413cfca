// The prompts a benchmark sends: conversations of one or more user turns
// (each turn carries the history before it, including the server's actual
// answers). Kinds:
//   random         unique random-word prompts of ~input_len tokens
//   shared-prefix  num_prefixes system prompts of prefix_len tokens, shared
//                  round-robin by all requests, each with its own question
//   multi-turn     `turns` turns per conversation, each of input_len tokens
//   long-doc       one document of doc_len tokens, many questions over it
//   code           repetitive source code to continue (code completion)
//   jsonl          the user's own: one JSON object per line, with "prompt"
//                  (text), "messages" (chat list) or "turns" (list of user
//                  texts, optional "system"), and optional "max_tokens"
// Token lengths are measured with a TokenCounter (the server's /tokenize
// where it has one), so "256 tokens" means 256 of the server's tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/openai_client.h"

namespace omnibus::bench {

enum class WorkloadKind { kRandom, kSharedPrefix, kMultiTurn, kLongDoc, kCode, kJsonl };

Result<WorkloadKind> parse_workload_kind(const std::string& name);
const char* workload_kind_name(WorkloadKind kind);

struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kRandom;
  int64_t input_len = 256;   // tokens of each user turn (the question, for shared-prefix / long-doc)
  int64_t output_len = 64;   // max_tokens of each turn
  double len_jitter = 0;     // lengths drawn uniformly in [1 - j, 1 + j] × the given ones
  int64_t num_prefixes = 4;  // shared-prefix
  int64_t prefix_len = 1000; // shared-prefix
  int64_t turns = 3;         // multi-turn
  int64_t doc_len = 2000;    // long-doc
  std::string dataset;       // jsonl: the file
  uint64_t seed = 1;
  // Draws new conversations over the same shared material: the system prompts
  // and the document depend on `seed` alone, the questions and turns on
  // `seed` and `variant`. Warm-up and each sweep run use their own variant, so
  // they warm (and reuse) the shared prefixes but never repeat a whole prompt.
  uint64_t variant = 0;
};

Status validate(const WorkloadSpec& spec);

struct Turn {
  std::string user;
  int64_t max_tokens = 64;
  int64_t user_tokens = 0;  // measured length of `user` (0: unknown)
};

struct Conversation {
  std::string system;  // empty: no system message
  int64_t system_tokens = 0;
  std::vector<Turn> turns;
};

// Counts tokens of a text (e.g. through the server's /tokenize).
using TokenCounter = std::function<int64_t(const std::string&)>;

// A rough count for servers without /tokenize: ~4 bytes a token.
int64_t estimate_tokens(const std::string& text);

// `count` conversations (for jsonl: the file's entries, repeated to reach
// `count`). Same spec and seed, same conversations.
Result<std::vector<Conversation>> make_workload(const WorkloadSpec& spec, int64_t count, const TokenCounter& counter);

// The messages of turn `turn` of `c`, given the answers to the turns before.
std::vector<Message> messages_for_turn(const Conversation& c, size_t turn, const std::vector<std::string>& answers);

}  // namespace omnibus::bench
