#include "server/openai_response.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace omnibus::server {
namespace {

using Json = nlohmann::json;

ResponseMeta meta(bool include_usage = false) {
  return ResponseMeta{make_response_id("cmpl", 7), 1764500000, "smol", include_usage};
}

std::vector<GeneratedTokenLogprobs> sample_logprobs() {
  std::vector<GeneratedTokenLogprobs> out(2);
  out[0].chosen = TokenLogprobText{"He", -0.25f};
  out[0].top = {TokenLogprobText{"He", -0.25f}, TokenLogprobText{"Hi", -1.5f}};
  out[1].chosen = TokenLogprobText{"llo", -std::numeric_limits<float>::infinity()};
  out[1].top = {TokenLogprobText{"\xE2\x82", std::nanf("")}};  // a cut UTF-8 character, NaN logprob
  out[1].text_offset = 2;
  return out;
}

TEST(ResponseId, PrefixAndDistinct) {
  std::string a = make_response_id("chatcmpl", 1), b = make_response_id("chatcmpl", 2);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), std::string("chatcmpl-").size() + 24);
  EXPECT_NE(a, b);
}

TEST(CompletionResponse, ShapeAndLogprobs) {
  std::vector<ChoiceOutput> choices(2);
  choices[0] = {0, "Hello", "stop", sample_logprobs(), ""};
  choices[1] = {1, "Hey", "length", std::nullopt, ""};
  Json j = Json::parse(build_completion_response(meta(), choices, Usage{5, 3}));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["created"], 1764500000);
  EXPECT_EQ(j["model"], "smol");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["text"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(j["choices"][1]["logprobs"].is_null());
  const Json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], Json({"He", "llo"}));
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][0].get<double>(), -0.25);
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][1].get<double>(), kMinLogprob);  // -inf made finite
  EXPECT_DOUBLE_EQ(lp["top_logprobs"][0]["Hi"].get<double>(), -1.5);
  EXPECT_EQ(lp["text_offset"], Json({0, 2}));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["usage"]["total_tokens"], 8);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"], Json({{"cached_tokens", 0}}));
}

TEST(ChatResponse, ShapeAndLogprobs) {
  std::vector<ChoiceOutput> choices = {{0, "Hello", "length", sample_logprobs(), ""}};
  Json j = Json::parse(build_chat_response(meta(), choices, Usage{11, 2}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  const Json& content = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["token"], "He");
  EXPECT_EQ(content[0]["bytes"], Json({72, 101}));
  EXPECT_EQ(content[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(content[0]["top_logprobs"][1]["token"], "Hi");
  // A broken UTF-8 piece: replaced in the text, raw in bytes; NaN made finite.
  EXPECT_EQ(content[1]["top_logprobs"][0]["bytes"], Json({0xE2, 0x82}));
  EXPECT_DOUBLE_EQ(content[1]["top_logprobs"][0]["logprob"].get<double>(), kMinLogprob);
  EXPECT_EQ(j["usage"]["total_tokens"], 13);
}

// A reasoning model's thoughts: message.reasoning_content and
// delta.reasoning_content, left out where there are none.
TEST(ChatResponse, ReasoningContent) {
  std::vector<ChoiceOutput> choices = {{0, "4", "stop", std::nullopt, "2 + 2 is 4"},
                                       {1, "5", "stop", std::nullopt, ""}};
  Json j = Json::parse(build_chat_response(meta(), choices, Usage{3, 9}));
  EXPECT_EQ(j["choices"][0]["message"]["content"], "4");
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "2 + 2 is 4");
  EXPECT_FALSE(j["choices"][1]["message"].contains("reasoning_content"));
  Json thinking = Json::parse(build_chat_chunk(meta(), ChoiceOutput{0, "", "", std::nullopt, "hmm"}, false));
  EXPECT_EQ(thinking["choices"][0]["delta"], Json({{"reasoning_content", "hmm"}}));
  Json both = Json::parse(build_chat_chunk(meta(), ChoiceOutput{0, "4", "", std::nullopt, "."}, false));
  EXPECT_EQ(both["choices"][0]["delta"], Json({{"reasoning_content", "."}, {"content", "4"}}));
}

TEST(StreamChunks, CompletionAndChat) {
  Json c = Json::parse(build_completion_chunk(meta(true), ChoiceOutput{0, " wor", "", std::nullopt, ""}));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], " wor");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());

  Json role = Json::parse(build_chat_chunk(meta(), ChoiceOutput{1, "", "", std::nullopt, ""}, true));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["index"], 1);
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(role.contains("usage"));
  Json text = Json::parse(build_chat_chunk(meta(), ChoiceOutput{1, "ld", "", std::nullopt, ""}, false));
  EXPECT_FALSE(text["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(text["choices"][0]["delta"]["content"], "ld");
  Json last = Json::parse(build_chat_chunk(meta(), ChoiceOutput{1, "", "stop", std::nullopt, ""}, false));
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");

  Json usage = Json::parse(build_usage_chunk(meta(true), Usage{4, 9, 2}, true));
  EXPECT_EQ(usage["object"], "chat.completion.chunk");
  EXPECT_TRUE(usage["choices"].is_array() && usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 13);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
}

TEST(Sse, FramingAndErrors) {
  EXPECT_EQ(format_sse("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  ApiError e = ApiError::invalid("n", "'n' must be in [1, 16], got 17");
  Json body = Json::parse(build_error_body(e));
  EXPECT_EQ(body["error"]["message"], "'n' must be in [1, 16], got 17");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "n");
  EXPECT_EQ(body["error"]["code"], "invalid_value");
  ApiError bare;
  bare.message = "bad \xff byte";
  Json bare_body = Json::parse(build_error_body(bare));
  EXPECT_TRUE(bare_body["error"]["param"].is_null());
  EXPECT_TRUE(bare_body["error"]["code"].is_null());
  std::string sse = format_sse_error(e);
  ASSERT_EQ(sse.rfind("data: ", 0), 0u);
  ASSERT_EQ(sse.substr(sse.size() - 2), "\n\n");
  EXPECT_EQ(Json::parse(sse.substr(6))["error"]["param"], "n");
}

}  // namespace
}  // namespace omnibus::server
