#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/ctl/child_process.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {

// A child process started from a test. Its stdout and stderr go to files in a
// TempDir of its own; the destructor kills it (SIGKILL, by pid) and reaps
// it, so a failing test never leaves it running.
class Process {
 public:
  explicit Process(std::vector<std::string> argv);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Waits up to `timeout` for the exit; true when it exited (or was killed).
  bool wait(std::chrono::milliseconds timeout) { return child_->wait(timeout); }
  void signal(int sig) { child_->signal(sig); }

  int pid() const { return child_->pid(); }
  bool exited() const { return child_->exited(); }
  // Exit code, or -1 when it ended by a signal or is still running.
  int exit_code() const { return child_->exit_code(); }
  // The signal that ended it, 0 if none.
  int term_signal() const { return child_->term_signal(); }
  std::string out() const;
  std::string err() const;
  // Where a process that has not ended is, for a test's failure message:
  // every thread's stack (gdb, where installed and allowed to attach), else
  // each thread's name and the kernel call it waits in (/proc).
  std::string threads() const;

 private:
  TempDir dir_{"gossipd_proc"};  // declared first: goes after the child
  std::unique_ptr<daemon::ChildProcess> child_;
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

// The names of this host's network namespaces and links as iproute2's ip
// lists them (none where ip is missing): a run that made namespaces leaves
// none of its own behind.
struct NetworkState {
  std::set<std::string> namespaces, links;
};
NetworkState network_state();
// Whether, within `timeout`, this host has no namespace and no link that
// `before` did not have: the tests that run beside this one make and delete
// their own, so a new one is a leftover only once it outlasts them.
bool nothing_left_beyond(const NetworkState& before, std::chrono::milliseconds timeout);

}  // namespace gossipd::testing
