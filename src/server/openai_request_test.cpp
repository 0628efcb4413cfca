#include "server/openai_request.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace omnibus::server {
namespace {

const ApiLimits kLimits;

// The param of the error a completion body gets; "" if it parsed.
std::string completion_error_param(const std::string& body) {
  auto r = parse_completion_request(body, kLimits);
  if (r) return "<ok>";
  EXPECT_EQ(r.error().http_status, 400) << body;
  EXPECT_FALSE(r.error().message.empty()) << body;
  return r.error().param;
}

std::optional<ApiError> error_of(bool chat, const std::string& body) {
  if (chat) {
    auto r = parse_chat_request(body, kLimits);
    if (r) return std::nullopt;
    return r.error();
  }
  auto r = parse_completion_request(body, kLimits);
  if (r) return std::nullopt;
  return r.error();
}

std::string chat_error_param(const std::string& body) {
  auto r = parse_chat_request(body, kLimits);
  if (r) return "<ok>";
  EXPECT_EQ(r.error().http_status, 400) << body;
  EXPECT_FALSE(r.error().message.empty()) << body;
  return r.error().param;
}

TEST(CompletionRequest, DefaultsFollowOpenAI) {
  auto r = parse_completion_request(R"({"model":"smol","prompt":"Hello"})", kLimits);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->options.model, "smol");
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_FALSE(r->prompts[0].is_tokens);
  EXPECT_EQ(r->prompts[0].text, "Hello");
  EXPECT_EQ(r->options.max_tokens, 16);
  EXPECT_EQ(r->options.n, 1);
  EXPECT_FALSE(r->options.stream);
  EXPECT_FALSE(r->options.seed.has_value());
  EXPECT_FALSE(r->echo);
  EXPECT_FALSE(r->options.ignore_eos);
  const SamplingParams& s = r->options.sampling;
  EXPECT_EQ(s.temperature, 1.0f);
  EXPECT_EQ(s.top_p, 1.0f);
  EXPECT_EQ(s.top_k, 0);
  EXPECT_EQ(s.min_p, 0.0f);
  EXPECT_FALSE(s.wants_logprobs());
  EXPECT_TRUE(s.validate(100).is_ok());
}

TEST(CompletionRequest, AllFields) {
  auto r = parse_completion_request(
      R"({"model":"m","prompt":[5,7,33],"echo":true,"max_tokens":7,"temperature":0.25,"top_p":0.5,"top_k":33,
          "min_p":0.125,"seed":-3,"stop":["\n","END"],"presence_penalty":0.5,"frequency_penalty":-1.5,
          "repetition_penalty":1.25,"logit_bias":{"7":-100,"4097":2.5},"logprobs":3,"n":2,"stream":true,
          "stream_options":{"include_usage":true},"user":"x","ignore_eos":true,"unknown_field":[1]})",
      kLimits);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_TRUE(r->prompts[0].is_tokens);
  EXPECT_EQ(r->prompts[0].tokens, (std::vector<int32_t>{5, 7, 33}));
  EXPECT_TRUE(r->echo);
  const GenerationOptions& o = r->options;
  EXPECT_EQ(o.max_tokens, 7);
  EXPECT_EQ(o.n, 2);
  EXPECT_TRUE(o.stream);
  EXPECT_TRUE(o.include_usage);
  EXPECT_TRUE(o.ignore_eos);
  EXPECT_EQ(o.stop, (std::vector<std::string>{"\n", "END"}));
  ASSERT_TRUE(o.seed.has_value());
  EXPECT_EQ(*o.seed, static_cast<uint64_t>(-3));
  EXPECT_EQ(o.sampling.seed, static_cast<uint64_t>(-3));
  EXPECT_FLOAT_EQ(o.sampling.temperature, 0.25f);
  EXPECT_FLOAT_EQ(o.sampling.top_p, 0.5f);
  EXPECT_EQ(o.sampling.top_k, 33);
  EXPECT_FLOAT_EQ(o.sampling.min_p, 0.125f);
  EXPECT_FLOAT_EQ(o.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(o.sampling.frequency_penalty, -1.5f);
  EXPECT_FLOAT_EQ(o.sampling.repetition_penalty, 1.25f);
  EXPECT_EQ(o.sampling.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(o.sampling.logit_bias.at(7), -100.0f);
  EXPECT_FLOAT_EQ(o.sampling.logit_bias.at(4097), 2.5f);
  EXPECT_TRUE(o.sampling.logprobs);
  EXPECT_EQ(o.sampling.top_logprobs, 3);
}

TEST(CompletionRequest, PromptForms) {
  auto one = parse_completion_request(R"({"prompt":["only one"]})", kLimits);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->prompts.size(), 1u);
  EXPECT_EQ(one->prompts[0].text, "only one");
  auto nested = parse_completion_request(R"({"prompt":[[1,2]]})", kLimits);
  ASSERT_TRUE(nested);
  ASSERT_EQ(nested->prompts.size(), 1u);
  EXPECT_EQ(nested->prompts[0].tokens, (std::vector<int32_t>{1, 2}));
  auto single_stop = parse_completion_request(R"({"prompt":"a","stop":"xy","seed":18446744073709551615})", kLimits);
  ASSERT_TRUE(single_stop);
  EXPECT_EQ(single_stop->options.stop, (std::vector<std::string>{"xy"}));
  EXPECT_EQ(*single_stop->options.seed, UINT64_MAX);
  auto nulls = parse_completion_request(R"({"prompt":"a","temperature":null,"stop":null,"max_tokens":0})", kLimits);
  ASSERT_TRUE(nulls);
  EXPECT_EQ(nulls->options.sampling.temperature, 1.0f);
  EXPECT_EQ(nulls->options.max_tokens, 0);
  auto top_p_zero = parse_completion_request(R"({"prompt":"a","top_p":0})", kLimits);
  ASSERT_TRUE(top_p_zero);
  EXPECT_EQ(top_p_zero->options.sampling.top_k, 1);
  EXPECT_TRUE(top_p_zero->options.sampling.validate(10).is_ok());
}

TEST(CompletionRequest, ErrorsNameTheParam) {
  EXPECT_EQ(completion_error_param(R"({"model":"m"})"), "prompt");
  EXPECT_EQ(completion_error_param(R"({"prompt":""})"), "prompt");
  EXPECT_EQ(completion_error_param(R"({"prompt":[]})"), "prompt");
  EXPECT_EQ(completion_error_param(R"({"prompt":["a",""]})"), "prompt[1]");
  EXPECT_EQ(completion_error_param(R"({"prompt":[1,-1]})"), "prompt[1]");
  EXPECT_EQ(completion_error_param(R"({"prompt":[1,"x"]})"), "prompt[1]");
  EXPECT_EQ(completion_error_param(R"({"prompt":7})"), "prompt");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","temperature":"hot"})"), "temperature");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","temperature":2.5})"), "temperature");
  // 1e309 is refused by the JSON parser itself ("number overflow parsing '1e309'").
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","temperature":1e309})"), "");
  EXPECT_NE(parse_completion_request(R"({"prompt":"a","temperature":1e309})", kLimits).error().message.find("1e309"),
            std::string::npos);
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","top_p":1.5})"), "top_p");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","top_k":-2})"), "top_k");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","min_p":-0.1})"), "min_p");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","presence_penalty":3})"), "presence_penalty");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","frequency_penalty":-2.01})"), "frequency_penalty");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","repetition_penalty":0})"), "repetition_penalty");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","max_tokens":-1})"), "max_tokens");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","max_tokens":1.5})"), "max_tokens");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","n":0})"), "n");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","n":17})"), "n");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","stop":["1","2","3","4","5"]})"), "stop");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","stop":["1",2]})"), "stop[1]");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","stop":5})"), "stop");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logit_bias":{"abc":1}})"), "logit_bias");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logit_bias":{"-1":1}})"), "logit_bias");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logit_bias":{"12":101}})"), "logit_bias.12");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logit_bias":[1]})"), "logit_bias");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logprobs":6})"), "logprobs");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logprobs":true})"), "logprobs");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","echo":1})"), "echo");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","stream":"yes"})"), "stream");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","stream_options":{"include_usage":true}})"), "stream_options");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","stream":true,"stream_options":{"include_usage":1}})"),
            "stream_options.include_usage");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","seed":"1"})"), "seed");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","model":3})"), "model");
}

// A list of prompts, as OpenAI takes it: strings or token-id lists (mixed
// too), each its own prompt.
TEST(CompletionRequest, ListOfPrompts) {
  auto r = parse_completion_request(R"({"prompt":["a","bc",[1,2],"d"],"n":3})", kLimits);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->prompts.size(), 4u);
  EXPECT_EQ(r->prompts[1].text, "bc");
  EXPECT_TRUE(r->prompts[2].is_tokens);
  EXPECT_EQ(r->prompts[2].tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r->prompts[3].text, "d");
  auto tokens = parse_completion_request(R"({"prompt":[[1],[2,3]]})", kLimits);
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->prompts.size(), 2u);
  EXPECT_EQ(tokens->prompts[1].tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(completion_error_param(R"({"prompt":["a",5]})"), "prompt[1]");
  EXPECT_EQ(completion_error_param(R"({"prompt":[[1],[]]})"), "prompt[1]");
  EXPECT_EQ(completion_error_param(R"({"prompt":[[1],[2,"x"]]})"), "prompt[1][1]");
  EXPECT_EQ(completion_error_param(R"({"prompt":[[[1]]]})"), "prompt[0][0]");
}

// prompts x n is capped (max_choices): every choice is an engine sequence.
TEST(CompletionRequest, ChoicesOfAllPromptsAreCapped) {
  ApiLimits limits;
  limits.max_choices = 6;
  EXPECT_TRUE(parse_completion_request(R"({"prompt":["a","b","c"],"n":2})", limits));
  auto over = parse_completion_request(R"({"prompt":["a","b","c","d"],"n":2})", limits);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().param, "prompt");
  EXPECT_NE(over.error().message.find("8 choices"), std::string::npos) << over.error().message;
  EXPECT_NE(over.error().message.find("at most 6"), std::string::npos) << over.error().message;
}

// Completions `logprobs` is OpenAI's 0..5, as docs/serving.md says.
TEST(CompletionRequest, LogprobsRangeIsZeroToFive) {
  for (int k : {0, 5}) {
    auto r = parse_completion_request(R"({"prompt":"a","logprobs":)" + std::to_string(k) + "}", kLimits);
    ASSERT_TRUE(r) << k;
    EXPECT_EQ(r->options.sampling.top_logprobs, k);
  }
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logprobs":6})"), "logprobs");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","logprobs":-1})"), "logprobs");
}

// Fields that would change the answer and are not implemented get a 400
// naming them, on both endpoints, rather than being dropped silently.
// (Structured output's fields are accepted: structured_output_test.cpp.)
TEST(UnsupportedFields, AreRefusedWithTheirName) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"functions", R"([{"name":"f"}])"},
      {"function_call", R"("auto")"},
      {"suffix", R"("tail")"},
      {"audio", R"({"voice":"alloy","format":"wav"})"},
      {"modalities", R"(["text","audio"])"},
      {"verbosity", R"("low")"},
      {"web_search_options", R"({})"},
      {"min_tokens", "5"},
      {"stop_token_ids", "[2]"},
      {"include_stop_str_in_output", "true"},
      {"skip_special_tokens", "false"},
      {"use_beam_search", "true"},
      {"guided_regex", R"("a+")"},
      {"structured_outputs", R"({"json":{}})"},
      {"allowed_token_ids", "[1,2]"},
      {"bad_words", R"(["x"])"},
      {"prompt_logprobs", "1"},
      {"typical_p", "0.5"},
      {"mirostat", "2"},
      {"n_predict", "8"},
      {"truncate_prompt_tokens", "4"},
      {"chat_template", R"("{{x}}")"},
      {"continue_final_message", "true"},
      {"best_of", "3"},
  };
  for (const auto& [field, value] : refused) {
    for (bool chat : {false, true}) {
      const std::string body =
          std::string(chat ? R"({"messages":[{"role":"user","content":"Hi"}])" : R"({"prompt":"a")") + ",\"" + field +
          "\":" + value + "}";
      const std::optional<ApiError> e = error_of(chat, body);
      ASSERT_TRUE(e) << body;
      EXPECT_EQ(e->http_status, 400) << body;
      EXPECT_EQ(e->param, field) << body;
      EXPECT_EQ(e->code, "unsupported_parameter") << body;
      EXPECT_NE(e->message.find("not supported"), std::string::npos) << e->message;
    }
  }
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user","content":"Hi"}],"echo":true})"), "echo");
  // Tool calling is chat's (tool_request_test.cpp); completions refuse it.
  for (const char* field : {R"("tools":[{"type":"function","function":{"name":"f"}}])", R"("tool_choice":"auto")",
                            R"("tool_choice":"required")"}) {
    const std::optional<ApiError> e = error_of(false, std::string(R"({"prompt":"a",)") + field + "}");
    ASSERT_TRUE(e) << field;
    EXPECT_EQ(e->code, "unsupported_parameter") << field;
  }
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","n":3,"best_of":2})"), "best_of");  // fewer than n
}

// Neutral values ask for nothing the server does not do, and fields that
// only tune or annotate are ignored: all of these parse.
TEST(UnsupportedFields, NeutralValuesAndTuningFieldsAreAccepted) {
  const std::string neutral =
      R"("response_format":{"type":"text"},"tools":[],"tool_choice":"none","functions":[],"function_call":"none",)"
      R"("suffix":"","modalities":["text"],"audio":null,"min_tokens":0,"stop_token_ids":[],)"
      R"("include_stop_str_in_output":false,"skip_special_tokens":true,"use_beam_search":false,"typical_p":1,)"
      R"("best_of":2,"n":2,"user":"u","metadata":{"k":"v"},"store":false,"service_tier":"auto",)"
      R"("parallel_tool_calls":true,"prediction":{"type":"content","content":"x"},"prompt_cache_key":"k",)"
      R"("safety_identifier":"s","add_generation_prompt":true,"continue_final_message":false,"reasoning_effort":null)";
  auto c = parse_completion_request(R"({"prompt":"a",)" + neutral + "}", kLimits);
  EXPECT_TRUE(c) << c.error().message;
  auto chat = parse_chat_request(R"({"messages":[{"role":"user","content":"Hi"}],)" + neutral + "}", kLimits);
  EXPECT_TRUE(chat) << chat.error().message;
}

// A message's legacy function_call would be dropped from the conversation
// the model sees: refused. Its tool_calls are written by the template
// (tool_request_test.cpp); its `name` is ignored (the templates have no
// place for it).
TEST(UnsupportedFields, MessageFunctionCallIsRefused) {
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"assistant","content":null,
      "tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]})"),
            "<ok>");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user","content":"a"},
      {"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]})"),
            "messages[1].function_call");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"assistant","audio":{"id":"a"}}]})"), "messages[0].audio");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user","content":"a","name":"bob","tool_calls":[]}]})"), "<ok>");
}

// chat_template_kwargs: enable_thinking (a bool) for the reasoning
// templates; any other key, a wrong type, or kwargs on a completion: 400.
TEST(ChatRequest, TemplateKwargsTakeOnlyEnableThinking) {
  const std::string messages = R"({"messages":[{"role":"user","content":"Hi"}])";
  auto on = parse_chat_request(messages + "}", kLimits);
  ASSERT_TRUE(on);
  EXPECT_TRUE(on.value().enable_thinking);
  auto off = parse_chat_request(messages + R"(,"chat_template_kwargs":{"enable_thinking":false}})", kLimits);
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off.value().enable_thinking);
  EXPECT_TRUE(parse_chat_request(messages + R"(,"chat_template_kwargs":null})", kLimits));
  EXPECT_TRUE(parse_chat_request(messages + R"(,"chat_template_kwargs":{}})", kLimits));
  EXPECT_EQ(chat_error_param(messages + R"(,"chat_template_kwargs":{"tools_in_system":true}})"),
            "chat_template_kwargs.tools_in_system");
  EXPECT_EQ(chat_error_param(messages + R"(,"chat_template_kwargs":{"enable_thinking":"no"}})"),
            "chat_template_kwargs.enable_thinking");
  EXPECT_EQ(chat_error_param(messages + R"(,"chat_template_kwargs":[1]})"), "chat_template_kwargs");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","chat_template_kwargs":{"enable_thinking":false}})"),
            "chat_template_kwargs");
}

// reasoning_effort (OpenAI's field, or llama-server's chat_template_kwargs
// one): low, medium or high; the top-level one wins; anything else, or on a
// completion, is a 400.
TEST(ChatRequest, ReasoningEffort) {
  const std::string messages = R"({"messages":[{"role":"user","content":"Hi"}])";
  auto none = parse_chat_request(messages + "}", kLimits);
  ASSERT_TRUE(none);
  EXPECT_EQ(none.value().reasoning_effort, "");
  auto top = parse_chat_request(messages + R"(,"reasoning_effort":"low"})", kLimits);
  ASSERT_TRUE(top) << top.error().message;
  EXPECT_EQ(top.value().reasoning_effort, "low");
  auto kwargs = parse_chat_request(messages + R"(,"chat_template_kwargs":{"reasoning_effort":"high"}})", kLimits);
  ASSERT_TRUE(kwargs) << kwargs.error().message;
  EXPECT_EQ(kwargs.value().reasoning_effort, "high");
  auto both = parse_chat_request(
      messages + R"(,"reasoning_effort":"medium","chat_template_kwargs":{"reasoning_effort":"high"}})", kLimits);
  ASSERT_TRUE(both);
  EXPECT_EQ(both.value().reasoning_effort, "medium");
  EXPECT_EQ(chat_error_param(messages + R"(,"reasoning_effort":"extreme"})"), "reasoning_effort");
  EXPECT_EQ(chat_error_param(messages + R"(,"reasoning_effort":2})"), "reasoning_effort");
  EXPECT_EQ(chat_error_param(messages + R"(,"chat_template_kwargs":{"reasoning_effort":"max"}})"),
            "chat_template_kwargs.reasoning_effort");
  EXPECT_EQ(completion_error_param(R"({"prompt":"a","reasoning_effort":"low"})"), "reasoning_effort");
}

// An assistant turn's reasoning_content comes through for the template
// (Qwen3 writes it in a <think> block); null is none; another type is a 400.
TEST(ChatRequest, AssistantReasoningContent) {
  auto r = parse_chat_request(R"({"messages":[{"role":"user","content":"2+2?"},
      {"role":"assistant","content":"4","reasoning_content":"add"},{"role":"assistant","content":"x",
      "reasoning_content":null},{"role":"user","content":"ok"}]})",
                              kLimits);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value().messages[1].reasoning_content, "add");
  EXPECT_FALSE(r.value().messages[2].reasoning_content.has_value());
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"assistant","content":"4","reasoning_content":5}]})"),
            "messages[0].reasoning_content");
}

TEST(ChatRequest, ParsesMessagesAndParams) {
  auto r = parse_chat_request(
      R"({"model":"m","messages":[{"role":"system","content":"Be brief."},
          {"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]},
          {"role":"assistant","content":null},{"role":"tool","content":"42"}],
          "max_completion_tokens":33,"logprobs":true,"top_logprobs":20})",
      kLimits);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[0].content, "Be brief.");
  EXPECT_EQ(r->messages[1].content, "Hi there");
  EXPECT_EQ(r->messages[2].role, "assistant");
  EXPECT_EQ(r->messages[2].content, "");
  EXPECT_EQ(r->options.max_tokens, 33);
  EXPECT_TRUE(r->options.sampling.logprobs);
  EXPECT_EQ(r->options.sampling.top_logprobs, 20);
  auto d = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}]})", kLimits);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->options.max_tokens.has_value());  // chat: until the context is full
  EXPECT_EQ(d->options.sampling.temperature, 1.0f);
}

TEST(ChatRequest, ErrorsNameTheParam) {
  EXPECT_EQ(chat_error_param(R"({"model":"m"})"), "messages");
  EXPECT_EQ(chat_error_param(R"({"messages":[]})"), "messages");
  EXPECT_EQ(chat_error_param(R"({"messages":{}})"), "messages");
  EXPECT_EQ(chat_error_param(R"({"messages":["hi"]})"), "messages[0]");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"content":"x"}]})"), "messages[0].role");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user","content":"x"},{"role":"wizard","content":"x"}]})"),
            "messages[1].role");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":7,"content":"x"}]})"), "messages[0].role");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user"}]})"), "messages[0].content");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user","content":5}]})"), "messages[0].content");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})"),
            "messages[0].content[0].type");
  EXPECT_EQ(chat_error_param(R"({"messages":[{"role":"user","content":[{"type":"text","text":1}]}]})"),
            "messages[0].content[0].text");
  const std::string ok_msg = R"("messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(chat_error_param("{" + ok_msg + R"(,"top_logprobs":21,"logprobs":true})"), "top_logprobs");
  EXPECT_EQ(chat_error_param("{" + ok_msg + R"(,"top_logprobs":2})"), "top_logprobs");
  EXPECT_EQ(chat_error_param("{" + ok_msg + R"(,"logprobs":3})"), "logprobs");
  EXPECT_EQ(chat_error_param("{" + ok_msg + R"(,"max_tokens":0})"), "max_tokens");
  EXPECT_EQ(chat_error_param("{" + ok_msg + R"(,"max_completion_tokens":"9"})"), "max_completion_tokens");
}

TEST(ParseBody, RejectsBadJsonShapesAndDepth) {
  auto bad = parse_completion_request(R"({"prompt": tru})", kLimits);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "invalid_json");
  EXPECT_NE(bad.error().message.find("column"), std::string::npos) << bad.error().message;
  auto not_object = parse_chat_request("[1,2]", kLimits);
  ASSERT_FALSE(not_object);
  EXPECT_NE(not_object.error().message.find("object"), std::string::npos);
  auto bad_utf8 = parse_completion_request("{\"prompt\":\"a\xC3\x28\"}", kLimits);
  ASSERT_FALSE(bad_utf8);
  EXPECT_EQ(bad_utf8.error().http_status, 400);
  EXPECT_TRUE(parse_completion_request("", kLimits).is_ok() == false);

  // Depth: exactly the limit parses, one more does not.
  auto nest = [](int levels) {
    return R"({"prompt":"a","x":)" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_TRUE(parse_completion_request(nest(kLimits.max_json_depth), kLimits));
  auto deep = parse_completion_request(nest(kLimits.max_json_depth + 1), kLimits);
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().code, "too_deep");
  auto very_deep = parse_completion_request(std::string(100000, '['), kLimits);
  ASSERT_FALSE(very_deep);
  EXPECT_EQ(very_deep.error().code, "too_deep");

  ApiLimits small = kLimits;
  small.max_body_bytes = 10;
  auto big = parse_completion_request(R"({"prompt":"hello world"})", small);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().http_status, 413);
}

TEST(ValidateAgainstModel, VocabAndContext) {
  auto r = parse_completion_request(R"({"prompt":[1,2,3],"max_tokens":5,"logit_bias":{"99":1}})", kLimits);
  ASSERT_TRUE(r);
  const std::vector<int32_t> prompt = r->prompts[0].tokens;
  EXPECT_FALSE(validate_against_model(r->options, prompt, ModelLimits{100, 8}));
  auto small_ctx = validate_against_model(r->options, prompt, ModelLimits{100, 7});
  ASSERT_TRUE(small_ctx);
  EXPECT_EQ(small_ctx->param, "max_tokens");
  EXPECT_EQ(small_ctx->code, "context_length_exceeded");
  auto small_vocab = validate_against_model(r->options, prompt, ModelLimits{99, 8});
  ASSERT_TRUE(small_vocab);
  EXPECT_EQ(small_vocab->param, "logit_bias");
  const std::vector<int32_t> bad_prompt = {1, 100, 2};
  auto bad_id = validate_against_model(r->options, bad_prompt, ModelLimits{100, 8});
  ASSERT_TRUE(bad_id);
  EXPECT_EQ(bad_id->param, "prompt[1]");
  EXPECT_TRUE(validate_against_model(r->options, {}, ModelLimits{100, 8}));
  GenerationOptions unbounded;  // no max_tokens: prompt must leave room for one token
  EXPECT_FALSE(validate_against_model(unbounded, prompt, ModelLimits{100, 4}));
  EXPECT_TRUE(validate_against_model(unbounded, prompt, ModelLimits{100, 3}));
}

}  // namespace
}  // namespace omnibus::server
