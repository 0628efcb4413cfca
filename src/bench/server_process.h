// A child `omnibus serve` (or any server command) for trials: started on a
// free port with its output in a log file, ready when GET /health answers
// 200, stopped with SIGTERM (SIGKILL after a grace period). POSIX only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace omnibus::bench {

// A TCP port on 127.0.0.1 that was free a moment ago.
Result<int> pick_free_port();

class ServerProcess {
 public:
  // Runs argv (argv[0] is the program path); the caller puts the port in it.
  static Result<ServerProcess> start(const std::vector<std::string>& argv, int port, const std::string& log_path);
  ServerProcess(ServerProcess&& other) noexcept;
  ServerProcess& operator=(ServerProcess&&) = delete;
  ~ServerProcess();  // stops it if still running

  // Polls /health until 200, the process exits, or `timeout_s` passes.
  Status wait_ready(double timeout_s);
  void stop(double grace_s = 15);

  int port() const { return port_; }
  std::string url() const;
  const std::string& log_path() const { return log_path_; }
  // The last `lines` lines of the log, for error messages.
  std::string log_tail(int lines = 15) const;

 private:
  ServerProcess(pid_t pid, int port, std::string log_path) : pid_(pid), port_(port), log_path_(std::move(log_path)) {}
  bool exited();

  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace omnibus::bench
