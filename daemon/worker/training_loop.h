#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stop_token>
#include <string>

#include "daemon/observe/metrics.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/worker_state.h"
#include "daemon/worker/background_eval.h"
#include "daemon/worker/epoch_report.h"
#include "protocol/wire/errors.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// Training stopped (a graceful leave, close(), SIGTERM) at a step boundary:
// the previous step is complete and this one has changed nothing yet, so
// the state is what a checkpoint at that round holds. Workers that keep
// checkpoints write one before they let it through.
class StoppedBetweenSteps : public protocol::Aborted {
 public:
  using protocol::Aborted::Aborted;
};

// The host (a Python process: gossipd.torch's close()) ended training
// between two steps and asked for the members' exact average first. A stop
// to every worker that does not take the average (AllReduce-SGD's replicas
// are one already).
class FinishRequested : public StoppedBetweenSteps {
 public:
  using StoppedBetweenSteps::StoppedBetweenSteps;
};

// Training stopped while the host (a Python process) applied a step: the
// parameters are the host's to write until it is done, so no checkpoint is
// taken of them.
class StoppedMidStep : public protocol::Aborted {
 public:
  using protocol::Aborted::Aborted;
};

// The epoch/step loop every worker runs, whatever its protocol, and what it
// reports: per step the round and rate in /status and gossipd_rounds_total;
// per evaluation (at each epoch's end, and `evals_per_epoch - 1` more times
// evenly inside each epoch) the model's test accuracy as it stands, /status,
// the gauges, one --metrics-out JSON line and one progress line.
//
// With an `eval_model` the evaluations run in the background
// (BackgroundEvaluator) on a copy of the parameters taken at the evaluation
// point, and training goes on meanwhile; the figures are those of that copy
// (the same to the bit as evaluating inline), and a record's times
// (wall_seconds, train_seconds) are those of the point where the copy was
// taken. The results are published on the training thread, in order, at the
// first step after they are complete; evaluations the idle cycles have not
// yet reached wait their turn (up to BackgroundEvaluator::max_pending(), and
// no longer than kEvalMaxWait: the training thread finishes the oldest
// beyond either, so a machine with no idle cycles still sees its records
// within seconds, at the cost of evaluating inline), and run() returns once
// the last one is published, the training thread finishing those still
// waiting. Without an `eval_model`, evaluations run on the training thread.
class TrainingLoop {
 public:
  // How long an evaluation waits for idle cycles before the training thread
  // does it (the lag of a record on a compute-bound machine).
  static constexpr std::chrono::seconds kEvalMaxWait{2};

  // One training step on the given samples (the protocol's work included).
  using Step = std::function<trainer::StepResult(std::span<const uint32_t>)>;
  // Called before each evaluation (SGP puts the de-biased parameters in place).
  using BeforeEval = std::function<void()>;

  TrainingLoop(std::string id, trainer::Trainer& trainer, const trainer::Dataset& test, WorkerState& state,
               MetricsRegistry& metrics, JsonLinesWriter& log, int epochs, EvaluationSink on_evaluation,
               int evals_per_epoch = 1, std::unique_ptr<trainer::Model> eval_model = nullptr);

  // Fault injection (--inject-step-delay-ms): every step takes this much
  // longer, the worker's compute slowed.
  void set_step_delay(std::chrono::milliseconds delay) { step_delay_ = delay; }
  // Fault injection (--inject-step-slowdown K): after each step the loop
  // waits K - 1 times the step's compute (its time less its CommTimers'),
  // so the worker computes K times slower whatever the machine.
  void set_step_slowdown(double k) { step_slowdown_ = k; }
  // Emulated machines (--emulate-step-ms MS): after each step the loop waits
  // until the step's compute (its time less its CommTimers') has taken MS, so
  // a process whose real compute is a fraction of MS leaves its core idle the
  // rest and behaves as a machine of its own: several such processes on one
  // core no longer compute in each other's waits. A step that computes
  // longer than MS is not shortened. With a slowdown K as well, the machine
  // is K times slower: the compute padded to K x MS.
  void set_emulated_step(std::chrono::milliseconds ms) { emulated_step_ = ms; }

  // Runs `epochs` epochs of `steps` steps each (the same count on every
  // member); checks `stop` between steps and throws protocol::Aborted.
  void run(size_t steps, std::stop_token stop, const Step& step, const BeforeEval& before_eval = nullptr);

  // Counts the time from construction to destruction as `span` (below).
  class SpanTimer {
   public:
    enum class Span { kComm, kObserved };
    SpanTimer(TrainingLoop& loop, Span span)
        : loop_(loop), span_(span), start_(std::chrono::steady_clock::now()) {}
    ~SpanTimer();
    SpanTimer(const SpanTimer&) = delete;
    SpanTimer& operator=(const SpanTimer&) = delete;

   private:
    TrainingLoop& loop_;
    Span span_;
    std::chrono::steady_clock::time_point start_;
  };
  // Communication: the training thread waiting on the protocol's exchange
  // (a gossip round, an allreduce). Reported per round in /status,
  // --metrics-out and compare's summary as comm_ms_per_round, and in
  // gossipd_comm_seconds_total.
  struct CommTimer : SpanTimer {
    explicit CommTimer(TrainingLoop& loop) : SpanTimer(loop, Span::kComm) {}
  };
  // An observation of the run (the consensus distance's allreduces),
  // counted as an evaluation is: neither training time (the round rate,
  // time to a target) nor the step's compute or communication.
  struct ObserveTimer : SpanTimer {
    explicit ObserveTimer(TrainingLoop& loop) : SpanTimer(loop, Span::kObserved) {}
  };

 private:
  void step_done(uint64_t round, double running_loss);
  // --inject-step-slowdown and --emulate-step-ms: waits K - 1 times the
  // compute of the step that began at `began` with `other_before` seconds of
  // not_compute() counted; with an emulated step, until the step has taken
  // K times the longer of its compute and the emulated step.
  void pad_compute(std::chrono::steady_clock::time_point began, double other_before, std::stop_token stop);
  // CommTimers' and ObserveTimers' seconds: a step's time less these is its compute.
  double not_compute() const { return comm_seconds_ + observed_seconds_; }
  // Fault injection's wait: `d`, or until `stop` fires.
  static void injected_wait(std::chrono::microseconds d, std::stop_token stop);
  double comm_ms_per_round(uint64_t round) const;
  // An evaluation after `progress` epochs (fractional inside an epoch);
  // `epoch` is the number of epochs completed.
  void evaluated(uint32_t epoch, double progress, double train_loss, double train_accuracy, size_t samples,
                 double seconds);
  // The test figures of the evaluation `rec` was made for: /status, the
  // gauges, the JSON line and the progress line.
  void publish(proto::EpochRecord rec, const trainer::EvalResult& ev, const std::string& param_hash);

  std::string id_;
  trainer::Trainer& trainer_;
  const trainer::Dataset& test_;
  WorkerState& state_;
  EpochReport report_;
  int epochs_;
  int evals_per_epoch_;
  std::chrono::milliseconds step_delay_{0};
  double step_slowdown_ = 1;
  std::chrono::milliseconds emulated_step_{0};
  Counter& comm_total_;
  double comm_seconds_ = 0;      // CommTimers on the training thread, since run() began
  double observed_seconds_ = 0;  // ObserveTimers, since run() began (in eval_seconds_ too)
  // Steps less their CommTimers and ObserveTimers (injected slowness
  // included), since run() began.
  double compute_seconds_ = 0;
  // The training thread evaluating or waiting for an evaluation, since run()
  // began (not training time, not in the round rate).
  double eval_seconds_ = 0;
  std::chrono::steady_clock::time_point start_;
  uint64_t start_round_ = 0;                         // a joiner starts at the round it was admitted at
  std::unique_ptr<BackgroundEvaluator> background_;  // last: stops before the members it publishes to
};

}  // namespace gossipd::daemon
