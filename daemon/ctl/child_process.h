#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gossipd::daemon {

// A child process (fork + execv) whose stdout and stderr go to files. The
// destructor kills it (SIGKILL, by pid) and reaps it if it still runs, so an
// error in the parent never leaves a worker behind.
class ChildProcess {
 public:
  // argv[0] is the program's path. Throws DaemonError if fork fails;
  // a program that cannot be executed exits 127.
  ChildProcess(std::vector<std::string> argv, const std::string& out_path, const std::string& err_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Waits up to `timeout` for the exit; true when it exited (or was killed).
  bool wait(std::chrono::milliseconds timeout);
  void signal(int sig);

  int pid() const { return pid_; }
  bool exited() const { return status_.has_value(); }
  // Exit code, or -1 when it ended by a signal or is still running.
  int exit_code() const;
  // The signal that ended it, 0 if none.
  int term_signal() const;

 private:
  int pid_ = -1;
  std::optional<int> status_;
};

// The whole content of a text file ("" if it cannot be read).
std::string read_file(const std::string& path);

}  // namespace gossipd::daemon
