#include "cli/sampling_flags.h"

#include <map>
#include <random>
#include <string>

namespace omnibus::cli {

void add_generation_flags(CLI::App& cmd, GenerationFlags& f) {
  SamplingParams& s = f.options.sampling;
  cmd.add_option("-n,--n-predict", f.options.max_tokens, "Tokens to generate (-1: until EOS or the context is full)")
      ->capture_default_str();
  cmd.add_option("-c,--ctx-size", f.context, "Context size in tokens")->capture_default_str()->check(CLI::Range(16, 1 << 20));
  cmd.add_option("--temp", s.temperature, "Temperature (0: greedy)")->capture_default_str();
  cmd.add_option("--top-k", s.top_k, "Top-k (0: off)")->capture_default_str();
  cmd.add_option("--top-p", s.top_p, "Top-p (1: off)")->capture_default_str();
  cmd.add_option("--min-p", s.min_p, "Min-p (0: off)")->capture_default_str();
  cmd.add_option("--repeat-penalty", s.repetition_penalty, "Repetition penalty (1: off)")->capture_default_str();
  cmd.add_option("--repeat-last-n", s.penalty_last_n, "Tokens the repetition penalty looks back")->capture_default_str();
  cmd.add_option("--presence-penalty", s.presence_penalty, "Presence penalty")->capture_default_str();
  cmd.add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty")->capture_default_str();
  cmd.add_option("-s,--seed", f.seed, "Random seed (-1: random)")->capture_default_str();
  cmd.add_flag("--ignore-eos", f.options.ignore_eos, "Keep generating past end-of-sequence tokens");
  cmd.add_option("--stop", f.stop, "Stop string (repeatable); not printed");
  cmd.add_option("--chat-template", f.chat_template,
                 "Chat template: chatml, llama3, llama2, mistral, mistral-v7, mistral-v7-tekken, gemma, qwen3, "
                 "qwen3-thinking, phi3, phi4-mini, phi4, gpt-oss");
  add_speculation_flags(cmd, f.options.speculation);
}

void add_speculation_flags(CLI::App& cmd, SpeculationOptions& o) {
  const std::map<std::string, DraftSource> sources = {{"none", DraftSource::kNone}, {"ngram", DraftSource::kNgram}};
  cmd.add_option("--draft", o.source,
                 "Speculative decoding: 'ngram' guesses the next tokens from earlier text (prompt lookup) and checks "
                 "them in one step; same output, fewer steps when text repeats (default none)")
      ->transform(CLI::CheckedTransformer(sources, CLI::ignore_case));
  cmd.add_flag("!--draft-all", o.adaptive,
               "Run every guess, always (default: only as many as pay at the measured acceptance and row cost)");
  cmd.add_option("--draft-max", o.max_draft, "Most tokens guessed per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd.add_option("--ngram-min", o.ngram.min_ngram, "Shortest run of recent tokens a guess must match")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  cmd.add_option("--ngram-max", o.ngram.max_ngram, "Longest run of recent tokens tried first")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
}

uint64_t resolve_seed(GenerationFlags& f) {
  uint64_t seed = f.seed >= 0 ? static_cast<uint64_t>(f.seed) : std::random_device{}();
  f.options.sampling.seed = seed;
  return seed;
}

}  // namespace omnibus::cli
