#include "grammar/grammar_automaton.h"

#include <algorithm>

namespace omnibus {

namespace {

uint64_t pair_key(uint32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

}  // namespace

namespace utf8_partial {

uint32_t start(uint8_t lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return (2u << 28) | (1u << 24) | (lead & 0x1Fu);
  if (lead >= 0xE0 && lead <= 0xEF) return (3u << 28) | (2u << 24) | (lead & 0x0Fu);
  if (lead >= 0xF0 && lead <= 0xF4) return (4u << 28) | (3u << 24) | (lead & 0x07u);
  return 0;
}

uint32_t extend(uint32_t partial, uint8_t byte) {
  if ((byte & 0xC0) != 0x80) return 0;
  const uint32_t missing = ((partial >> 24) & 0xF) - 1;
  const uint32_t bits = ((partial & 0xFFFFFF) << 6) | (byte & 0x3Fu);
  return (partial & 0xF0000000u) | (missing << 24) | bits;
}

uint32_t code_point(uint32_t partial) {
  const uint32_t length = partial >> 28, cp = partial & 0xFFFFFF;
  const uint32_t min = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  if (cp < min || cp > Grammar::kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return kInvalid;
  return cp;
}

void span(uint32_t partial, uint32_t& lo, uint32_t& hi) {
  const uint32_t length = partial >> 28, missing = (partial >> 24) & 0xF, bits = partial & 0xFFFFFF;
  const uint32_t shift = 6 * missing;
  lo = bits << shift;
  hi = lo | ((1u << shift) - 1);
  lo = std::max(lo, length == 2 ? 0x80u : length == 3 ? 0x800u : 0x10000u);
  hi = std::min(hi, Grammar::kMaxCodePoint);
}

}  // namespace utf8_partial

size_t GrammarAutomaton::VectorHash::operator()(const std::vector<int32_t>& v) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
  for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001B3ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

GrammarAutomaton::GrammarAutomaton(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  class_ascii_.resize(grammar_->class_count());
  for (size_t cls = 0; cls < class_ascii_.size(); ++cls) {
    for (const CodePointRange& r : grammar_->class_ranges(static_cast<uint32_t>(cls))) {
      for (uint32_t b = r.lo; b <= r.hi && b < 128; ++b) class_ascii_[cls][b / 64] |= uint64_t{1} << (b % 64);
    }
  }
  start_ = start_state();
}

int32_t GrammarAutomaton::start_state() {
  std::vector<int32_t> stacks;
  expanded_.clear();
  expansions_ = 0;
  overflowed_ = false;
  for (uint32_t alt : grammar_->alternatives(grammar_->root())) expand(alt, -1, stacks);
  return intern_state(intern_set(stacks));
}

int32_t GrammarAutomaton::intern_node(uint32_t position, int32_t parent) {
  auto [it, inserted] = node_ids_.emplace(pair_key(position, parent), static_cast<int32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({position, parent});
  return it->second;
}

void GrammarAutomaton::expand(uint32_t position, int32_t parent, std::vector<int32_t>& out) {
  // A work list, not recursion: nested optional parts and deep stacks of
  // nullable continuations would otherwise take the thread's stack.
  const Grammar& g = *grammar_;
  pending_.clear();
  pending_.push_back({position, parent});
  while (!pending_.empty()) {
    if (++expansions_ > kMaxExpansions) {
      overflowed_ = true;
      return;
    }
    auto [pos, frame_id] = pending_.back();
    pending_.pop_back();
    for (;;) {
      const GrammarElement& e = g.at(pos);
      if (e.kind == GrammarElement::Kind::kEnd) {
        if (frame_id < 0) {
          out.push_back(kFinished);
          break;
        }
        const Node frame = nodes_[static_cast<size_t>(frame_id)];
        pos = frame.position;
        frame_id = frame.parent;
        continue;
      }
      if (e.kind == GrammarElement::Kind::kChars) {
        out.push_back(intern_node(pos, frame_id));
        break;
      }
      // A rule: its alternatives run in a frame that returns to the next
      // element, or straight to this frame's parent when nothing follows.
      const uint32_t next = pos + 1;
      const int32_t frame = g.at(next).kind == GrammarElement::Kind::kEnd ? frame_id : intern_node(next, frame_id);
      // Ambiguous grammars can reach one (rule, frame) many ways; expand it
      // once, or a rule of n alternatives nested k deep costs n^k.
      if (expanded_.insert(pair_key(e.index, frame)).second) {
        const std::span<const uint32_t> alts = g.alternatives(e.index);
        for (auto it = alts.rbegin(); it != alts.rend(); ++it) pending_.push_back({*it, frame});
      }
      break;
    }
  }
}

int32_t GrammarAutomaton::intern_set(std::vector<int32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  auto it = set_ids_.find(stacks);
  if (it != set_ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(sets_.size());
  sets_.push_back(stacks);
  set_ids_.emplace(stacks, id);
  return id;
}

int32_t GrammarAutomaton::intern_state(int32_t set) {
  auto [it, inserted] = state_of_set_.emplace(set, static_cast<int32_t>(states_.size()));
  if (!inserted) return it->second;
  const std::vector<int32_t>& stacks = sets_[static_cast<size_t>(set)];
  const bool finished = !stacks.empty() && stacks.front() == kFinished;  // sorted: -1 first
  states_.push_back({set, finished, stacks.size() > (finished ? 1u : 0u)});
  ascii_.resize(ascii_.size() + 128, kUnknown);
  code_points_.emplace_back();
  successors_.emplace_back();
  return it->second;
}

int32_t GrammarAutomaton::advance_set(int32_t set, uint32_t cp) {
  const Grammar& g = *grammar_;
  ++transitions_computed_;
  scratch_.clear();
  expanded_.clear();
  expansions_ = 0;
  overflowed_ = false;
  const size_t n = sets_[static_cast<size_t>(set)].size();
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = sets_[static_cast<size_t>(set)][i];
    if (id == kFinished) continue;
    const Node top = nodes_[static_cast<size_t>(id)];
    if (g.class_matches(g.at(top.position).index, cp)) expand(top.position + 1, top.parent, scratch_);
  }
  if (scratch_.empty() || overflowed_) return kDead;
  return intern_state(intern_set(scratch_));
}

int32_t GrammarAutomaton::compute_ascii(int32_t state, uint8_t c) {
  const Grammar& g = *grammar_;
  const int32_t set = states_[static_cast<size_t>(state)].set;
  // The distinct classes on top of the state's stacks; a byte's signature
  // is which of them take it, and the stacks it advances follow from that.
  std::vector<uint32_t> classes;
  for (int32_t id : sets_[static_cast<size_t>(set)]) {
    if (id == kFinished) continue;
    const uint32_t cls = g.at(nodes_[static_cast<size_t>(id)].position).index;
    if (std::find(classes.begin(), classes.end(), cls) == classes.end()) classes.push_back(cls);
  }
  const size_t row = static_cast<size_t>(state) * 128;
  auto remember = [&](int32_t to, uint64_t low, uint64_t high) {
    std::vector<ByteGroup>& groups = successors_[static_cast<size_t>(state)].groups;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const ByteGroup& g) { return g.to == to; });
    if (it == groups.end()) it = groups.insert(groups.end(), ByteGroup{to, {0, 0}});
    it->bytes[0] |= low;
    it->bytes[1] |= high;
  };
  if (classes.size() > 64) {  // too many for a signature: this byte alone
    const int32_t to = advance_set(set, c);
    ascii_[row + c] = to;  // advance_set may have grown the table: index again
    remember(to, c < 64 ? uint64_t{1} << c : 0, c >= 64 ? uint64_t{1} << (c - 64) : 0);
    return to;
  }
  std::array<uint64_t, 128> signature{};
  for (size_t j = 0; j < classes.size(); ++j) {
    for (int b = 0; b < 128; ++b)
      if ((class_ascii_[classes[j]][b / 64] >> (b % 64)) & 1) signature[static_cast<size_t>(b)] |= uint64_t{1} << j;
  }
  // Only c's group: another group's successor may be costly and never asked for.
  const uint64_t sig = signature[c];
  const int32_t to = sig == 0 ? kDead : advance_set(set, c);
  uint64_t group[2] = {0, 0};
  for (size_t b = 0; b < 128; ++b) {
    if (signature[b] != sig) continue;
    ascii_[row + b] = to;  // advance_set may have grown the table: index again
    group[b / 64] |= uint64_t{1} << (b % 64);
  }
  remember(to, group[0], group[1]);
  return to;
}

void GrammarAutomaton::build_code_point_table(int32_t state) {
  const Grammar& g = *grammar_;
  auto table = std::make_unique<CodePointTable>();
  table->starts.push_back(0x80);
  for (int32_t id : sets_[static_cast<size_t>(states_[static_cast<size_t>(state)].set)]) {
    if (id == kFinished) continue;
    for (const CodePointRange& r : g.class_ranges(g.at(nodes_[static_cast<size_t>(id)].position).index)) {
      if (r.lo > 0x80) table->starts.push_back(r.lo);
      if (r.hi >= 0x80 && r.hi < Grammar::kMaxCodePoint) table->starts.push_back(r.hi + 1);
    }
  }
  std::sort(table->starts.begin(), table->starts.end());
  table->starts.erase(std::unique(table->starts.begin(), table->starts.end()), table->starts.end());
  table->next.assign(table->starts.size(), kUnknown);
  code_points_[static_cast<size_t>(state)] = std::move(table);
}

int32_t GrammarAutomaton::next_code_point(int32_t state, uint32_t cp) {
  if (cp < 128) return next_ascii(state, static_cast<uint8_t>(cp));
  if (!code_points_[static_cast<size_t>(state)]) build_code_point_table(state);
  CodePointTable* table = code_points_[static_cast<size_t>(state)].get();
  const size_t i =
      static_cast<size_t>(std::upper_bound(table->starts.begin(), table->starts.end(), cp) - table->starts.begin()) - 1;
  if (table->next[i] == kUnknown) {
    // Every code point of the interval matches the same classes: any one
    // of them stands for all.
    const int32_t to = advance_set(states_[static_cast<size_t>(state)].set, table->starts[i]);
    table = code_points_[static_cast<size_t>(state)].get();  // the table itself does not move
    table->next[i] = to;
  }
  return table->next[i];
}

bool GrammarAutomaton::can_match_range(int32_t state, uint32_t lo, uint32_t hi) const {
  if (lo > hi) return false;  // an overlong or out-of-range start: no code point has it
  const Grammar& g = *grammar_;
  for (int32_t id : sets_[static_cast<size_t>(states_[static_cast<size_t>(state)].set)]) {
    if (id == kFinished) continue;
    if (g.class_intersects(g.at(nodes_[static_cast<size_t>(id)].position).index, lo, hi)) return true;
  }
  return false;
}

int32_t GrammarAutomaton::common_successor(int32_t state, const uint64_t (&bytes)[2], bool non_ascii) {
  const auto s = static_cast<size_t>(state);
  int32_t to = kUnknown;
  if ((bytes[0] | bytes[1]) != 0) {
    const int first = bytes[0] != 0 ? __builtin_ctzll(bytes[0]) : 64 + __builtin_ctzll(bytes[1]);
    to = next_ascii(state, static_cast<uint8_t>(first));
    if (to == kDead) return kDead;
    for (;;) {
      // The bytes known to lead to `to`, and known to lead elsewhere.
      uint64_t same[2] = {0, 0}, other[2] = {0, 0};
      for (const ByteGroup& g : successors_[s].groups) {
        uint64_t(&into)[2] = g.to == to ? same : other;
        into[0] |= g.bytes[0];
        into[1] |= g.bytes[1];
      }
      if ((bytes[0] & other[0]) != 0 || (bytes[1] & other[1]) != 0) return kDead;
      const uint64_t rest[2] = {bytes[0] & ~same[0], bytes[1] & ~same[1]};
      if ((rest[0] | rest[1]) == 0) break;
      // Not yet known: compute one (and its whole group) and look again.
      next_ascii(state, static_cast<uint8_t>(rest[0] != 0 ? __builtin_ctzll(rest[0]) : 64 + __builtin_ctzll(rest[1])));
    }
  }
  if (non_ascii) {
    const int32_t beyond = non_ascii_successor(state);
    if (beyond == kDead || (to != kUnknown && beyond != to)) return kDead;
    to = beyond;
  }
  return to == kUnknown ? kDead : to;
}

int32_t GrammarAutomaton::non_ascii_successor(int32_t state) {
  const auto s = static_cast<size_t>(state);
  if (successors_[s].non_ascii == kUnknown) {
    if (!code_points_[s]) build_code_point_table(state);
    int32_t common = kUnknown;
    // Each interval's first code point stands for the interval.
    for (size_t i = 0; common != kDead && i < code_points_[s]->starts.size(); ++i) {
      const int32_t to = next_code_point(state, code_points_[s]->starts[i]);
      common = to == kDead || (common != kUnknown && to != common) ? kDead : to;
    }
    successors_[s].non_ascii = common == kUnknown ? kDead : common;
  }
  return successors_[s].non_ascii;
}

bool GrammarAutomaton::advance_byte(GrammarPosition& at, uint8_t byte) {
  if (at.partial == 0) {
    if (byte < 0x80) {
      at.state = next_ascii(at.state, byte);
      return at.state != kDead;
    }
    at.partial = utf8_partial::start(byte);
    if (at.partial == 0) return false;
  } else {
    at.partial = utf8_partial::extend(at.partial, byte);
    if (at.partial == 0) return false;
    if (utf8_partial::complete(at.partial)) {
      const uint32_t cp = utf8_partial::code_point(at.partial);
      at.partial = 0;
      if (cp == utf8_partial::kInvalid) return false;
      at.state = next_code_point(at.state, cp);
      return at.state != kDead;
    }
  }
  uint32_t lo = 0, hi = 0;
  utf8_partial::span(at.partial, lo, hi);
  return can_match_range(at.state, lo, hi);
}

bool GrammarAutomaton::advance(GrammarPosition& at, std::string_view bytes) {
  for (char c : bytes)
    if (!advance_byte(at, static_cast<uint8_t>(c))) return false;
  return true;
}

GrammarPosition GrammarAutomaton::restart_from(GrammarPosition keep) {
  const State s = states_[static_cast<size_t>(keep.state)];
  // Each kept stack as its frames' positions, innermost first.
  std::vector<std::vector<uint32_t>> chains;
  bool finished = false;
  for (int32_t id : sets_[static_cast<size_t>(s.set)]) {
    if (id == kFinished) {
      finished = true;
      continue;
    }
    std::vector<uint32_t>& chain = chains.emplace_back();
    for (int32_t n = id; n >= 0; n = nodes_[static_cast<size_t>(n)].parent)
      chain.push_back(nodes_[static_cast<size_t>(n)].position);
  }
  nodes_.clear();
  node_ids_.clear();
  sets_.clear();
  set_ids_.clear();
  states_.clear();
  state_of_set_.clear();
  ascii_.clear();
  code_points_.clear();
  successors_.clear();
  std::vector<int32_t> stacks;
  if (finished) stacks.push_back(kFinished);
  for (const std::vector<uint32_t>& chain : chains) {
    int32_t parent = -1;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) parent = intern_node(*it, parent);
    stacks.push_back(parent);
  }
  const GrammarPosition kept{intern_state(intern_set(stacks)), keep.partial};
  start_ = start_state();
  return kept;
}

bool grammar_accepts(const Grammar& grammar, std::string_view text) {
  // A shared_ptr that does not own: the automaton lives only in this call.
  GrammarAutomaton automaton(std::shared_ptr<const Grammar>(std::shared_ptr<const Grammar>(), &grammar));
  GrammarPosition at = automaton.start();
  return automaton.advance(at, text) && automaton.can_end(at);
}

}  // namespace omnibus
