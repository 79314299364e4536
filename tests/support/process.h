#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gossipd::testing {

// A child process started from a test. Its stdout and stderr go to files in a
// private temp directory; the destructor kills it (SIGKILL, by pid) and reaps
// it, so a failing test never leaves it running.
class Process {
 public:
  explicit Process(std::vector<std::string> argv);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Waits up to `timeout` for the exit; true when it exited (or was killed).
  bool wait(std::chrono::milliseconds timeout);
  void signal(int sig);

  int pid() const { return pid_; }
  bool exited() const { return status_.has_value(); }
  // Exit code, or -1 when it ended by a signal or is still running.
  int exit_code() const;
  // The signal that ended it, 0 if none.
  int term_signal() const;
  std::string out() const;
  std::string err() const;

 private:
  int pid_ = -1;
  std::optional<int> status_;
  std::string dir_;
};

struct RunResult {
  int exit_code = -1;
  int term_signal = 0;
  bool timed_out = false;
  std::string out, err;
};

// Runs a command to completion (killed after `timeout`).
RunResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout);

// Path of a built binary (gossipd, gossipctl).
std::string bin(const std::string& name);

}  // namespace gossipd::testing
