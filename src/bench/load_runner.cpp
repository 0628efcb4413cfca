#include "bench/load_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "base/mutex.h"
#include "base/timer.h"

namespace omnibus::bench {
namespace {

constexpr int64_t kDefaultMaxInFlight = 1024;

// Shared by the conversation threads of one run.
class RunState {
 public:
  RunState(const std::vector<Conversation>& conversations, const ClientOptions& client, int64_t max_in_flight)
      : conversations_(conversations), client_(client), max_in_flight_(max_in_flight) {
    for (const Conversation& c : conversations) expected_ += static_cast<int64_t>(c.turns.size());
  }

  // Runs every turn of conversation `c` on one connection.
  void run_conversation(size_t c, double scheduled_s, double epoch) {
    OpenAiClient client(client_);
    const Conversation& conv = conversations_[c];
    std::vector<std::string> answers;
    for (size_t t = 0; t < conv.turns.size(); ++t) {
      RequestRecord r;
      r.conversation = static_cast<int64_t>(c);
      r.turn = static_cast<int32_t>(t);
      r.scheduled_s = t == 0 ? scheduled_s : now_seconds() - epoch;
      r.input_tokens = conv.system_tokens;
      for (size_t k = 0; k <= t; ++k) r.input_tokens += conv.turns[k].user_tokens;
      client.send(messages_for_turn(conv, t, answers), conv.turns[t].max_tokens, epoch, r);
      answers.push_back(r.output_text);
      const bool ok = r.ok;
      record(std::move(r));
      if (!ok) {  // the rest of the conversation would build on a missing answer
        skip(static_cast<int64_t>(conv.turns.size() - t - 1));
        break;
      }
    }
  }

  void acquire_slot() {
    MutexLock lock(mu_);
    cv_.wait(lock, [&]() REQUIRES(mu_) { return in_flight_ < max_in_flight_; });
    ++in_flight_;
  }
  void release_slot() {
    {
      MutexLock lock(mu_);
      --in_flight_;
    }
    cv_.notify_all();
  }

  int64_t done() const { return done_.load(); }
  int64_t expected() const { return expected_; }

  std::vector<RequestRecord> take_records() {
    MutexLock lock(mu_);
    std::sort(records_.begin(), records_.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.sent_s < b.sent_s; });
    for (size_t i = 0; i < records_.size(); ++i) records_[i].index = static_cast<int64_t>(i);
    return std::move(records_);
  }

 private:
  void record(RequestRecord r) {
    MutexLock lock(mu_);
    records_.push_back(std::move(r));
    ++done_;
  }
  void skip(int64_t turns) { expected_ -= turns; }

  const std::vector<Conversation>& conversations_;
  const ClientOptions& client_;
  const int64_t max_in_flight_;
  std::atomic<int64_t> expected_{0};
  std::atomic<int64_t> done_{0};
  Mutex mu_;
  CondVar cv_;
  int64_t in_flight_ GUARDED_BY(mu_) = 0;
  std::vector<RequestRecord> records_ GUARDED_BY(mu_);
};

void sleep_until(double epoch, double t) {
  const double wait = t - (now_seconds() - epoch);
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
}

}  // namespace

RunResult run_load(const std::vector<Conversation>& conversations, const ClientOptions& client,
                   const LoadOptions& load, const ProgressFn& progress) {
  const bool closed = load.concurrency > 0;
  const int64_t max_in_flight = closed ? load.concurrency
                                : load.max_concurrency > 0 ? std::min(load.max_concurrency, kDefaultMaxInFlight)
                                                           : kDefaultMaxInFlight;
  RunState state(conversations, client, max_in_flight);
  const std::vector<double> schedule =
      closed ? std::vector<double>(conversations.size(), 0.0)
             : arrival_times(load.shape, static_cast<int64_t>(conversations.size()), load.seed);

  std::atomic<bool> finished{false};
  const double epoch = now_seconds();
  std::thread reporter;
  if (progress) {
    reporter = std::thread([&] {
      while (!finished.load()) {
        progress(state.done(), state.expected(), now_seconds() - epoch);
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    });
  }
  // Open loop: wait for each arrival time, then for a free slot (a capped
  // client sends late; sent_s records when). Closed loop: the slots are the
  // users, so each conversation starts as soon as one frees up.
  std::vector<std::thread> threads;
  threads.reserve(conversations.size());
  for (size_t c = 0; c < conversations.size(); ++c) {
    if (!closed) sleep_until(epoch, schedule[c]);
    state.acquire_slot();
    const double scheduled = closed ? now_seconds() - epoch : schedule[c];
    threads.emplace_back([&state, c, scheduled, epoch] {
      state.run_conversation(c, scheduled, epoch);
      state.release_slot();
    });
  }
  for (std::thread& t : threads) t.join();
  RunResult result;
  result.records = state.take_records();
  result.conversations = static_cast<int64_t>(conversations.size());
  finished.store(true);
  if (reporter.joinable()) reporter.join();
  if (progress) progress(state.done(), state.expected(), now_seconds() - epoch);
  // Records are sorted by send time, so the first one started the run.
  double last = 0;
  for (const RequestRecord& r : result.records) last = std::max(last, r.done_s);
  const double first = result.records.empty() ? 0 : result.records.front().sent_s;
  result.duration_s = std::max(1e-9, last - first);
  return result;
}

ProgressFn stderr_progress_bar(const std::string& label) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  struct Drawn {
    int64_t decile = -1;
    bool ended = false;
  };
  auto drawn = std::make_shared<Drawn>();
  return [tty, label, drawn](int64_t done, int64_t expected, double seconds) {
    if (drawn->ended) return;
    drawn->ended = done >= expected;
    const double frac = expected > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(expected)) : 1.0;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    const std::string line = fmt::format("{} [{}{}] {}/{} requests  {:.1f} s", label, std::string(filled, '#'),
                                         std::string(kWidth - filled, '.'), done, expected, seconds);
    if (tty) {
      fmt::print(stderr, "\r{}{}", line, done >= expected ? "\n" : "");
    } else {
      const int64_t decile = static_cast<int64_t>(frac * 10);
      if (decile == drawn->decile) return;
      drawn->decile = decile;
      fmt::print(stderr, "{}\n", line);
    }
    std::fflush(stderr);
  };
}

}  // namespace omnibus::bench
