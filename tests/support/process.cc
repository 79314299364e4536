#include "tests/support/process.h"

#include <signal.h>

namespace gossipd::testing {

Process::Process(std::vector<std::string> argv)
    : child_(std::make_unique<daemon::ChildProcess>(std::move(argv), dir_.file("out"), dir_.file("err"))) {}

Process::~Process() {
  child_.reset();  // kills (SIGKILL, by pid) and reaps, before dir_ goes
}

std::string Process::out() const { return daemon::read_file(dir_.file("out")); }
std::string Process::err() const { return daemon::read_file(dir_.file("err")); }

RunResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  Process p(std::move(argv));
  RunResult r;
  if (!p.wait(timeout)) {
    r.timed_out = true;
    p.signal(SIGKILL);
    p.wait(std::chrono::seconds(10));
  }
  r.exit_code = p.exit_code();
  r.term_signal = p.term_signal();
  r.out = p.out();
  r.err = p.err();
  return r;
}

std::string bin(const std::string& name) { return std::string(GOSSIPD_BIN_DIR) + "/" + name; }

}  // namespace gossipd::testing
