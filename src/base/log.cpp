#include "base/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace omnibus {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
std::mutex g_mutex;
}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void log_line(LogLevel level, std::string_view text) {
  static constexpr const char* kNames[] = {"debug", "info", "warning", "error", ""};
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "omnibus: %s: %.*s\n", kNames[static_cast<int>(level)], static_cast<int>(text.size()),
               text.data());
}

}  // namespace omnibus
