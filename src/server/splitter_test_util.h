// The reasoning splitters' shared check: an answer fed whole, cut in two at
// every byte, and one byte at a time must split the same way (a tag may
// straddle any boundary). Tests only.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "server/reasoning_splitter.h"

namespace omnibus::server::testing {

// `make()` returns a fresh splitter (ReasoningSplitter, HarmonySplitter).
template <class MakeSplitter>
void expect_split_everywhere(MakeSplitter make, std::string_view text, std::string_view reasoning,
                             std::string_view content) {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    auto s = make();
    ReasoningPiece a = s.feed(text.substr(0, cut)), b = s.feed(text.substr(cut)), c = s.finish();
    EXPECT_EQ(a.reasoning + b.reasoning + c.reasoning, reasoning) << text << " cut at " << cut;
    EXPECT_EQ(a.content + b.content + c.content, content) << text << " cut at " << cut;
  }
  auto s = make();
  std::string r, c;
  for (char ch : text) {
    ReasoningPiece p = s.feed(std::string_view(&ch, 1));
    r += p.reasoning;
    c += p.content;
  }
  ReasoningPiece p = s.finish();
  EXPECT_EQ(r + p.reasoning, reasoning) << text << " byte by byte";
  EXPECT_EQ(c + p.content, content) << text << " byte by byte";
}

}  // namespace omnibus::server::testing
