#include "engine/ngram_draft.h"

#include <gtest/gtest.h>

namespace omnibus {
namespace {

std::vector<int32_t> draft_of(const std::vector<int32_t>& history, const NgramDraftOptions& options, int max_tokens) {
  std::vector<int32_t> draft;
  const int n = propose_ngram_draft(history, options, max_tokens, draft);
  EXPECT_EQ(n, static_cast<int>(draft.size()));
  return draft;
}

TEST(NgramDraft, ProposesWhatFollowedTheNewestEarlierOccurrence) {
  NgramDraftOptions o;
  o.min_ngram = 2;
  o.max_ngram = 2;
  // "5 6" occurs at 0 (then 7 8 9) and at 5 (then 1 2 3); the newest wins.
  const std::vector<int32_t> h = {5, 6, 7, 8, 9, 5, 6, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(draft_of(h, o, 3), (std::vector<int32_t>{1, 2, 3}));
}

TEST(NgramDraft, TriesTheLongestSuffixFirst) {
  NgramDraftOptions o;
  o.min_ngram = 1;
  o.max_ngram = 3;
  // The suffix "1 2 3": the 3-gram occurs once (then 40 41); the 1-gram "3"
  // occurs later too (then 50 51), but the longer match wins.
  const std::vector<int32_t> h = {1, 2, 3, 40, 41, 3, 50, 51, 9, 1, 2, 3};
  EXPECT_EQ(draft_of(h, o, 2), (std::vector<int32_t>{40, 41}));
  o.max_ngram = 1;
  EXPECT_EQ(draft_of(h, o, 2), (std::vector<int32_t>{50, 51}));
}

TEST(NgramDraft, NothingWithoutAMatchOrRoom) {
  NgramDraftOptions o;
  EXPECT_TRUE(draft_of({1, 2, 3, 4, 5, 6}, o, 8).empty());
  EXPECT_TRUE(draft_of({}, o, 8).empty());
  EXPECT_TRUE(draft_of({7}, o, 8).empty());
  // A match, but no room asked for.
  EXPECT_TRUE(draft_of({1, 2, 9, 1, 2}, o, 0).empty());
  // min_ngram 2: a lone repeated token is not enough.
  EXPECT_TRUE(draft_of({4, 9, 5, 9}, o, 8).empty());
}

TEST(NgramDraft, ARepeatingPatternProposesItsOwnContinuation) {
  NgramDraftOptions o;
  o.min_ngram = 2;
  o.max_ngram = 2;
  EXPECT_EQ(draft_of({1, 2, 3, 1, 2, 3, 1, 2}, o, 7), (std::vector<int32_t>{3, 1, 2, 3, 1, 2, 3}));
  // One token repeated: the draft repeats it.
  EXPECT_EQ(draft_of({8, 8, 8}, o, 4), (std::vector<int32_t>{8, 8, 8, 8}));
}

TEST(NgramDraft, AppendsAfterWhatIsThere) {
  NgramDraftOptions o;
  std::vector<int32_t> draft = {77};
  const std::vector<int32_t> h = {1, 2, 3, 4, 5, 6, 1, 2};
  EXPECT_EQ(propose_ngram_draft(h, o, 2, draft), 2);
  EXPECT_EQ(draft, (std::vector<int32_t>{77, 3, 4}));
}

TEST(NgramDraft, OptionsAreChecked) {
  NgramDraftOptions o;
  EXPECT_TRUE(validate_ngram_draft_options(o).is_ok());
  o.min_ngram = 0;
  EXPECT_FALSE(validate_ngram_draft_options(o).is_ok());
  o = {};
  o.min_ngram = 3;
  o.max_ngram = 2;
  Status s = validate_ngram_draft_options(o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("--ngram-max"), std::string::npos);
}

}  // namespace
}  // namespace omnibus
