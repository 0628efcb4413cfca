// ToolCallSplitter: reads the ChatML family's tool calls out of an answer as
// it streams (tool_request.h has the syntax):
//   text <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call> text
// Text outside the calls is content; a whole call block becomes a ToolCall
// once its closing tag arrives (its arguments are not streamed piece by
// piece: a block is only known to be a call when it parses). A block that
// does not parse as {"name": <a known tool>, "arguments": <object>}, or is
// cut off, stays in the content as written, so no text is ever dropped.
// Whitespace between content and a call, and between calls, is dropped (the
// template writes a newline there).
//
// Text comes in arbitrary pieces (a tag may be split across tokens), so a
// piece that could be the start of "<tool_call>", and the whitespace before
// it, are held back until the next piece tells, or until finish().
//
// Not thread-safe: one per choice, used by the thread that serves it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace omnibus::server {

struct ToolCall {
  std::string id;  // "call_" + 24 characters, unique per call
  std::string name;
  std::string arguments;  // compact JSON text of an object
};

struct ToolCallPiece {
  std::string content;  // comes before `calls`
  std::vector<ToolCall> calls;
};

class ToolCallSplitter {
 public:
  // `names`: the tools the request offers (a block naming another is
  // content). `id_seed` makes the call ids (random per request in the
  // server, fixed in tests).
  ToolCallSplitter(std::vector<std::string> names, uint64_t id_seed);

  // The next piece of the answer; returns what can be told apart so far.
  // Content that follows a call in the same piece waits for the next call
  // of feed() or finish(), so a piece's content always precedes its calls.
  ToolCallPiece feed(std::string_view text);
  // The end of the answer: whatever was held back (an unclosed block as
  // content).
  ToolCallPiece finish();

  int calls_made() const { return calls_made_; }

 private:
  void drain(bool final, ToolCallPiece& out);
  bool parse_call(std::string_view body, ToolCall& call);
  std::string next_id();

  std::vector<std::string> names_;
  uint64_t id_state_;
  bool in_call_ = false;
  bool after_call_ = false;  // whitespace after a call is dropped
  std::string pending_;      // text not yet assigned (in a call: the block's body)
  size_t scanned_ = 0;       // in a call: bytes of pending_ already searched for the closing tag
  std::string held_space_;   // whitespace before the current block (back into content if it is no call)
  int calls_made_ = 0;
};

}  // namespace omnibus::server
