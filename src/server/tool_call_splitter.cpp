#include "server/tool_call_splitter.h"

#include <algorithm>
#include <utility>

#include "server/json_fields.h"
#include "server/reasoning_splitter.h"  // partial_tag_suffix

namespace omnibus::server {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
// A call block is parsed as JSON no deeper than this (a model's output, but
// a hostile prompt can steer it).
constexpr int kMaxCallDepth = 64;
constexpr size_t kMaxCallBytes = 8u << 20;
constexpr size_t kMaxHeldSpace = 256;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t trailing_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[s.size() - 1 - n])) ++n;
  return n;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  s.remove_suffix(trailing_space(s));
  return s;
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

ToolCallSplitter::ToolCallSplitter(std::vector<std::string> names, uint64_t id_seed)
    : names_(std::move(names)), id_state_(id_seed) {}

ToolCallPiece ToolCallSplitter::feed(std::string_view text) {
  pending_.append(text);
  ToolCallPiece out;
  drain(false, out);
  return out;
}

ToolCallPiece ToolCallSplitter::finish() {
  ToolCallPiece out;
  drain(true, out);
  return out;
}

std::string ToolCallSplitter::next_id() {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = "call_";
  uint64_t bits = 0;
  for (int i = 0; i < 24; ++i) {
    if (i % 8 == 0) bits = splitmix64(id_state_);
    id.push_back(kAlphabet[bits % kAlphabet.size()]);
    bits /= kAlphabet.size();
  }
  return id;
}

bool ToolCallSplitter::parse_call(std::string_view body, ToolCall& call) {
  ApiResult<OrderedJson> parsed = parse_ordered_json_object(trim(body), kMaxCallDepth, kMaxCallBytes, "tool call");
  if (!parsed) return false;
  const OrderedJson& j = parsed.value();
  if (j.size() != 2 || !j.contains("name") || !j.contains("arguments")) return false;
  const OrderedJson& name = j.at("name");
  const OrderedJson& arguments = j.at("arguments");
  if (!name.is_string() || !arguments.is_object()) return false;
  call.name = name.get<std::string>();
  if (std::find(names_.begin(), names_.end(), call.name) == names_.end()) return false;
  call.arguments = arguments.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  call.id = next_id();
  return true;
}

void ToolCallSplitter::drain(bool final, ToolCallPiece& out) {
  // Content may follow a call in the same piece only at the end (the
  // caller then has no later piece to put it in).
  auto content_may_come = [&] { return final || out.calls.empty(); };
  for (;;) {
    if (in_call_) {
      // Search only the new text (and a tag that may straddle it): a long
      // call fed in small pieces must not be rescanned from its start.
      const size_t close = pending_.find(kClose, scanned_ > kClose.size() ? scanned_ - kClose.size() : 0);
      if (close == std::string::npos) {
        scanned_ = pending_.size();
        if (final) {  // cut off: the block stays text
          out.content.append(held_space_).append(kOpen).append(pending_);
          held_space_.clear();
          pending_.clear();
          in_call_ = false;
        }
        return;
      }
      ToolCall call;
      if (parse_call(std::string_view(pending_).substr(0, close), call)) {
        out.calls.push_back(std::move(call));
        ++calls_made_;
        after_call_ = true;
      } else {
        if (!content_may_come()) return;  // parsed again with the next piece
        out.content.append(held_space_)
            .append(kOpen)
            .append(std::string_view(pending_).substr(0, close + kClose.size()));
        after_call_ = false;
      }
      held_space_.clear();
      pending_.erase(0, close + kClose.size());
      in_call_ = false;
      scanned_ = 0;
      continue;
    }
    if (after_call_) {
      pending_.erase(0, std::find_if_not(pending_.begin(), pending_.end(), is_space) - pending_.begin());
      if (pending_.empty()) return;
      if (!pending_.starts_with(kOpen)) {
        if (!final && kOpen.starts_with(pending_)) return;  // may still be the next call
        if (!content_may_come()) return;
        after_call_ = false;
      }
    }
    const size_t open = pending_.find(kOpen);
    if (open != std::string::npos) {
      const std::string_view before = std::string_view(pending_).substr(0, open);
      const size_t space = trailing_space(before);
      if (space < before.size() && !content_may_come()) return;
      out.content.append(before.substr(0, before.size() - space));
      held_space_ = std::string(before.substr(before.size() - space));
      pending_.erase(0, open + kOpen.size());
      in_call_ = true;
      scanned_ = 0;
      after_call_ = false;
      continue;
    }
    // Hold back what may be the start of a tag, and the whitespace before it.
    size_t keep = 0;
    if (!final) {
      // At most kMaxHeldSpace bytes of it, so that a model writing
      // whitespace for thousands of tokens is not rescanned on every piece
      // (longer whitespace before a call then stays in the content).
      const size_t partial = partial_tag_suffix(pending_, kOpen);
      keep = partial;
      while (keep < pending_.size() && keep < partial + kMaxHeldSpace && is_space(pending_[pending_.size() - 1 - keep]))
        ++keep;
    }
    const size_t emit = pending_.size() - keep;
    if (emit > 0) {
      if (!content_may_come()) return;
      out.content.append(pending_, 0, emit);
      pending_.erase(0, emit);
    }
    return;
  }
}

}  // namespace omnibus::server
