#include "tests/support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gossipd::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Process::Process(std::vector<std::string> argv) {
  char tmpl[] = "/tmp/gossipd_proc_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  const std::string out = dir_ + "/out", err = dir_ + "/err";
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool Process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!status_) {
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = st;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void Process::signal(int sig) {
  if (!status_) kill(pid_, sig);
}

int Process::exit_code() const {
  return status_ && WIFEXITED(*status_) ? WEXITSTATUS(*status_) : -1;
}

int Process::term_signal() const { return status_ && WIFSIGNALED(*status_) ? WTERMSIG(*status_) : 0; }

std::string Process::out() const { return slurp(dir_ + "/out"); }
std::string Process::err() const { return slurp(dir_ + "/err"); }

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
