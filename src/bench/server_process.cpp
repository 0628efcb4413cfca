#include "bench/server_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

#include "base/timer.h"
#include "third_party/httplib_include.h"

extern char** environ;

namespace omnibus::bench {

Result<int> pick_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::io_error(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return Status::io_error(fmt::format("finding a free port: {}", why));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

Result<ServerProcess> ServerProcess::start(const std::vector<std::string>& argv, int port, const std::string& log_path) {
  if (argv.empty()) return Status::invalid_argument("no server command");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status::io_error(fmt::format("starting {}: {}", argv[0], std::strerror(rc)));
  return ServerProcess(pid, port, log_path);
}

ServerProcess::ServerProcess(ServerProcess&& other) noexcept
    : pid_(other.pid_), port_(other.port_), log_path_(std::move(other.log_path_)) {
  other.pid_ = -1;
}

ServerProcess::~ServerProcess() { stop(); }

std::string ServerProcess::url() const { return fmt::format("http://127.0.0.1:{}", port_); }

bool ServerProcess::exited() {
  if (pid_ < 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return true;
  }
  return false;
}

Status ServerProcess::wait_ready(double timeout_s) {
  httplib::Client client(url());
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(5, 0);
  Stopwatch waited;
  while (waited.seconds() < timeout_s) {
    if (exited()) return Status::io_error(fmt::format("the server exited while starting:\n{}", log_tail()));
    httplib::Result res = client.Get("/health");
    if (res && res->status == 200) return Status::ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::io_error(fmt::format("the server was not ready after {:.0f} s:\n{}", timeout_s, log_tail()));
}

void ServerProcess::stop(double grace_s) {
  if (exited()) return;
  kill(pid_, SIGTERM);
  Stopwatch waited;
  while (waited.seconds() < grace_s) {
    if (exited()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string ServerProcess::log_tail(int lines) const {
  std::ifstream in(log_path_);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  std::string out;
  for (const std::string& l : tail) out += "  " + l + "\n";
  return out;
}

}  // namespace omnibus::bench
