// What the serving-engine tests share: a byte-level tokenizer for the tiny
// models' 257-token vocabulary, greedy requests, waiting for a stream's
// end, and a set of prompts of awkward lengths with a shared head.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/request_stream.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace omnibus::testing {

// 256 byte tokens and <|end|> (id 256), which ends generation.
inline constexpr int kByteVocab = 257;

inline std::unique_ptr<Tokenizer> byte_tokenizer() {
  VocabData vocab = testing_vocabs::byte_level_vocab({}, {{"<|end|>", TokenType::kControl}});
  vocab.eos_id = kByteVocab - 1;
  vocab.end_of_generation_ids = {kByteVocab - 1};
  auto tok = Tokenizer::create(std::move(vocab));
  return tok.is_ok() ? std::move(tok).value() : nullptr;
}

// Greedy, never stopped by the end token: exactly max_tokens tokens.
inline EngineRequest greedy_request(std::vector<int32_t> prompt, int64_t max_tokens) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  return r;
}

// The stream's events up to and including the final one (at most a minute).
inline std::vector<StreamEvent> wait_for_finish(RequestStream& stream) {
  std::vector<StreamEvent> events;
  for (int waited = 0; waited < 600; ++waited) {
    stream.wait(events, std::chrono::milliseconds(100));
    if (!events.empty() && events.back().finished) break;
  }
  return events;
}

// `count` prompts: every `head_every`-th starts with the same `head`
// tokens, then min_len to min_len + 40 tokens of its own (ids below 250).
inline std::vector<std::vector<int32_t>> mixed_prompts(int count, int head_every, int head, int min_len, int len_step) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> p;
    if (i % head_every == 0)
      for (int j = 0; j < head; ++j) p.push_back((j * 7 + 3) % 200);
    const int len = min_len + (i * len_step) % 41;
    for (int j = 0; j < len; ++j) p.push_back((i * 31 + j * 17) % 250);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace omnibus::testing
