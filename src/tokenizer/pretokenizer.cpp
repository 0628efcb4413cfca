#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <string>

#include "tokenizer/utf8.h"

namespace omnibus::tokenizer_internal {

namespace {

// Unicode White_Space: what llama.cpp's tables call whitespace.
constexpr std::string_view kWhitespace =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
// Letters and digits of Unicode 15.0/15.1 (CJK Ext. H and I, Latin Ext. G,
// Cyrillic Ext. D, Nag Mundari) that an older PCRE2 leaves unassigned.
constexpr std::string_view kExtraLetters =
    "\\x{1DF25}-\\x{1DF2A}\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}";
constexpr std::string_view kExtraDigits = "\\x{1E4F0}-\\x{1E4F9}";

constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr std::string_view kLlama3Pattern =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Pattern =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// o200k's, as llama.cpp rewrites it for its regex engine: the original's
// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]* / [\p{Ll}\p{Lm}\p{Lo}\p{M}]+ become
// "a letter that is not a-z" / "a letter that is not A-Z", and the
// case-insensitive contractions are spelled out. This form is what llama.cpp
// splits by, so it is what omnibus matches (the tests hold llama.cpp's ids);
// its groups are non-capturing here (the same matches; with captures a run
// of 800k capitals took 1.48 s, without 0.37 s).
constexpr std::string_view kGpt4oPattern =
    "[^\\r\\n\\p{L}\\p{N}]?(?:(?=[\\p{L}])[^a-z])*(?:(?=[\\p{L}])[^A-Z])+"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    "|[^\\r\\n\\p{L}\\p{N}]?(?:(?=[\\p{L}])[^a-z])+(?:(?=[\\p{L}])[^A-Z])*"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

std::vector<std::string_view> patterns_for(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::kGpt2:
      return {kGpt2Pattern};
    case PreTokenizerKind::kDigitsThenGpt2:
      return {"\\p{N}", kGpt2Pattern};
    case PreTokenizerKind::kLlama3:
      return {kLlama3Pattern};
    case PreTokenizerKind::kQwen2:
      return {kQwen2Pattern};
    case PreTokenizerKind::kGpt4o: return {kGpt4oPattern};
    case PreTokenizerKind::kDefault:
      break;
  }
  return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2Pattern, "\\p{N}+", "[0-9][0-9][0-9]"};
}

bool name_in(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace

PreTokenizerConfig pre_tokenizer_config(std::string_view pre) {
  PreTokenizerConfig config;
  if (pre.empty() || pre == "default") return config;
  if (name_in(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"})) {
    config.kind = PreTokenizerKind::kLlama3;
    config.ignore_merges = true;
    config.add_bos = true;
  } else if (name_in(pre, {"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"})) {
    config.kind = PreTokenizerKind::kLlama3;
  } else if (name_in(pre, {"qwen2", "deepseek-r1-qwen", "hunyuan"})) {
    config.kind = PreTokenizerKind::kQwen2;
    config.clean_spaces = false;
  } else if (name_in(pre, {"stablelm2", "megrez"})) {
    config.kind = PreTokenizerKind::kQwen2;
  } else if (name_in(pre, {"gpt-4o", "llama4", "kanana2", "talkie"})) {
    config.kind = PreTokenizerKind::kGpt4o;
    config.clean_spaces = false;
  } else if (name_in(pre, {"smollm", "command-r"})) {
    config.kind = PreTokenizerKind::kDigitsThenGpt2;
    config.clean_spaces = false;
  } else if (name_in(pre, {"starcoder", "refact", "codeshell", "exaone", "minerva-7b"})) {
    config.kind = PreTokenizerKind::kDigitsThenGpt2;
  } else if (name_in(pre, {"gpt2", "gpt-2", "phi-2", "mpt", "olmo", "jais", "exaone4", "jina-es", "jina-de",
                           "jina-v2-es", "jina-v2-de", "gigachat", "mellum"})) {
    config.kind = PreTokenizerKind::kGpt2;
  } else {
    config.recognised = false;
  }
  return config;
}

std::string expand_pattern_classes(std::string_view pattern) {
  const std::string letters = std::string("\\p{L}") + std::string(kExtraLetters);
  const std::string digits = std::string("\\p{N}") + std::string(kExtraDigits);
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const std::string_view rest = pattern.substr(i);
      std::string expansion;
      size_t consumed = 0;
      if (rest.starts_with("\\s")) {
        expansion = std::string(kWhitespace), consumed = 2;
      } else if (rest.starts_with("\\S") && !in_class) {
        expansion = "^" + std::string(kWhitespace), consumed = 2;
      } else if (rest.starts_with("\\p{L}")) {
        expansion = letters, consumed = 5;
      } else if (rest.starts_with("\\p{N}")) {
        expansion = digits, consumed = 5;
      }
      if (consumed == 0) {  // another escape: copy it whole
        out.append(pattern.substr(i, 2));
        ++i;
        continue;
      }
      out += in_class ? expansion : "[" + expansion + "]";
      i += consumed - 1;
      continue;
    }
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out.push_back(c);
  }
  return out;
}

// The interpreter's backtracking memory a match may use. JIT matching runs
// on a small fixed stack and, when a long run of letters overflows it (the
// gpt-4o pattern's repeats hold a lookahead, so PCRE2 cannot make them
// possessive), split_with retries in the interpreter, whose heap frames grow
// with the run: 330 MB for 800k capitals. Past this limit the match fails
// and the rest of the piece stays one span, so a hostile prompt costs at
// most this much memory (a run of 40k capitals fits).
constexpr uint32_t kMatchHeapLimitKiB = 16 * 1024;

struct PreTokenizer::Pattern {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Pattern() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(PreTokenizerKind kind) {
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer());
  for (std::string_view source : patterns_for(kind)) {
    const std::string expanded = expand_pattern_classes(source);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto pattern = std::make_unique<Pattern>();
    pattern->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                                  PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    if (pattern->code == nullptr) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(error, message.data(), message.size());
      return Status::internal("pre-tokenizer regex does not compile at offset " + std::to_string(error_offset) +
                              ": " + reinterpret_cast<const char*>(message.data()));
    }
    // JIT is only a speed-up; the interpreter gives the same matches.
    (void)pcre2_jit_compile(pattern->code, PCRE2_JIT_COMPLETE);
    pattern->context = pcre2_match_context_create(nullptr);
    if (pattern->context == nullptr) return Status::internal("pre-tokenizer: out of memory");
    pcre2_set_heap_limit(pattern->context, kMatchHeapLimitKiB);
    pre->patterns_.push_back(std::move(pattern));
  }
  return pre;
}

std::vector<TextSpan> PreTokenizer::split(std::string_view text) const {
  std::vector<TextSpan> spans;
  if (text.empty()) return spans;
  spans.push_back({0, text.size()});
  std::vector<TextSpan> next;
  for (const auto& pattern : patterns_) {
    next.clear();
    split_with(*pattern, text, spans, &next);
    spans.swap(next);
  }
  return spans;
}

void PreTokenizer::split_with(const Pattern& pattern, std::string_view text, const std::vector<TextSpan>& in,
                              std::vector<TextSpan>* out) const {
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(pattern.code, nullptr);
  for (const TextSpan& span : in) {
    // Each piece is its own subject, so a lookahead cannot see past it
    // (llama.cpp matches piece by piece too).
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + span.begin);
    const size_t length = span.end - span.begin;
    size_t pos = 0;
    size_t emitted = 0;  // end of what is already in `out`
    while (pos < length && match != nullptr) {
      int rc = pcre2_match(pattern.code, subject, length, pos, PCRE2_NO_UTF_CHECK, match, pattern.context);
      if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
        // JIT ran out of its stack (very long runs): the interpreter, which
        // backtracks on the heap (up to kMatchHeapLimitKiB), gives the same answer.
        rc = pcre2_match(pattern.code, subject, length, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, match, pattern.context);
      }
      if (rc < 0) break;  // no match, or over the limits: the rest is one span
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
      const size_t begin = ovector[0], end = ovector[1];
      if (end <= begin) {  // an empty match: step over one character
        pos = begin + utf8_lead_length(static_cast<uint8_t>(text[span.begin + begin]));
        continue;
      }
      if (begin > emitted) out->push_back({span.begin + emitted, span.begin + begin});
      out->push_back({span.begin + begin, span.begin + end});
      emitted = pos = end;
    }
    if (emitted < length) out->push_back({span.begin + emitted, span.end});
  }
  pcre2_match_data_free(match);
}

}  // namespace omnibus::tokenizer_internal
