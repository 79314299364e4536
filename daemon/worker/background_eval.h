#pragma once

#include <atomic>
#include <chrono>
#include <deque>
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
// Evaluations wait their turn in submission order, up to `max_pending` of
// them; the training thread never waits for the background thread. Where a
// submit() finds the queue full, or a poll() finds the oldest waiting
// longer than `max_wait` (no idle cycles came for a while: a compute-bound
// machine), the caller evaluates the batches of the oldest still missing
// itself, on the replica's model with the copy swapped in and the live
// parameters put back, which costs no more than evaluating inline; finish()
// does so for all of them. Everything but the background thread's work happens on the caller's
// (the training) thread, results included (`done`, in submission order).
// Nothing is shared under a lock (a thread at idle priority that is
// preempted holding one could stall training for seconds): jobs sit in a
// ring of atomic slots, batches are claimed with atomics, each thread writes
// results of its own.
class BackgroundEvaluator {
 public:
  using Done = std::function<void(const trainer::EvalResult&, std::span<const float> params)>;

  // `own`: a model of the replica's architecture for the background thread;
  // `replica`: the training replica, whose evaluation batch size and loss
  // are used, and on whose model the caller evaluates when it must finish
  // an evaluation itself. `max_pending`: evaluations that may wait (0: as
  // many parameter copies as fit in kPendingBytes, at least 1 and at most
  // kMaxPending). `start_thread` false (for tests): no background thread,
  // the caller does every evaluation, when the queue is full, when one waited
  // past `max_wait` (max(): no bound) or in finish().
  BackgroundEvaluator(
      std::unique_ptr<trainer::Model> own, trainer::Trainer& replica, const trainer::Dataset& test,
      size_t max_pending = 0, bool start_thread = true,
      std::chrono::steady_clock::duration max_wait = std::chrono::steady_clock::duration::max());
  // Abandons the evaluations not yet published (their `done` is not called).
  ~BackgroundEvaluator();
  BackgroundEvaluator(const BackgroundEvaluator&) = delete;
  BackgroundEvaluator& operator=(const BackgroundEvaluator&) = delete;

  static constexpr size_t kPendingBytes = size_t{64} << 20;
  static constexpr size_t kMaxPending = 64;

  // Hands a copy of `params` to the background thread, after finishing and
  // publishing the oldest evaluation waiting if the queue is full. Returns
  // the seconds spent finishing.
  double submit(std::span<const float> params, Done done);
  // Publishes the evaluations the background thread completed, oldest
  // first, up to the first one not complete; cheap, for every step. Then, if
  // the oldest still waiting has waited past max_wait, finishes and
  // publishes it (one per call). Returns the seconds spent finishing.
  double poll();
  // Finishes and publishes every evaluation waiting. Returns the seconds spent.
  double finish();

  size_t max_pending() const { return slots_.size(); }
  // Submitted and not yet published.
  size_t pending() const { return pending_.size(); }
  // Batches the caller evaluated itself, since construction (for tests and
  // diagnostics).
  size_t batches_on_caller() const { return batches_on_caller_; }

 private:
  struct Job;
  void loop(std::stop_token stop);
  // The background thread's pass over `job`; stops when the caller took it over.
  void work(Job& job, const std::stop_token& stop);
  // Evaluates the batches of the oldest job still missing on the caller's
  // thread, then publishes it.
  void finish_oldest();
  void publish_oldest();
  // Keeps `job` until the background thread cannot be looking at it, and
  // frees the retired jobs it can no longer be looking at.
  void retire(std::unique_ptr<Job> job);

  std::unique_ptr<trainer::Model> own_;
  trainer::Model& replica_;
  const trainer::Dataset& test_;
  trainer::Evaluator& caller_;                // the replica's own, caller only
  trainer::Evaluator background_;             // on own_, background thread only
  std::vector<float> live_;                   // the replica's parameters while the caller evaluates on it
  std::deque<std::unique_ptr<Job>> pending_;  // submitted and not yet published, oldest first (caller)
  std::vector<std::unique_ptr<Job>> retired_;
  // Job number n (counted from 0 in submission order) sits in slots_[n %
  // size] from submission to publication; the background thread works
  // through the numbers in order, up to submitted_. using_ is the job it is
  // working on (a hazard pointer: a job is freed only while it is in no slot
  // and not this one).
  std::vector<std::atomic<Job*>> slots_;
  const std::chrono::steady_clock::duration max_wait_;
  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> wake_{0};  // what the background thread waits on
  std::atomic<Job*> using_{nullptr};
  size_t batches_on_caller_ = 0;
  std::jthread thread_;  // last: stops before the members it reads
};

}  // namespace gossipd::daemon
