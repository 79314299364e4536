#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <stop_token>
#include <string>

#include "daemon/metrics.h"
#include "daemon/metrics_log.h"
#include "daemon/worker_state.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// The epoch/step loop every worker runs, whatever its protocol, and what it
// reports: per step the round and rate in /status and gossipd_rounds_total;
// per evaluation (at each epoch's end, and `evals_per_epoch - 1` more times
// evenly inside each epoch) the model's test accuracy as it stands, /status,
// the gauges, one --metrics-out JSON line and one progress line.
class TrainingLoop {
 public:
  // One training step on the given samples (the protocol's work included).
  using Step = std::function<trainer::StepResult(std::span<const uint32_t>)>;
  // Called before each evaluation (SGP puts the de-biased parameters in place).
  using BeforeEval = std::function<void()>;

  TrainingLoop(std::string id, trainer::Trainer& trainer, const trainer::Dataset& test, WorkerState& state,
                MetricsRegistry& metrics, JsonLinesWriter& log, int epochs, bool quiet, int evals_per_epoch = 1);

  // Runs `epochs` epochs of `steps` steps each (the same count on every
  // member); checks `stop` between steps and throws protocol::Aborted.
  void run(size_t steps, std::stop_token stop, const Step& step, const BeforeEval& before_eval = nullptr);

  // Steps per epoch from the dataset size and member count alone, so that
  // every member makes the same number of rounds.
  static size_t steps_per_epoch(size_t dataset_size, size_t members, size_t batch);

  // Counts the time from construction to destruction as communication: the
  // training thread waiting on the protocol's exchange (a gossip round, an
  // allreduce). Reported per round in /status, --metrics-out and compare's
  // summary as comm_ms_per_round, and in gossipd_comm_seconds_total.
  class CommTimer {
   public:
    explicit CommTimer(TrainingLoop& loop) : loop_(loop), start_(std::chrono::steady_clock::now()) {}
    ~CommTimer();
    CommTimer(const CommTimer&) = delete;
    CommTimer& operator=(const CommTimer&) = delete;

   private:
    TrainingLoop& loop_;
    std::chrono::steady_clock::time_point start_;
  };

 private:
  void step_done(uint64_t round, double running_loss);
  double comm_ms_per_round(uint64_t round) const;
  // An evaluation after `progress` epochs (fractional inside an epoch);
  // `epoch` is the number of epochs completed.
  void evaluated(uint32_t epoch, double progress, double train_loss, double train_accuracy, size_t samples,
                 double seconds);

  std::string id_;
  trainer::Trainer& trainer_;
  const trainer::Dataset& test_;
  WorkerState& state_;
  JsonLinesWriter& log_;
  int epochs_;
  bool quiet_;
  int evals_per_epoch_;
  Counter& rounds_;
  Gauge& epoch_gauge_;
  Gauge& loss_gauge_;
  Gauge& accuracy_gauge_;
  Counter& comm_total_;
  double comm_seconds_ = 0;  // CommTimers on the training thread, since run() began
  double eval_seconds_ = 0;  // evaluations, since run() began (not in the round rate)
  std::chrono::steady_clock::time_point start_;
  uint64_t start_round_ = 0;  // a joiner starts at the round it was admitted at
};

}  // namespace gossipd::daemon
