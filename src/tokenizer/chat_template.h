// Chat prompts for the common template families, written in C++: we
// recognise a model's Jinja template (tokenizer.chat_template) by its marker
// strings and render the family's format ourselves. Template code from a
// model file is never executed.
//
// Each family reproduces one real template exactly (the tests hold the
// expected strings):
//   kChatML  - "<|im_start|>role\ncontent<|im_end|>\n" (SmolLM2, Qwen, Hermes); with tools
//              or tool calls, as Qwen2.5-Instruct's template writes them
//              (chat_template_tools.h)
//   kLlama3  - Meta-Llama-3-8B-Instruct (content trimmed, BOS before the first turn)
//   kLlama2  - Llama-2-chat ([INST] with <<SYS>> folded into the first user turn)
//   kMistral - Mistral-7B-Instruct v0.1/v0.2 "v1" format (" [INST] ... [/INST]")
//   kGemma   - Gemma 3 (a system message becomes a prefix of the first user turn;
//              without one, identical to Gemma 1/2)
//   kMistralV7Tekken - Mistral's v7 "tekken" format (Mistral Small 3.x,
//              Magistral, Devstral): [SYSTEM_PROMPT]..[/SYSTEM_PROMPT]
//              [INST]..[/INST] without spaces, the template's default
//              system message first
//   kMistralV7 - the same with a space after each tag and before each
//              answer (Mistral Large 2411, Pixtral Large)
//   kPhi4    - Phi-4 (14B): "<|im_start|>role<|im_sep|>content<|im_end|>"
//   kQwen3Thinking - Qwen3's thinking-only models (Qwen3-*-Thinking-2507,
//              QwQ): kQwen3's turns, and the generation prompt opens the
//              thought ("<|im_start|>assistant\n<think>\n") every time
//   kHarmony - OpenAI's harmony format (gpt-oss; tokenizer/chat_harmony.h):
//              <|start|>role<|message|>...<|end|>, the answer in channels
//   kPhi3    - Phi-3 and Phi-3.5 ("<|role|>\ncontent<|end|>\n", BOS first)
//   kPhi4Mini - Phi-4-mini ("<|role|>content<|end|>", no newlines, no BOS)
//   kQwen3   - Qwen3 (ChatML whose assistant turns carry <think> blocks: a
//              reasoning model's thoughts are dropped from turns before the
//              last user message; enable_thinking false writes an empty
//              block into the generation prompt)
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace omnibus {

enum class ChatTemplateKind {
  kChatML,
  kLlama3,
  kLlama2,
  kMistral,
  kGemma,
  kQwen3,
  kPhi3,
  kPhi4Mini,
  kMistralV7Tekken,
  kMistralV7,
  kPhi4,
  kQwen3Thinking,
  kHarmony
};

// A function call an assistant turn made (the API's message.tool_calls).
struct ChatToolCall {
  std::string name;
  // The arguments as the template writes them: JSON text in Python's
  // json.dumps style (", " and ": " separators), as Jinja's tojson gives.
  std::string arguments_json;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool" (others pass through where the format allows)
  std::string content;
  // An assistant turn's thoughts, when the client sent them apart from the
  // content (the API's reasoning_content); without it a reasoning template
  // looks for a <think> block in the content.
  std::optional<std::string> reasoning_content = std::nullopt;
  std::vector<ChatToolCall> tool_calls = {};  // an assistant turn's calls
};

// What a request may ask of the template (the API's chat_template_kwargs).
struct ChatRenderOptions {
  bool enable_thinking = true;  // a reasoning template: false asks the model not to think
  // Harmony's "Reasoning: " line: "low", "medium" (its default) or "high"
  // (the API's reasoning_effort).
  std::string reasoning_effort = {};
  // Harmony's "Current date: " line; "" is today's local date, as the
  // template's strftime_now (tests pass a fixed one).
  std::string current_date = {};
  // The tools the model may call, each as the template writes it (the
  // API's tools[i] in json.dumps style, see ChatToolCall). Only families
  // with a tool format take them (chat_template_has_tools).
  std::vector<std::string> tools_json = {};
};

// The family has a format for tools and tool calls: ChatML, written as
// Qwen2.5-Instruct's template writes them (tools in the system message,
// calls in <tool_call> blocks, results in <tool_response> blocks).
bool chat_template_has_tools(ChatTemplateKind kind);

// The family's models reason: Qwen3's write <think> blocks, harmony's an
// analysis channel (server/harmony_splitter.h).
bool chat_template_reasons(ChatTemplateKind kind);
// Its generation prompt ends inside an open <think> block: the answer
// starts with thoughts and no "<think>" of its own.
bool chat_template_opens_thought(ChatTemplateKind kind);

// The family of a Jinja template, judged by its marker strings. When nothing
// matches, *recognised (if given) is set to false and kChatML is returned.
ChatTemplateKind detect_chat_template(std::string_view jinja_source, bool* recognised);

// The --chat-template override: "chatml", "llama3", "llama2", "mistral", "gemma", "qwen3", "phi3",
// "phi4-mini", "phi4", "mistral-v7", "mistral-v7-tekken", "qwen3-thinking", "gpt-oss".
Result<ChatTemplateKind> chat_template_from_name(std::string_view name);
const char* chat_template_name(ChatTemplateKind kind);

// The system message a ChatML template inserts when the conversation has
// none, read from the template's literal text (SmolLM2: "You are a helpful
// AI assistant named SmolLM, trained by Hugging Face"), or a Mistral v7
// template's `set default_system_message = '...'`; "" when it has none.
std::string default_system_message(std::string_view jinja_source);

// The prompt text. `bos_text` / `eos_text` are the texts of the BOS / EOS
// tokens where the template writes them (pass "" when the tokenizer adds BOS
// itself). `default_system` is inserted as the first message when the
// conversation does not start with a system message (ChatML and Mistral v7,
// the families whose templates do this).
std::string render_chat(ChatTemplateKind kind, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const std::string& bos_text, const std::string& eos_text = "",
                        const std::string& default_system = "", const ChatRenderOptions& options = {});

// Everything a model's chat prompts need, resolved once at load.
struct ChatFormat {
  ChatTemplateKind kind = ChatTemplateKind::kChatML;
  bool recognised = true;       // false: the model's template matched no family (ChatML assumed)
  // The model has no template and the family was guessed from a special
  // token of its vocabulary ("<start_of_turn>" means Gemma); "" otherwise.
  std::string guessed_from;
  std::string default_system;   // see default_system_message()
  std::string bos_text;         // "" when the tokenizer adds BOS itself (add_bos)
  std::string eos_text;
  // The server returns a reasoning family's <think> block as the answer's
  // reasoning_content, apart from its content (serve --reasoning-format:
  // "auto" sets this from the family, "none" clears it).
  bool extract_reasoning = false;
};

// The format for `vocab`: the family named by `override_name` (the
// --chat-template flag; "" to detect it from vocab.chat_template, or, when
// the model has no template, from its vocabulary's turn tokens).
Result<ChatFormat> chat_format_for(const VocabData& vocab, std::string_view override_name);

std::string render_chat(const ChatFormat& format, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const ChatRenderOptions& options = {});

}  // namespace omnibus
