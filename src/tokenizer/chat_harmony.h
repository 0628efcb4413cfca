// OpenAI's harmony chat format (gpt-oss), as its chat template writes it
// for conversations without tools (llama.cpp's models/templates/
// openai-gpt-oss-120b.jinja, the same text as the model's own template):
//
//   <|start|>system<|message|>{model identity, knowledge cutoff, current
//     date, "Reasoning: {effort}", the valid channels}<|end|>
//   <|start|>developer<|message|># Instructions\n\n{first system or
//     developer message}\n\n<|end|>                      (when there is one)
//   <|start|>user<|message|>{content}<|end|>
//   <|start|>assistant<|channel|>final<|message|>{content}<|end|>
//   ...
//   <|start|>assistant                              (the generation prompt)
//
// Earlier turns' thoughts are dropped; a conversation that ends with an
// assistant turn and no generation prompt writes that turn's thoughts as an
// analysis message and ends with <|return|> (the training form). Roles
// other than user and assistant after the first message are left out, as
// the template leaves them (tool messages need tool calls, which omnibus
// does not serve yet).
//
// The model answers in the same frame: "<|channel|>analysis<|message|>
// {thoughts}<|end|><|start|>assistant<|channel|>final<|message|>{answer}"
// and <|return|> (server/harmony_splitter.h takes it apart).
#pragma once

#include <string>
#include <vector>

#include "tokenizer/chat_template.h"

namespace omnibus {

// The template's reasoning efforts, "medium" its default.
bool valid_reasoning_effort(std::string_view effort);

std::string render_harmony(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                           const ChatRenderOptions& options);

}  // namespace omnibus
