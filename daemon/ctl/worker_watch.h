#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/ctl/child_process.h"

namespace gossipd::daemon {

// One gossipd run process of a compare entry, and where its files are.
struct WatchedWorker {
  std::string id;
  std::string host;  // where its /status answers
  std::unique_ptr<ChildProcess> proc;
  std::string out, err, metrics, params;
  std::string control;     // its --control-out records
  uint16_t http_port = 0;  // from its control record once it serves
  // Where it was when its /status last answered, or the end once its
  // control record says it ended (its /status closes before it exits).
  uint64_t round = 0;
  uint32_t epoch = 0;
  // A Byzantine worker under --evict-byzantine: evicted, it ends with an
  // error (refused when it asks to join again, or cut off after the others
  // ended), which is the defence working, not the run failing; one still
  // running when every other worker has exited is stopped.
  bool evictable = false;
};

// Whether `w` exited with an error, other than an evictable worker's.
bool failed(const WatchedWorker& w);

// The slowest running worker's round and epoch, as its progress line shows them.
struct WatchLook {
  bool all_done = true;  // every process exited
  bool failed = false;   // one exited with an error
  uint64_t round = 0;
  uint32_t epoch = 0;
};

// Looks at every worker once: its exit, else its /status (a worker whose
// /status does not answer keeps the round it last had, or is at `total`
// once its control record says it ended).
WatchLook look_at_workers(std::vector<WatchedWorker>& workers, uint64_t total, int epochs);

// One progress line: entry, round, epoch, best mean accuracy so far,
// elapsed, ETA; rewritten in place on a terminal, a line per epoch (or 10
// s) otherwise.
class Progress {
 public:
  Progress();
  void show(const std::string& label, uint64_t round, uint64_t total, uint32_t epoch, int epochs, double best,
            double elapsed);
  void end();

 private:
  bool tty_;
  uint32_t last_epoch_ = ~0u;
  double last_print_ = -1e9;
};

// What the watch is told of the run: its name and length, the best mean
// accuracy so far, and when to end it early (given the slowest worker's round).
struct WatchSpec {
  std::string label;
  uint64_t total_rounds = 0;
  int epochs = 0;
  std::function<double()> best_accuracy;
  std::function<bool(uint64_t round)> end_early;  // may be empty
  // Called once, when every worker's HTTP port is known; may be empty.
  std::function<void(const std::vector<WatchedWorker>&)> serving;
};

enum class WatchEnd {
  kFinished,    // every worker exited by itself
  kFailed,      // one exited with an error; the others were killed
  kEndedEarly,  // end_early said so; every worker got SIGTERM
  kStopped,     // `stop` was requested; every worker got SIGTERM
};

// Polls the workers (their exit, their /status) every 500 ms, showing
// progress, until one of the ends above.
WatchEnd watch_workers(std::vector<WatchedWorker>& workers, const WatchSpec& spec, std::stop_token stop,
                       Progress& progress);

// SIGTERM to every worker, SIGKILL to one still running 5 s later; reaped.
void stop_workers(std::vector<WatchedWorker>& workers);

}  // namespace gossipd::daemon
