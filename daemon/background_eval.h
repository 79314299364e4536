#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "trainer/dataset.h"
#include "trainer/model.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// Evaluates copies of a replica's parameters on a thread of its own at the
// lowest CPU priority (SCHED_IDLE), so that a test-set evaluation takes the
// cycles training leaves idle — on a bandwidth-bound cluster most of them —
// instead of stopping training while it runs.
//
// Everything but that thread's work happens on the caller's (the training)
// thread, results included (`done`). The caller never waits for the
// background thread: where the next submit() or finish() finds an evaluation
// not yet complete (no idle cycles came), the caller evaluates the batches
// still missing itself, on the replica's model with the copy swapped in and
// the live parameters put back, which costs no more than evaluating inline.
// Nothing is shared under a lock (a thread at idle priority that is
// preempted holding one could stall training for seconds): batches are
// claimed with atomics, each thread writes results of its own.
class BackgroundEvaluator {
 public:
  using Done = std::function<void(const trainer::EvalResult&, std::span<const float> params)>;

  // `own`: a model of the replica's architecture for the background thread;
  // `replica`: the training replica, whose evaluation batch size and loss
  // are used, and on whose model the caller evaluates when it must finish
  // an evaluation itself. `start_thread` false (for tests): no background
  // thread, the caller does every evaluation in finish().
  BackgroundEvaluator(std::unique_ptr<trainer::Model> own, trainer::Trainer& replica,
                      const trainer::Dataset& test, bool start_thread = true);
  // Abandons an evaluation in flight (its `done` is not called).
  ~BackgroundEvaluator();
  BackgroundEvaluator(const BackgroundEvaluator&) = delete;
  BackgroundEvaluator& operator=(const BackgroundEvaluator&) = delete;

  // Finishes and publishes the previous evaluation, then hands a copy of
  // `params` to the background thread. Returns the seconds spent finishing.
  double submit(std::span<const float> params, Done done);
  // Publishes the evaluation in flight if the background thread completed
  // it; cheap, for every step.
  void poll();
  // Finishes and publishes the evaluation in flight, if any. Returns the
  // seconds spent.
  double finish();

  // Batches the caller evaluated itself, since construction (for tests and
  // diagnostics).
  size_t batches_on_caller() const { return batches_on_caller_; }

 private:
  struct Job;
  void loop(std::stop_token stop);
  // The background thread's pass over `job`; stops when the caller took it over.
  void work(Job& job, const std::stop_token& stop);
  void publish();
  // Keeps `job` until the background thread cannot be looking at it, and
  // frees the retired jobs it can no longer be looking at.
  void retire(std::unique_ptr<Job> job);

  std::unique_ptr<trainer::Model> own_;
  trainer::Model& replica_;
  const trainer::Dataset& test_;
  trainer::Evaluator& caller_;     // the replica's own, caller only
  trainer::Evaluator background_;  // on own_, background thread only
  std::vector<float> live_;        // the replica's parameters while the caller evaluates on it
  std::unique_ptr<Job> current_;   // submitted and not yet published (caller)
  std::vector<std::unique_ptr<Job>> retired_;
  // The job handed to the background thread, and the one it is working on
  // (a hazard pointer: a job is freed only while it is not this one).
  std::atomic<Job*> posted_{nullptr};
  std::atomic<Job*> using_{nullptr};
  std::atomic<uint64_t> posted_generation_{0};  // what the background thread waits on
  size_t batches_on_caller_ = 0;
  std::jthread thread_;  // last: stops before the members it reads
};

}  // namespace gossipd::daemon
