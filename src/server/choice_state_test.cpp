// ChoiceState folds engine events into deltas and a whole choice.
#include <gtest/gtest.h>

#include "server/choice_state.h"
#include "server/fake_inference_service.h"

namespace omnibus::server {
namespace {

StreamEvent token_event(const Tokenizer& tok, const std::string& piece_text, float logprob,
                        std::vector<TokenLogprob> top = {}) {
  StreamEvent e;
  e.text = piece_text;
  for (int32_t id : tok.encode(piece_text, false, false)) {
    e.tokens.push_back(GeneratedToken{id, logprob, top});
  }
  return e;
}

TEST(ChoiceStateTest, DeltasAndTheWholeChoiceWithEcho) {
  auto tok = testing::make_test_tokenizer();
  ChoiceState c(3, *tok, /*logprobs=*/true, "Say: ");
  ChoiceOutput d1 = c.apply(token_event(*tok, "Hello", -0.5f, {{tok->token_id("Hello"), -0.5f}, {'x', -3.0f}}));
  EXPECT_EQ(d1.index, 3);
  EXPECT_EQ(d1.text, "Hello");
  ASSERT_TRUE(d1.logprobs.has_value());
  ASSERT_EQ(d1.logprobs->size(), 1u);
  EXPECT_EQ((*d1.logprobs)[0].chosen.token, "Hello");
  EXPECT_EQ((*d1.logprobs)[0].text_offset, 5);  // after the echoed "Say: "
  ASSERT_EQ((*d1.logprobs)[0].top.size(), 2u);
  EXPECT_EQ((*d1.logprobs)[0].top[1].token, "x");
  EXPECT_TRUE(d1.finish_reason.empty());
  EXPECT_TRUE(c.has_tokens());
  EXPECT_EQ(c.completion_tokens(), 1);  // seen so far

  StreamEvent last = token_event(*tok, " world", -1.0f);
  last.finished = true;
  last.finish_reason = "length";
  last.completion_tokens = 3;  // the engine's count wins (e.g. a stop string's token)
  last.cached_tokens = 16;
  EXPECT_EQ(c.cached_tokens(), 0);
  ChoiceOutput d2 = c.apply(last);
  EXPECT_EQ(d2.finish_reason, "length");
  EXPECT_EQ((*d2.logprobs)[0].text_offset, 10);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.completion_tokens(), 3);
  EXPECT_EQ(c.cached_tokens(), 16);

  // Anything after the finished event is ignored.
  ChoiceOutput late = c.apply(token_event(*tok, "!", -1.0f));
  EXPECT_TRUE(late.text.empty());

  const ChoiceOutput all = c.full_output();
  EXPECT_EQ(all.text, "Say: Hello world");
  EXPECT_EQ(all.finish_reason, "length");
  ASSERT_EQ(all.logprobs->size(), 2u);
}

TEST(ChoiceStateTest, ErrorsAndCancellationHaveNoOpenAiReason) {
  auto tok = testing::make_test_tokenizer();
  ChoiceState c(0, *tok, /*logprobs=*/false, "");
  StreamEvent e;
  e.finished = true;
  e.finish_reason = "error";
  e.error = "out of memory";
  const ChoiceOutput d = c.apply(e);
  EXPECT_TRUE(d.finish_reason.empty());
  EXPECT_FALSE(d.logprobs.has_value());
  EXPECT_EQ(c.finish_reason(), "error");
  EXPECT_EQ(c.error(), "out of memory");
  EXPECT_EQ(openai_finish_reason("cancelled"), "");
  EXPECT_EQ(openai_finish_reason("stop"), "stop");

  ChoiceState z(1, *tok, false, "echo");
  z.finish_without_generating();
  EXPECT_TRUE(z.finished());
  EXPECT_EQ(z.full_output().finish_reason, "length");
  EXPECT_EQ(z.full_output().text, "echo");
}

TEST(ChoiceStateTest, ControlTokensShowByNameButDoNotMoveOffsets) {
  auto tok = testing::make_test_tokenizer();
  ChoiceState c(0, *tok, /*logprobs=*/true, "");
  StreamEvent e;
  e.tokens.push_back(GeneratedToken{tok->token_id("<|im_end|>"), -0.1f, {}});
  e.tokens.push_back(GeneratedToken{'A', -0.2f, {}});
  e.text.push_back('A');  // (= "A" trips a GCC 12 -Wrestrict false positive)
  const ChoiceOutput d = c.apply(e);
  ASSERT_EQ(d.logprobs->size(), 2u);
  EXPECT_EQ((*d.logprobs)[0].chosen.token, "<|im_end|>");
  EXPECT_EQ((*d.logprobs)[1].text_offset, 0);
}

}  // namespace
}  // namespace omnibus::server
