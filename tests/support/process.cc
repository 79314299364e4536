#include "tests/support/process.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

namespace gossipd::testing {

Process::Process(std::vector<std::string> argv) {
  char tmpl[] = "/tmp/gossipd_proc_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  child_ = std::make_unique<daemon::ChildProcess>(std::move(argv), dir_ + "/out", dir_ + "/err");
}

Process::~Process() {
  child_.reset();  // kills and reaps
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string Process::out() const { return daemon::read_file(dir_ + "/out"); }
std::string Process::err() const { return daemon::read_file(dir_ + "/err"); }

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
