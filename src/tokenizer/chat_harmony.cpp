#include "tokenizer/chat_harmony.h"

#include <ctime>

namespace omnibus {
namespace {

// The template's strftime_now("%Y-%m-%d"): the local date when rendered.
std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &local);
  return buf;
}

void message(std::string* out, std::string_view header, std::string_view content, std::string_view end) {
  out->append("<|start|>").append(header).append("<|message|>").append(content).append(end);
}

}  // namespace

bool valid_reasoning_effort(std::string_view effort) {
  return effort == "low" || effort == "medium" || effort == "high";
}

std::string render_harmony(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                           const ChatRenderOptions& options) {
  std::string out;
  const std::string date = options.current_date.empty() ? today() : options.current_date;
  const std::string effort = options.reasoning_effort.empty() ? "medium" : options.reasoning_effort;
  message(&out, "system",
          "You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: " +
              date + "\n\nReasoning: " + effort +
              "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.",
          "<|end|>");
  size_t first = 0;
  if (!messages.empty() && (messages[0].role == "system" || messages[0].role == "developer")) {
    // The template writes the block only for a non-empty message.
    if (!messages[0].content.empty())
      message(&out, "developer", "# Instructions\n\n" + messages[0].content + "\n\n", "<|end|>");
    first = 1;
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      message(&out, "user", m.content, "<|end|>");
    } else if (m.role == "assistant") {
      if (i + 1 == messages.size() && !add_generation_prompt) {
        if (m.reasoning_content) message(&out, "assistant<|channel|>analysis", *m.reasoning_content, "<|end|>");
        message(&out, "assistant<|channel|>final", m.content, "<|return|>");
      } else {
        message(&out, "assistant<|channel|>final", m.content, "<|end|>");
      }
    }
  }
  if (add_generation_prompt) out += "<|start|>assistant";
  return out;
}

}  // namespace omnibus
