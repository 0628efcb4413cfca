// Each family against the output of its real Jinja template (rendered with
// jinja2 the way transformers' apply_chat_template does) for the same
// system + user + assistant + user conversation.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

namespace omnibus {
namespace {

// The assistant turn has stray whitespace on purpose: some templates trim it.
const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "  Hi there \n"},
    {"user", "Who are you"},
};
const std::vector<ChatMessage> kUserOnly = {{"user", "Hello"}};

// SmolLM2-135M-Instruct's tokenizer.chat_template, as stored in its GGUF.
const std::string kSmolLm2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' "
    "+ message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";
const std::string kLlama3Template =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
const std::string kLlama2Template =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
    "message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + "
    "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
    "{% endfor %}";
const std::string kMistralTemplate =
    "{{- bos_token }}{%- for message in loop_messages %}{%- if message['role'] == 'user' %}{%- if loop.first and "
    "system_message is defined %}{{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}"
    "{%- else %}{{- ' [INST] ' + message['content'] + ' [/INST]' }}{%- endif %}{%- elif message['role'] == "
    "'assistant' %}{{- ' ' + message['content'] + eos_token}}{%- endif %}{%- endfor %}";
const std::string kGemmaTemplate =
    "{{ bos_token }}{%- for message in loop_messages -%}{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if "
    "loop.first else \"\") }}{{ message['content'] | trim }}{{ '<end_of_turn>\n' }}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{'<start_of_turn>model\n'}}{%- endif -%}";

// The markers of Qwen3's template (Qwen3-0.6B to Qwen3-235B-A22B): ChatML
// turns, <think> blocks and the enable_thinking switch.
const std::string kQwen3TemplateExcerpt =
    "{%- if message.reasoning_content is string %}{%- set reasoning_content = message.reasoning_content %}"
    "{{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + "
    "content.lstrip('\\n') }}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking "
    "is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}";

// Phi-3-mini's and Phi-4-mini's templates (their tokenizer_config.json).
const std::string kPhi3Template =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'system') %}{{'<|system|>' + '\\n' + "
    "message['content'] + '<|end|>' + '\\n'}}{% elif (message['role'] == 'user') %}{{'<|user|>' + '\\n' + "
    "message['content'] + '<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}{% elif message['role'] == 'assistant' %}"
    "{{message['content'] + '<|end|>' + '\\n'}}{% endif %}{% endfor %}";
const std::string kPhi4MiniTemplate =
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is "
    "not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' "
    "+ '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}";

// Mistral v7 (tekken), as Mistral Small 3.1 writes it: a default system
// message set in the template (shortened here; escaped quote and newlines).
const std::string kMistralV7Template =
    "{%- set default_system_message = 'You are Mistral Small 3.\\n\\nWhen you\\'re not sure, you say so.' %}{{- "
    "bos_token }}{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}{%- set "
    "loop_messages = messages[1:] %}{%- else %}{%- set system_message = default_system_message %}{%- set "
    "loop_messages = messages %}{%- endif %}{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}{%- for "
    "message in loop_messages %}{%- if message['role'] == 'user' %}{{- '[INST]' + message['content'] + '[/INST]' }}"
    "{%- elif message['role'] == 'system' %}{{- '[SYSTEM_PROMPT]' + message['content'] + '[/SYSTEM_PROMPT]' }}{%- "
    "elif message['role'] == 'assistant' %}{{- message['content'] + eos_token }}{%- endif %}{%- endfor %}";

// Lines of gpt-oss's template (llama.cpp's models/templates/
// openai-gpt-oss-120b.jinja, the same as the model files').
const std::string kHarmonyTemplateExcerpt =
    "{{- \"<|start|>system<|message|>\" }}{{- build_system_message() }}{{- \"<|end|>\" }}"
    "{{- \"<|start|>assistant<|channel|>final<|message|>\" + message.content + \"<|end|>\" }}";

TEST(ChatTemplateTest, DetectsFamiliesFromRealTemplates) {
  bool recognised = false;
  EXPECT_EQ(detect_chat_template(kSmolLm2Template, &recognised), ChatTemplateKind::kChatML);
  EXPECT_TRUE(recognised);
  EXPECT_EQ(detect_chat_template(kLlama3Template, &recognised), ChatTemplateKind::kLlama3);
  EXPECT_EQ(detect_chat_template(kLlama2Template, &recognised), ChatTemplateKind::kLlama2);
  EXPECT_EQ(detect_chat_template(kMistralTemplate, &recognised), ChatTemplateKind::kMistral);
  EXPECT_EQ(detect_chat_template(kGemmaTemplate, &recognised), ChatTemplateKind::kGemma);
  EXPECT_TRUE(recognised);
  EXPECT_EQ(detect_chat_template(kQwen3TemplateExcerpt, &recognised), ChatTemplateKind::kQwen3);
  // Qwen3-*-Thinking-2507 and QwQ: no enable_thinking, the prompt opens the thought.
  EXPECT_EQ(detect_chat_template("{%- if '</think>' in content %}{%- if add_generation_prompt %}{{- "
                                 "'<|im_start|>assistant\\n<think>\\n' }}{%- endif %}",
                                 &recognised),
            ChatTemplateKind::kQwen3Thinking);
  EXPECT_EQ(detect_chat_template(kPhi3Template, &recognised), ChatTemplateKind::kPhi3);
  EXPECT_EQ(detect_chat_template(kPhi4MiniTemplate, &recognised), ChatTemplateKind::kPhi4Mini);
  EXPECT_EQ(detect_chat_template(kMistralV7Template, &recognised), ChatTemplateKind::kMistralV7Tekken);
  EXPECT_EQ(detect_chat_template("{{- '[SYSTEM_PROMPT] ' + m + '[/SYSTEM_PROMPT]' }}{{- '[INST] ' + c + '[/INST]' }}",
                                 &recognised),
            ChatTemplateKind::kMistralV7);
  EXPECT_EQ(detect_chat_template("{{'<|im_start|>user<|im_sep|>' + message['content'] + '<|im_end|>'}}", &recognised),
            ChatTemplateKind::kPhi4);
  EXPECT_TRUE(recognised);
  EXPECT_EQ(detect_chat_template(kHarmonyTemplateExcerpt, &recognised), ChatTemplateKind::kHarmony);
  EXPECT_TRUE(recognised);
  EXPECT_EQ(detect_chat_template("{{ messages }}", &recognised), ChatTemplateKind::kChatML);
  EXPECT_FALSE(recognised);
  EXPECT_EQ(detect_chat_template("", nullptr), ChatTemplateKind::kChatML);
}

TEST(ChatTemplateTest, NamesRoundTrip) {
  for (const char* name : {"chatml", "llama3", "llama2", "mistral", "gemma", "qwen3", "qwen3-thinking", "phi3",
                           "phi4-mini", "phi4", "mistral-v7", "mistral-v7-tekken", "gpt-oss"}) {
    auto kind = chat_template_from_name(name);
    ASSERT_TRUE(kind.is_ok());
    EXPECT_STREQ(chat_template_name(*kind), name);
  }
  EXPECT_EQ(chat_template_from_name("vicuna").status().code(), StatusCode::kInvalidArgument);
}

TEST(ChatTemplateTest, DefaultSystemMessage) {
  EXPECT_EQ(default_system_message(kSmolLm2Template),
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  // Qwen 2.5 style: the system turn built from the conversation comes first,
  // the written-out default (with an escaped newline and quote) after it.
  EXPECT_EQ(default_system_message("{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
                                   "{%- else %}{{- '<|im_start|>system\\nYou\\'re Qwen.<|im_end|>\\n' }}"),
            "You're Qwen.");
  EXPECT_EQ(default_system_message("{{'<|im_start|>' + message['role'] + '\\n' + message['content']}}"), "");
  EXPECT_EQ(default_system_message(kLlama3Template), "");
}

TEST(ChatTemplateTest, ChatMl) {
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, kConversation, true, ""),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\n  Hi there \n<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, kUserOnly, false, ""), "<|im_start|>user\nHello<|im_end|>\n");
}

TEST(ChatTemplateTest, SmolLm2InsertsItsDefaultSystemMessage) {
  const std::string system = default_system_message(kSmolLm2Template);
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, kUserOnly, true, "", "", system),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  // An explicit system message replaces the default.
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, kConversation, true, "", "", system),
            render_chat(ChatTemplateKind::kChatML, kConversation, true, ""));
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, {}, true, "", "", system), "<|im_start|>assistant\n");
}

// Tools as Qwen2.5-Instruct's template writes them (its tokenizer_config.json
// chat_template rendered with jinja2 and json.dumps as tojson).
TEST(ChatTemplateTest, ChatMlWritesToolsAsQwen25) {
  ChatRenderOptions options;
  options.tools_json = {
      R"({"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", )"
      R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, )"
      R"("required": ["city"]}}})",
      R"({"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}})"};
  ChatMessage calls{"assistant", ""};
  calls.tool_calls = {{"get_weather", R"({"city": "Paris", "days": 2})"}, {"now", "{}"}};
  const std::vector<ChatMessage> messages = {
      {"system", "Be brief."}, {"user", "Weather in Paris and the time?"}, calls, {"tool", "sunny"}, {"tool", "12:00"}};
  const std::string intro =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
      "function signatures within <tools></tools> XML tags:\n<tools>\n";
  const std::string outro =
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n";
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, messages, true, "", "", "", options),
            "<|im_start|>system\nBe brief.\n\n" + intro + options.tools_json[0] + "\n" + options.tools_json[1] + outro +
                "<|im_start|>user\nWeather in Paris and the time?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
                "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n"
                "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
                "<tool_response>\nsunny\n</tool_response>\n<tool_response>\n12:00\n</tool_response><|im_end|>\n"
                "<|im_start|>assistant\n");
  // No system message: the default one (Qwen2.5's own, or SmolLM2's) comes first.
  ChatRenderOptions one;
  one.tools_json = {options.tools_json[1]};
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, {messages[1]}, true, "", "",
                        "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", one),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n" + intro +
                one.tools_json[0] + outro +
                "<|im_start|>user\nWeather in Paris and the time?<|im_end|>\n"
                "<|im_start|>assistant\n");
  // Without tools or calls, a tool message is plain ChatML (SmolLM2's template).
  EXPECT_EQ(render_chat(ChatTemplateKind::kChatML, {{"tool", "x"}}, false, ""), "<|im_start|>tool\nx<|im_end|>\n");
  EXPECT_TRUE(chat_template_has_tools(ChatTemplateKind::kChatML));
  EXPECT_FALSE(chat_template_has_tools(ChatTemplateKind::kLlama3));
}

TEST(ChatTemplateTest, Llama3) {
  EXPECT_EQ(render_chat(ChatTemplateKind::kLlama3, kConversation, true, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
            "\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_chat(ChatTemplateKind::kLlama3, kUserOnly, false, ""),
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>");
}

TEST(ChatTemplateTest, Llama2) {
  EXPECT_EQ(render_chat(ChatTemplateKind::kLlama2, kConversation, true, "<s>", "</s>"),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s>"
            "<s>[INST] Who are you [/INST]");
  EXPECT_EQ(render_chat(ChatTemplateKind::kLlama2, kUserOnly, true, "<s>", "</s>"), "<s>[INST] Hello [/INST]");
}

TEST(ChatTemplateTest, Mistral) {
  EXPECT_EQ(render_chat(ChatTemplateKind::kMistral, kConversation, true, "<s>", "</s>"),
            "<s> [INST] You are a helpful assistant\n\nHello [/INST]   Hi there \n</s> [INST] Who are you [/INST]");
  EXPECT_EQ(render_chat(ChatTemplateKind::kMistral, kUserOnly, true, "<s>", "</s>"), "<s> [INST] Hello [/INST]");
}

TEST(ChatTemplateTest, Gemma) {
  EXPECT_EQ(render_chat(ChatTemplateKind::kGemma, kConversation, true, "<bos>"),
            "<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\n"
            "Hi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(render_chat(ChatTemplateKind::kGemma, kUserOnly, true, "<bos>"),
            "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n");
}

// Expected strings: the templates above rendered by jinja2 (bos_token "<s>").
TEST(ChatTemplateTest, MistralV7) {
  const std::string system = default_system_message(kMistralV7Template);
  EXPECT_EQ(system, "You are Mistral Small 3.\n\nWhen you're not sure, you say so.");
  EXPECT_EQ(render_chat(ChatTemplateKind::kMistralV7Tekken, kConversation, true, "<s>", "</s>", system),
            "<s>[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT][INST]Hello[/INST]  Hi there \n</s>"
            "[INST]Who are you[/INST]");
  EXPECT_EQ(render_chat(ChatTemplateKind::kMistralV7Tekken, kUserOnly, true, "<s>", "</s>", system),
            "<s>[SYSTEM_PROMPT]You are Mistral Small 3.\n\nWhen you're not sure, you say so.[/SYSTEM_PROMPT]"
            "[INST]Hello[/INST]");
  // A default built from pieces (Mistral Small 3's: '... The current date is '
  // + today + '...') is not one literal: none, as llama.cpp's built-in format.
  EXPECT_EQ(default_system_message("{%- set default_system_message = 'You are Mistral. The date is ' + today + '.' %}"),
            "");
  // Mistral Large 2411's spaced variant (llama.cpp's "mistral-v7").
  EXPECT_EQ(render_chat(ChatTemplateKind::kMistralV7, kConversation, true, "<s>", "</s>"),
            "<s>[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST]   Hi there \n</s>"
            "[INST] Who are you[/INST]");
  // Mistral Small 3 (2501): no default system message.
  EXPECT_EQ(render_chat(ChatTemplateKind::kMistralV7Tekken, kUserOnly, true, "<s>", "</s>"), "<s>[INST]Hello[/INST]");
}

TEST(ChatTemplateTest, Phi) {
  EXPECT_EQ(render_chat(ChatTemplateKind::kPhi4, kConversation, true, ""),
            "<|im_start|>system<|im_sep|>You are a helpful assistant<|im_end|><|im_start|>user<|im_sep|>Hello<|im_end|>"
            "<|im_start|>assistant<|im_sep|>  Hi there \n<|im_end|><|im_start|>user<|im_sep|>Who are you<|im_end|>"
            "<|im_start|>assistant<|im_sep|>");
  // Phi-3's templates write only system, user and assistant turns, and no empty system message.
  EXPECT_EQ(render_chat(ChatTemplateKind::kPhi3, {{"system", ""}, {"user", "Hi"}, {"tool", "42"}}, true, ""),
            "<|user|>\nHi<|end|>\n<|assistant|>\n");
  EXPECT_EQ(render_chat(ChatTemplateKind::kPhi3, kConversation, true, "<s>"),
            "<s><|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\n  Hi there \n"
            "<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n");
  EXPECT_EQ(render_chat(ChatTemplateKind::kPhi4Mini, kConversation, true, ""),
            "<|system|>You are a helpful assistant<|end|><|user|>Hello<|end|><|assistant|>  Hi there \n<|end|>"
            "<|user|>Who are you<|end|><|assistant|>");
}

// Expected strings: Qwen3's template rendered by jinja2 as transformers'
// apply_chat_template does (trim_blocks, lstrip_blocks).
TEST(ChatTemplateTest, Qwen3) {
  EXPECT_TRUE(chat_template_reasons(ChatTemplateKind::kQwen3));
  EXPECT_FALSE(chat_template_reasons(ChatTemplateKind::kChatML));
  // Without thoughts it is ChatML.
  EXPECT_EQ(render_chat(ChatTemplateKind::kQwen3, kConversation, true, ""),
            render_chat(ChatTemplateKind::kChatML, kConversation, true, ""));
  // Thoughts of turns before the last user message are dropped.
  const std::vector<ChatMessage> history = {
      {"user", "2+2?"}, {"assistant", "<think>\nadd them\n</think>\n\n4"}, {"user", "and 3+3?"}};
  EXPECT_EQ(render_chat(ChatTemplateKind::kQwen3, history, true, ""),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nand 3+3?"
            "<|im_end|>\n<|im_start|>assistant\n");
  // enable_thinking false: an empty thought opens the answer.
  EXPECT_EQ(render_chat(ChatTemplateKind::kQwen3, history, true, "", "", "", {.enable_thinking = false}),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nand 3+3?"
            "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // A last assistant turn after the last user message gets a (here empty) think block.
  const std::vector<ChatMessage> last_assistant = {{"user", "Hi"}, {"assistant", "Hello"}};
  EXPECT_EQ(render_chat(ChatTemplateKind::kQwen3, last_assistant, false, ""),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello<|im_end|>\n");
  // Tool turns: consecutive tool responses share one user turn, and the
  // last real user message is the one before them.
  const std::vector<ChatMessage> tools = {{"user", "weather?"},
                                          {"assistant", "<think>call it</think>checking"},
                                          {"tool", "sunny"},
                                          {"tool", "22C"},
                                          {"assistant", "It is sunny."}};
  EXPECT_EQ(render_chat(ChatTemplateKind::kQwen3, tools, true, ""),
            "<|im_start|>user\nweather?<|im_end|>\n<|im_start|>assistant\n<think>\ncall it\n</think>\n\nchecking"
            "<|im_end|>\n<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\n22C\n"
            "</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nIt is sunny.<|im_end|>\n"
            "<|im_start|>assistant\n");
  // Thinking-only models: the same turns, the generation prompt opens the thought.
  EXPECT_TRUE(chat_template_opens_thought(ChatTemplateKind::kQwen3Thinking));
  EXPECT_EQ(render_chat(ChatTemplateKind::kQwen3Thinking, history, true, ""),
            render_chat(ChatTemplateKind::kQwen3, history, true, "") + "<think>\n");
  // reasoning_content sent apart from the content.
  std::vector<ChatMessage> separate = {{"user", "Q"}, {"assistant", "A"}, {"assistant", "B"}};
  separate[1].reasoning_content = "\nthought\n";
  EXPECT_EQ(render_chat(ChatTemplateKind::kQwen3, separate, true, ""),
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nthought\n</think>\n\nA<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nB<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, ChatFormatFromVocabulary) {
  VocabData v;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.bos_id = 1;
  v.eos_id = 2;
  v.chat_template = kSmolLm2Template;
  auto format = chat_format_for(v, "");
  ASSERT_TRUE(format.is_ok());
  EXPECT_EQ(format->kind, ChatTemplateKind::kChatML);
  EXPECT_TRUE(format->recognised);
  EXPECT_EQ(render_chat(*format, kUserOnly, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");

  // Override by name; BOS text only when the tokenizer does not add BOS itself.
  format = chat_format_for(v, "llama2");
  ASSERT_TRUE(format.is_ok());
  EXPECT_EQ(format->bos_text, "<s>");
  EXPECT_EQ(format->eos_text, "</s>");
  EXPECT_EQ(format->default_system, "");
  EXPECT_EQ(render_chat(*format, kUserOnly, true), "<s>[INST] Hello [/INST]");
  v.add_bos = true;
  format = chat_format_for(v, "llama2");
  EXPECT_EQ(render_chat(*format, kUserOnly, true), "[INST] Hello [/INST]");

  EXPECT_FALSE(chat_format_for(v, "nope").is_ok());
  v.chat_template = "";
  format = chat_format_for(v, "");
  EXPECT_FALSE(format->recognised);
  EXPECT_EQ(format->kind, ChatTemplateKind::kChatML);
}

// No template in the file (Gemma 3 270M base): the vocabulary's turn token
// picks the family; an override still wins.
TEST(ChatTemplateTest, MissingTemplateIsGuessedFromTheVocabularysTurnTokens) {
  VocabData v;
  v.tokens = {"<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"};
  v.bos_id = 2;
  v.eos_id = 1;
  v.add_bos = true;
  auto format = chat_format_for(v, "");
  ASSERT_TRUE(format.is_ok());
  EXPECT_EQ(format->kind, ChatTemplateKind::kGemma);
  EXPECT_TRUE(format->recognised);
  EXPECT_EQ(format->guessed_from, "<start_of_turn>");
  format = chat_format_for(v, "chatml");
  ASSERT_TRUE(format.is_ok());
  EXPECT_EQ(format->kind, ChatTemplateKind::kChatML);
  EXPECT_EQ(format->guessed_from, "");
  v.tokens = {"<unk>", "<|im_start|>", "<|im_end|>"};
  format = chat_format_for(v, "");
  EXPECT_EQ(format->kind, ChatTemplateKind::kChatML);
  EXPECT_EQ(format->guessed_from, "<|im_start|>");
  v.tokens = {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>"};  // gpt-oss's
  format = chat_format_for(v, "");
  EXPECT_EQ(format->kind, ChatTemplateKind::kHarmony);
  EXPECT_EQ(format->guessed_from, "<|channel|>");
  EXPECT_TRUE(format->extract_reasoning);
}

// Expected strings: gpt-oss's template rendered by jinja2 as transformers
// does (trim_blocks, lstrip_blocks; strftime_now giving 2026-12-06), the
// assistant turn with {"thinking": "They greet."} (our reasoning_content).
TEST(ChatTemplateTest, Harmony) {
  const std::string system =
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: "
      "2024-06\nCurrent date: 2026-12-06\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. "
      "Channel must be included for every message.<|end|>";
  std::vector<ChatMessage> conversation = kConversation;
  conversation[2].reasoning_content = "They greet.";
  const ChatRenderOptions day{.current_date = "2026-12-06"};
  EXPECT_EQ(render_chat(ChatTemplateKind::kHarmony, conversation, true, "", "", "", day),
            system +
                "<|start|>developer<|message|># Instructions\n\nYou are a helpful assistant\n\n<|end|><|start|>user"
                "<|message|>Hello<|end|><|start|>assistant<|channel|>final<|message|>  Hi there \n<|end|><|start|>"
                "user<|message|>Who are you<|end|><|start|>assistant");
  // No system message, reasoning effort high.
  EXPECT_EQ(render_chat(ChatTemplateKind::kHarmony, kUserOnly, true, "", "", "",
                        {.reasoning_effort = "high", .current_date = "2026-12-06"}),
            "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge "
            "cutoff: 2024-06\nCurrent date: 2026-12-06\n\nReasoning: high\n\n# Valid channels: analysis, "
            "commentary, final. Channel must be included for every message.<|end|><|start|>user<|message|>Hello"
            "<|end|><|start|>assistant");
  // Ending with the assistant's turn, no generation prompt: its thoughts
  // as an analysis message, then <|return|>.
  const std::vector<ChatMessage> three(conversation.begin(), conversation.begin() + 3);
  EXPECT_EQ(render_chat(ChatTemplateKind::kHarmony, three, false, "", "", "", day),
            system +
                "<|start|>developer<|message|># Instructions\n\nYou are a helpful assistant\n\n<|end|><|start|>user"
                "<|message|>Hello<|end|><|start|>assistant<|channel|>analysis<|message|>They greet.<|end|><|start|>"
                "assistant<|channel|>final<|message|>  Hi there \n<|return|>");
  // A developer message first; a later system message is left out.
  EXPECT_EQ(
      render_chat(ChatTemplateKind::kHarmony,
                  {{"developer", "Be brief"}, {"user", "Hi"}, {"system", "mid"}, {"user", "x"}}, true, "", "", "", day),
      system +
          "<|start|>developer<|message|># Instructions\n\nBe brief\n\n<|end|><|start|>user<|message|>Hi"
          "<|end|><|start|>user<|message|>x<|end|><|start|>assistant");
  EXPECT_TRUE(chat_template_reasons(ChatTemplateKind::kHarmony));
}

TEST(ChatTemplateTest, TrimUsesPythonWhitespace) {
  // Jinja's trim strips Unicode whitespace (U+3000, NBSP) but not other characters.
  const std::vector<ChatMessage> m = {{"user", "\xE3\x80\x80\xC2\xA0 x\t\xE2\x80\x8B\n"}};
  EXPECT_EQ(render_chat(ChatTemplateKind::kLlama3, m, false, ""),
            "<|start_header_id|>user<|end_header_id|>\n\nx\t\xE2\x80\x8B<|eot_id|>");
}

}  // namespace
}  // namespace omnibus
