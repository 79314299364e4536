#include "tests/support/process.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "daemon/ctl/compare_hosts.h"
#include "tests/support/wait.h"

namespace gossipd::testing {

Process::Process(std::vector<std::string> argv)
    : child_(std::make_unique<daemon::ChildProcess>(std::move(argv), dir_.file("out"), dir_.file("err"))) {}

Process::~Process() {
  child_.reset();  // kills (SIGKILL, by pid) and reaps, before dir_ goes
}

std::string Process::out() const { return daemon::read_file(dir_.file("out")); }
std::string Process::err() const { return daemon::read_file(dir_.file("err")); }

std::string Process::threads() const {
  if (exited()) return "(it has exited)";
  const std::string pid = std::to_string(child_->pid());
  if (std::filesystem::exists("/usr/bin/gdb")) {
    const RunResult gdb = run({"/usr/bin/gdb", "-p", pid, "-batch", "-nx", "-ex", "thread apply all bt 30"},
                              std::chrono::seconds(60));
    if (gdb.out.find("Thread ") != std::string::npos) return gdb.out;
  }
  std::ostringstream where;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task", ec)) {
    const auto name = daemon::read_file(task.path().string() + "/comm");
    where << task.path().filename().string() << " " << name.substr(0, name.find('\n')) << ": "
          << daemon::read_file(task.path().string() + "/wchan") << "\n";
  }
  return where.str().empty() ? "(no threads found under /proc/" + pid + ")" : where.str();
}

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

namespace {

// The first word of each line, up to `end` (a link's "veth0@if5": veth0).
std::set<std::string> names(const std::string& listing, size_t word, const std::string& end) {
  std::set<std::string> out;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string w;
    for (size_t k = 0; k <= word && words >> w;) ++k;
    if (!w.empty()) out.insert(w.substr(0, w.find_first_of(end)));
  }
  return out;
}

bool within(const std::set<std::string>& now, const std::set<std::string>& before) {
  return std::includes(before.begin(), before.end(), now.begin(), now.end());
}

}  // namespace

NetworkState network_state() {
  const std::string ip = daemon::find_program("ip");
  if (ip.empty()) return {};
  return {names(run({ip, "netns", "list"}, std::chrono::seconds(10)).out, 0, " "),
          names(run({ip, "-o", "link"}, std::chrono::seconds(10)).out, 1, "@:")};
}

bool nothing_left_beyond(const NetworkState& before, std::chrono::milliseconds timeout) {
  return wait_until(
      [&] {
        const NetworkState now = network_state();
        return within(now.namespaces, before.namespaces) && within(now.links, before.links);
      },
      timeout, std::chrono::milliseconds(200));
}

}  // namespace gossipd::testing
