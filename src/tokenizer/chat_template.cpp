#include "tokenizer/chat_template.h"

#include <algorithm>
#include <initializer_list>

#include "tokenizer/chat_harmony.h"
#include "tokenizer/chat_template_tools.h"
#include "tokenizer/utf8.h"

namespace omnibus {

namespace {

// Appends each part; used instead of chains of operator+ (fewer copies, and
// GCC 12 misfires -Wrestrict on "literal" + std::string&&).
void append(std::string* out, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) out->append(p);
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Python's str.isspace(), which Jinja's trim and .strip() use.
bool is_python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

// Python's str.strip() with no argument.
std::string strip(const std::string& s) {
  const std::vector<uint32_t> cps = tokenizer_internal::decode_utf8_lenient(s);
  size_t first = 0, last = cps.size();
  while (first < last && is_python_space(cps[first])) ++first;
  while (last > first && is_python_space(cps[last - 1])) --last;
  if (first == 0 && last == cps.size()) return s;
  std::string out;
  for (size_t i = first; i < last; ++i) tokenizer_internal::append_utf8(cps[i], &out);
  return out;
}

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                          const std::string& default_system, const ChatRenderOptions& options) {
  if (tokenizer_internal::chatml_needs_tools(messages, options))
    return tokenizer_internal::render_chatml_tools(messages, add_generation_prompt, default_system, options);
  std::string out;
  auto turn = [&out](const std::string& role, const std::string& content) {
    append(&out, {"<|im_start|>", role, "\n", content, "<|im_end|>\n"});
  };
  if (!default_system.empty() && !messages.empty() && messages[0].role != "system") turn("system", default_system);
  for (const ChatMessage& m : messages) turn(m.role, m.content);
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                          const std::string& bos) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += bos;
    append(&out, {"<|start_header_id|>", messages[i].role, "<|end_header_id|>\n\n", strip(messages[i].content),
                  "<|eot_id|>"});
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Llama 2 and Mistral both take an optional leading system message out of
// the list; these return it and where the remaining turns start.
size_t split_system(const std::vector<ChatMessage>& messages, const std::string** system) {
  *system = nullptr;
  if (!messages.empty() && messages[0].role == "system") {
    *system = &messages[0].content;
    return 1;
  }
  return 0;
}

std::string render_llama2(const std::vector<ChatMessage>& messages, const std::string& bos,
                          const std::string& eos) {
  const std::string* system = nullptr;
  const size_t first = split_system(messages, &system);
  std::string out;
  for (size_t i = first; i < messages.size(); ++i) {
    std::string content;
    if (i == first && system != nullptr) {
      content.append("<<SYS>>\n").append(*system).append("\n<</SYS>>\n\n");
    }
    content.append(messages[i].content);
    if (messages[i].role == "assistant") {
      append(&out, {" ", strip(content), " ", eos});
    } else {
      append(&out, {bos, "[INST] ", strip(content), " [/INST]"});
    }
  }
  return out;
}

std::string render_mistral(const std::vector<ChatMessage>& messages, const std::string& bos,
                           const std::string& eos) {
  const std::string* system = nullptr;
  const size_t first = split_system(messages, &system);
  std::string out = bos;
  for (size_t i = first; i < messages.size(); ++i) {
    const std::string& content = messages[i].content;
    if (messages[i].role == "assistant") {
      append(&out, {" ", content, eos});
    } else if (i == first && system != nullptr) {
      append(&out, {" [INST] ", *system, "\n\n", content, " [/INST]"});
    } else {
      append(&out, {" [INST] ", content, " [/INST]"});
    }
  }
  return out;
}

std::string render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         const std::string& bos) {
  size_t first = 0;
  std::string first_prefix;
  if (!messages.empty() && messages[0].role == "system") {
    first_prefix = messages[0].content + "\n\n";
    first = 1;
  }
  std::string out = bos;
  for (size_t i = first; i < messages.size(); ++i) {
    const std::string role = messages[i].role == "assistant" ? "model" : messages[i].role;
    append(&out, {"<start_of_turn>", role, "\n", i == first ? std::string_view(first_prefix) : "",
                  strip(messages[i].content), "<end_of_turn>\n"});
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

// Python's str.lstrip('\n'), rstrip('\n') and strip('\n').
std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}
std::string_view strip_newlines(std::string_view s) { return lstrip_newlines(rstrip_newlines(s)); }

bool is_tool_response(std::string_view s) {
  return s.starts_with("<tool_response>") && s.ends_with("</tool_response>");
}

// Qwen3's template without tools: ChatML, where an assistant turn after the
// last real user message (one that is not a tool response) is written with
// its thoughts in a <think> block, and earlier turns without them.
std::string render_qwen3(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         const ChatRenderOptions& options) {
  std::string out;
  const size_t n = messages.size();
  if (n > 0 && messages[0].role == "system")
    append(&out, {"<|im_start|>system\n", messages[0].content, "<|im_end|>\n"});
  size_t last_query = n == 0 ? 0 : n - 1;
  for (size_t i = n; i-- > 0;) {
    if (messages[i].role == "user" && !is_tool_response(messages[i].content)) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0)) {
      append(&out, {"<|im_start|>", m.role, "\n", m.content, "<|im_end|>\n"});
    } else if (m.role == "assistant") {
      std::string_view content = m.content, reasoning;
      if (m.reasoning_content) {
        reasoning = *m.reasoning_content;
      } else if (const size_t close = content.find("</think>"); close != std::string_view::npos) {
        std::string_view before = rstrip_newlines(content.substr(0, close));
        if (const size_t open = before.rfind("<think>"); open != std::string_view::npos)
          before = before.substr(open + 7);
        reasoning = lstrip_newlines(before);
        content = lstrip_newlines(content.substr(content.rfind("</think>") + 8));
      }
      if (i > last_query && (i + 1 == n || !reasoning.empty())) {
        append(&out, {"<|im_start|>assistant\n<think>\n", strip_newlines(reasoning), "\n</think>\n\n",
                      lstrip_newlines(content)});
      } else {
        append(&out, {"<|im_start|>assistant\n", content});
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      append(&out, {"\n<tool_response>\n", m.content, "\n</tool_response>"});
      if (i + 1 == n || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!options.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

// Phi-3 / 3.5 ("<|user|>\nHi<|end|>\n", after BOS) and Phi-4-mini (the same
// without the newlines or BOS); the generation prompt opens the assistant's turn.
std::string render_phi(const std::vector<ChatMessage>& messages, bool add_generation_prompt, const std::string& bos,
                       bool newlines) {
  const std::string_view nl = newlines ? "\n" : "";
  std::string out = newlines ? bos : std::string();
  for (const ChatMessage& m : messages) {
    // Phi-3's templates write only these roles, and Phi-3.5's no empty system message.
    if (newlines && ((m.role != "system" && m.role != "user" && m.role != "assistant") ||
                     (m.role == "system" && m.content.empty())))
      continue;
    append(&out, {"<|", m.role, "|>", nl, m.content, "<|end|>", nl});
  }
  if (add_generation_prompt) append(&out, {"<|assistant|>", nl});
  return out;
}

// Mistral v7 (tekken): BOS, the system message (the conversation's first,
// else the template's default, when it has one), then [INST] turns and
// answers closed by EOS, with no spaces between.
// `space`: Mistral Large 2411's variant, a space after each opening tag and
// before each answer.
std::string render_mistral_v7(const std::vector<ChatMessage>& messages, const std::string& bos, const std::string& eos,
                              const std::string& default_system, bool space) {
  const std::string_view sp = space ? " " : "";
  std::string out = bos;
  size_t first = 0;
  if (!messages.empty() && messages[0].role == "system") {
    append(&out, {"[SYSTEM_PROMPT]", sp, messages[0].content, "[/SYSTEM_PROMPT]"});
    first = 1;
  } else if (!default_system.empty()) {
    append(&out, {"[SYSTEM_PROMPT]", sp, default_system, "[/SYSTEM_PROMPT]"});
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      append(&out, {"[SYSTEM_PROMPT]", sp, m.content, "[/SYSTEM_PROMPT]"});
    } else if (m.role == "assistant") {
      append(&out, {sp, m.content, eos});
    } else {
      append(&out, {"[INST]", sp, m.content, "[/INST]"});
    }
  }
  return out;
}

// Phi-4 (14B): ChatML with <|im_sep|> after the role and no newlines.
std::string render_phi4(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) append(&out, {"<|im_start|>", m.role, "<|im_sep|>", m.content, "<|im_end|>"});
  if (add_generation_prompt) out += "<|im_start|>assistant<|im_sep|>";
  return out;
}

// Undoes the escapes a Jinja string literal may hold (\n, \t, \', \", \\).
std::string unescape_literal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char e = s[++i];
    out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
  }
  return out;
}

// True when `text` is written out inside one string literal: an unescaped
// quote or a brace means it is built from variables (messages[0]['content'])
// instead.
bool is_plain_literal(std::string_view text) {
  if (text.empty()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\') {
      ++i;
    } else if (c == '\'' || c == '"' || c == '{' || c == '}') {
      return false;
    }
  }
  return true;
}

}  // namespace

ChatTemplateKind detect_chat_template(std::string_view src, bool* recognised) {
  if (recognised != nullptr) *recognised = true;
  if (contains(src, "<|start|>") && contains(src, "<|channel|>") && contains(src, "<|message|>"))
    return ChatTemplateKind::kHarmony;
  if (contains(src, "<|im_sep|>")) return ChatTemplateKind::kPhi4;
  if (contains(src, "<|im_start|>")) {
    if (contains(src, "<think>") && contains(src, "enable_thinking")) return ChatTemplateKind::kQwen3;
    // Thinking-only: the generation prompt itself opens the thought.
    if (contains(src, "assistant\\n<think>\\n")) return ChatTemplateKind::kQwen3Thinking;
    return ChatTemplateKind::kChatML;
  }
  if (contains(src, "<|start_header_id|>")) return ChatTemplateKind::kLlama3;
  if (contains(src, "<|assistant|>") && contains(src, "<|end|>")) {
    // Phi-3 writes a newline after each role tag ('|>' + '\n'); Phi-4-mini does not.
    return contains(src, "|>' + '\\n'") || contains(src, "|>\\n'") ? ChatTemplateKind::kPhi3
                                                                   : ChatTemplateKind::kPhi4Mini;
  }
  if (contains(src, "<start_of_turn>")) return ChatTemplateKind::kGemma;
  if (contains(src, "[SYSTEM_PROMPT]")) {
    // Mistral Large 2411 writes '[INST] ' (a space inside the quotes); the tekken templates do not.
    return contains(src, "[INST] '") || contains(src, "[INST] \"") ? ChatTemplateKind::kMistralV7
                                                                   : ChatTemplateKind::kMistralV7Tekken;
  }
  if (contains(src, "[INST]")) {
    return contains(src, "<<SYS>>") ? ChatTemplateKind::kLlama2 : ChatTemplateKind::kMistral;
  }
  if (recognised != nullptr) *recognised = false;
  return ChatTemplateKind::kChatML;
}

Result<ChatTemplateKind> chat_template_from_name(std::string_view name) {
  for (ChatTemplateKind kind :
       {ChatTemplateKind::kChatML, ChatTemplateKind::kLlama3, ChatTemplateKind::kLlama2, ChatTemplateKind::kMistral,
        ChatTemplateKind::kGemma, ChatTemplateKind::kQwen3, ChatTemplateKind::kPhi3, ChatTemplateKind::kPhi4Mini,
        ChatTemplateKind::kMistralV7Tekken, ChatTemplateKind::kMistralV7, ChatTemplateKind::kPhi4,
        ChatTemplateKind::kQwen3Thinking, ChatTemplateKind::kHarmony}) {
    if (name == chat_template_name(kind)) return kind;
  }
  return Status::invalid_argument(
      "unknown chat template '" + std::string(name) +
      "' (expected chatml, llama3, llama2, mistral, gemma, qwen3, qwen3-thinking, phi3, phi4-mini, phi4, "
      "mistral-v7, mistral-v7-tekken or gpt-oss)");
}

const char* chat_template_name(ChatTemplateKind kind) {
  switch (kind) {
    case ChatTemplateKind::kChatML: return "chatml";
    case ChatTemplateKind::kLlama3: return "llama3";
    case ChatTemplateKind::kLlama2: return "llama2";
    case ChatTemplateKind::kMistral: return "mistral";
    case ChatTemplateKind::kGemma: return "gemma";
    case ChatTemplateKind::kQwen3: return "qwen3";
    case ChatTemplateKind::kPhi3: return "phi3";
    case ChatTemplateKind::kPhi4Mini: return "phi4-mini";
    case ChatTemplateKind::kMistralV7Tekken: return "mistral-v7-tekken";
    case ChatTemplateKind::kMistralV7: return "mistral-v7";
    case ChatTemplateKind::kPhi4: return "phi4";
    case ChatTemplateKind::kQwen3Thinking: return "qwen3-thinking";
    case ChatTemplateKind::kHarmony: return "gpt-oss";
  }
  return "chatml";
}

bool chat_template_reasons(ChatTemplateKind kind) {
  return kind == ChatTemplateKind::kQwen3 || kind == ChatTemplateKind::kQwen3Thinking ||
         kind == ChatTemplateKind::kHarmony;
}

bool chat_template_has_tools(ChatTemplateKind kind) { return kind == ChatTemplateKind::kChatML; }

bool chat_template_opens_thought(ChatTemplateKind kind) { return kind == ChatTemplateKind::kQwen3Thinking; }

std::string default_system_message(std::string_view src) {
  // Mistral v7: {%- set default_system_message = '...' %}.
  static constexpr std::string_view kSet = "default_system_message = ";
  if (const size_t at = src.find(kSet); at != std::string_view::npos && at + kSet.size() < src.size()) {
    const char quote = src[at + kSet.size()];
    const std::string_view rest = src.substr(at + kSet.size() + 1);
    for (size_t i = 0; (quote == '\'' || quote == '"') && i < rest.size(); ++i) {
      if (rest[i] == '\\') {
        ++i;
      } else if (rest[i] == quote) {
        // Built from pieces ('... date is ' + today + '...'): not a literal
        // we can reproduce, so none (as llama.cpp's built-in format).
        const size_t next = rest.find_first_not_of(" \t\n", i + 1);
        if (next != std::string_view::npos && rest[next] == '+') return {};
        return unescape_literal(rest.substr(0, i));
      }
    }
  }
  static constexpr std::string_view kOpen = "<|im_start|>system";
  static constexpr std::string_view kClose = "<|im_end|>";
  size_t pos = 0;
  while ((pos = src.find(kOpen, pos)) != std::string_view::npos) {
    pos += kOpen.size();
    // The newline after the role is either a real newline or the escape \n.
    size_t start = pos;
    if (src.substr(start, 1) == "\n") {
      start += 1;
    } else if (src.substr(start, 2) == "\\n") {
      start += 2;
    } else {
      continue;
    }
    const size_t end = src.find(kClose, start);
    if (end == std::string_view::npos) break;
    const std::string_view literal = src.substr(start, end - start);
    if (is_plain_literal(literal)) return unescape_literal(literal);
  }
  return {};
}

std::string render_chat(ChatTemplateKind kind, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const std::string& bos_text, const std::string& eos_text, const std::string& default_system,
                        const ChatRenderOptions& options) {
  switch (kind) {
    case ChatTemplateKind::kChatML: return render_chatml(messages, add_generation_prompt, default_system, options);
    case ChatTemplateKind::kLlama3: return render_llama3(messages, add_generation_prompt, bos_text);
    case ChatTemplateKind::kLlama2: return render_llama2(messages, bos_text, eos_text);
    case ChatTemplateKind::kMistral: return render_mistral(messages, bos_text, eos_text);
    case ChatTemplateKind::kGemma: return render_gemma(messages, add_generation_prompt, bos_text);
    case ChatTemplateKind::kQwen3: return render_qwen3(messages, add_generation_prompt, options);
    case ChatTemplateKind::kPhi3: return render_phi(messages, add_generation_prompt, bos_text, true);
    case ChatTemplateKind::kPhi4Mini: return render_phi(messages, add_generation_prompt, bos_text, false);
    case ChatTemplateKind::kMistralV7Tekken:
      return render_mistral_v7(messages, bos_text, eos_text, default_system, false);
    case ChatTemplateKind::kMistralV7: return render_mistral_v7(messages, bos_text, eos_text, default_system, true);
    case ChatTemplateKind::kPhi4: return render_phi4(messages, add_generation_prompt);
    case ChatTemplateKind::kQwen3Thinking: {
      std::string out = render_qwen3(messages, add_generation_prompt, {});
      if (add_generation_prompt) out += "<think>\n";
      return out;
    }
    case ChatTemplateKind::kHarmony: return render_harmony(messages, add_generation_prompt, options);
  }
  return {};
}

Result<ChatFormat> chat_format_for(const VocabData& vocab, std::string_view override_name) {
  ChatFormat format;
  if (override_name.empty() && vocab.chat_template.empty()) {
    // No template in the file (base models, some conversions): the turn
    // tokens the vocabulary has name the family it was trained with.
    format.recognised = false;
    for (const auto& [token, kind] : {std::pair{"<start_of_turn>", ChatTemplateKind::kGemma},
                                      {"<|channel|>", ChatTemplateKind::kHarmony},
                                      {"<|start_header_id|>", ChatTemplateKind::kLlama3},
                                      {"<|im_start|>", ChatTemplateKind::kChatML}}) {
      if (std::find(vocab.tokens.begin(), vocab.tokens.end(), token) == vocab.tokens.end()) continue;
      format.kind = kind;
      format.recognised = true;
      format.guessed_from = token;
      break;
    }
  } else if (override_name.empty()) {
    format.kind = detect_chat_template(vocab.chat_template, &format.recognised);
  } else {
    OMNIBUS_ASSIGN_OR_RETURN(format.kind, chat_template_from_name(override_name));
  }
  if (format.kind == ChatTemplateKind::kChatML || format.kind == ChatTemplateKind::kMistralV7Tekken ||
      format.kind == ChatTemplateKind::kMistralV7)
    format.default_system = default_system_message(vocab.chat_template);
  auto text_of = [&vocab](int32_t id) {
    return id >= 0 && static_cast<size_t>(id) < vocab.tokens.size() ? vocab.tokens[id] : std::string();
  };
  // A template that writes BOS itself plus a tokenizer that adds one would
  // give two; the tokenizer's wins.
  // A model template that does not write BOS (Phi-3.5's) gets none.
  const bool template_without_bos =
      override_name.empty() && !vocab.chat_template.empty() && !contains(vocab.chat_template, "bos_token");
  if (!vocab.add_bos && !template_without_bos) format.bos_text = text_of(vocab.bos_id);
  format.eos_text = text_of(vocab.eos_id);
  format.extract_reasoning = chat_template_reasons(format.kind);
  return format;
}

std::string render_chat(const ChatFormat& format, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const ChatRenderOptions& options) {
  return render_chat(format.kind, messages, add_generation_prompt, format.bos_text, format.eos_text,
                     format.default_system, options);
}

}  // namespace omnibus
