#include "tokenizer/chat_template_tools.h"

namespace omnibus::tokenizer_internal {
namespace {

// The template's text around the tool list, byte for byte.
constexpr std::string_view kToolsIntro =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
    "function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsOutro =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

void append_system(const std::vector<ChatMessage>& messages, const std::string& default_system,
                   const ChatRenderOptions& options, std::string& out) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  const std::string& system = has_system ? messages[0].content : default_system;
  if (options.tools_json.empty()) {
    if (!system.empty()) out.append("<|im_start|>system\n").append(system).append("<|im_end|>\n");
    return;
  }
  out.append("<|im_start|>system\n");
  // Qwen2.5 always has a system text (its default); with none, the block
  // opens the message as in Qwen3's template.
  if (!system.empty()) out.append(system).append("\n\n");
  out.append(kToolsIntro);
  for (const std::string& tool : options.tools_json) out.append("\n").append(tool);
  out.append(kToolsOutro);
}

void append_calls(const ChatMessage& m, std::string& out) {
  out.append("<|im_start|>assistant");
  if (!m.content.empty()) out.append("\n").append(m.content);
  for (const ChatToolCall& call : m.tool_calls) {
    out.append("\n<tool_call>\n{\"name\": \"").append(call.name).append("\", \"arguments\": ");
    out.append(call.arguments_json).append("}\n</tool_call>");
  }
  out.append("<|im_end|>\n");
}

}  // namespace

bool chatml_needs_tools(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) {
  if (!options.tools_json.empty()) return true;
  for (const ChatMessage& m : messages) {
    if (!m.tool_calls.empty()) return true;
  }
  return false;
}

std::string render_chatml_tools(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                const std::string& default_system, const ChatRenderOptions& options) {
  std::string out;
  append_system(messages, default_system, options, out);
  const size_t n = messages.size();
  for (size_t i = 0; i < n; ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system" && i == 0) continue;  // written above
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      append_calls(m, out);
    } else if (m.role == "tool") {
      // Consecutive results share one user turn.
      if (i == 0 || messages[i - 1].role != "tool") out.append("<|im_start|>user");
      out.append("\n<tool_response>\n").append(m.content).append("\n</tool_response>");
      if (i + 1 == n || messages[i + 1].role != "tool") out.append("<|im_end|>\n");
    } else {
      out.append("<|im_start|>").append(m.role).append("\n").append(m.content).append("<|im_end|>\n");
    }
  }
  if (add_generation_prompt) out.append("<|im_start|>assistant\n");
  return out;
}

}  // namespace omnibus::tokenizer_internal
