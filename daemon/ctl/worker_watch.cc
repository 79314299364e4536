#include "daemon/ctl/worker_watch.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>

#include "daemon/ctl/child_process.h"
#include "daemon/observe/http_client.h"
#include "daemon/observe/metrics_log.h"

// gossipctl compare's (and tune's) watch over a running entry's workers.
namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t json_uint(const std::string& json, const std::string& field) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + field + "\":\"?([0-9]+)"))) return 0;
  return std::stoull(m[1]);
}

// Where a running worker is: its /status, or what it had last when that
// does not answer (busy, or closed as it ends); at the end once its control
// record says so.
void update_position(WatchedWorker& w, uint64_t total, int epochs) {
  if (w.http_port == 0) {
    for (const proto::ControlRecord& r : read_control_records(w.control)) {
      if (r.event() == "listening") w.http_port = static_cast<uint16_t>(r.http_port());
    }
    return;
  }
  const std::string s = http_get(w.host, w.http_port, "/status");
  if (!s.empty()) {
    w.round = std::max(w.round, json_uint(s, "round"));
    w.epoch = std::max(w.epoch, static_cast<uint32_t>(json_uint(s, "epoch")));
    return;
  }
  for (const proto::ControlRecord& r : read_control_records(w.control)) {
    if (r.event() == "done" || r.event() == "stopped" || r.event() == "failed") {
      w.round = total;
      w.epoch = static_cast<uint32_t>(epochs);
    }
  }
}

}  // namespace

bool failed(const WatchedWorker& w) { return w.proc->exit_code() != 0 && !w.evictable; }

WatchLook look_at_workers(std::vector<WatchedWorker>& workers, uint64_t total, int epochs) {
  WatchLook l{true, false, total, static_cast<uint32_t>(epochs)};
  for (auto& w : workers) {
    if (w.proc->wait(std::chrono::milliseconds(0))) {
      l.failed = l.failed || failed(w);
      continue;
    }
    if (w.evictable) continue;  // neither holds the run nor shows its progress
    l.all_done = false;
    update_position(w, total, epochs);
    l.round = std::min(l.round, w.round);
    l.epoch = std::min(l.epoch, w.epoch);
  }
  return l;
}

Progress::Progress() : tty_(isatty(STDOUT_FILENO) != 0) {}

void Progress::show(const std::string& label, uint64_t round, uint64_t total, uint32_t epoch, int epochs,
                    double best, double elapsed) {
  const double eta = round > 0 && round < total ? elapsed * static_cast<double>(total - round) / round : 0;
  char line[256];
  std::snprintf(line, sizeof line,
                "%-10s round %6llu/%-6llu epoch %u/%d  best mean acc %.4f  %6.1f s  ETA %5.0f s",
                label.c_str(), static_cast<unsigned long long>(round), static_cast<unsigned long long>(total),
                epoch, epochs, best, elapsed, eta);
  if (tty_) {
    std::printf("\r\033[K%s", line);
    std::fflush(stdout);
  } else if (epoch != last_epoch_ || elapsed - last_print_ >= 10) {  // plain lines: per epoch, or every 10 s
    std::printf("%s\n", line);
    std::fflush(stdout);
    last_epoch_ = epoch;
    last_print_ = elapsed;
  }
}

void Progress::end() {
  if (tty_) std::printf("\n");
  last_epoch_ = ~0u;
  last_print_ = -1e9;
}

void stop_workers(std::vector<WatchedWorker>& workers) {
  for (auto& w : workers) w.proc->signal(SIGTERM);
  for (auto& w : workers) {
    if (!w.proc->wait(std::chrono::seconds(5))) w.proc->signal(SIGKILL);
  }
  for (auto& w : workers) w.proc->wait(std::chrono::seconds(5));
}

WatchEnd watch_workers(std::vector<WatchedWorker>& workers, const WatchSpec& spec, std::stop_token stop,
                       Progress& progress) {
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  double best = 0;
  bool announced = !spec.serving;
  for (;;) {
    const WatchLook l = look_at_workers(workers, spec.total_rounds, spec.epochs);
    if (!announced &&
        std::all_of(workers.begin(), workers.end(), [](const auto& w) { return w.http_port != 0; })) {
      spec.serving(workers);
      announced = true;
    }
    best = std::max(best, spec.best_accuracy());
    if (l.all_done) break;
    if (l.failed) {  // the others would only wait for it until their timeouts
      for (auto& w : workers) w.proc->signal(SIGKILL);
      for (auto& w : workers) w.proc->wait(std::chrono::seconds(5));
      break;
    }
    const bool early = spec.end_early && spec.end_early(l.round);
    if (early || stop.stop_requested()) {
      stop_workers(workers);
      progress.end();
      return early ? WatchEnd::kEndedEarly : WatchEnd::kStopped;
    }
    progress.show(spec.label, l.round, spec.total_rounds, l.epoch, spec.epochs, best, elapsed());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  progress.show(spec.label, spec.total_rounds, spec.total_rounds, static_cast<uint32_t>(spec.epochs),
                spec.epochs, best, elapsed());
  progress.end();
  stop_workers(workers);  // an evictable worker still running (the others have exited)
  const bool any_failed =
      std::any_of(workers.begin(), workers.end(), [](const WatchedWorker& w) { return failed(w); });
  return any_failed ? WatchEnd::kFailed : WatchEnd::kFinished;
}

}  // namespace gossipd::daemon
