// Tool calling in the ChatML family, written as Qwen2.5-Instruct's
// template (tokenizer_config.json's chat_template) writes it; internal to
// chat_template.cpp. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/chat_template.h"

namespace omnibus::tokenizer_internal {

// The conversation needs the tool format: tools are given, or a turn made
// tool calls. Otherwise plain ChatML renders it (SmolLM2's template, which
// writes a tool message as a turn of role "tool").
bool chatml_needs_tools(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options);

// Qwen2.5's template: with tools, the system message (the conversation's
// first, else `default_system`) followed by the "# Tools" block; assistant
// calls as <tool_call> blocks; tool results as one user turn of
// <tool_response> blocks.
std::string render_chatml_tools(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                const std::string& default_system, const ChatRenderOptions& options);

}  // namespace omnibus::tokenizer_internal
