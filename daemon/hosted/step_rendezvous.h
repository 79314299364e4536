#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include "trainer/trainer.h"

namespace gossipd::daemon {

// Where a hosted member's training thread and its host's thread (a Python
// process's, which computes the model) meet in each step. They take turns
// on one set of buffers, so neither ever reads what the other writes:
//
//   host: forward, backward   --gradients_ready-->  member: (allreduce the gradients)
//   host: optimizer step      <--apply(lr)--------  member
//   host: waits               --applied---------->  member: the protocol's round, the
//                                                   step's bookkeeping, joiners' snapshots
//   host: the next batch      <--next_step--------  member: waits for the gradients
//
// The member's side blocks on its stop token; the host's on a timeout, and
// wakes at once when the member ends (for good or with an error), with
// that error. Nothing here calls the host back: it asks.
class StepRendezvous {
 public:
  enum class Turn { kStarting, kHost, kMemberGradients, kHostApply, kMemberApplied, kMemberFinish, kEnded };

  // The member's side (its training thread). gradients() hands the turn to
  // the host (the previous step is complete) and waits for the gradients;
  // apply() asks the host to apply them and waits until it has. When `stop`
  // fires, gradients() throws StoppedBetweenSteps (nothing of the step has
  // happened) and apply() StoppedMidStep (the host may be writing); when the
  // host finishes (finish()), gradients() throws FinishRequested.
  trainer::StepResult gradients(std::stop_token stop);
  void apply(float lr, std::stop_token stop);
  // A mode that retries a failed step (AllReduce-SGD re-forms its ring after
  // a member dies and steps again; its collective has summed into the
  // buffer meanwhile) keeps a copy of the host's gradients each step, and a
  // gradients() call within the same step takes that copy back.
  void keep_gradients(std::span<float> grads);
  // The member's training ended; `error` empty: it finished or stopped;
  // `timed_out`: a peer it waited for stayed silent.
  void ended(const std::string& error, bool timed_out);

  // The host's side. begin_step(): the gradients are ready; returns the
  // learning rate the member's schedule gives once the host may apply them
  // (after an allreduce, they are the average). end_step(): applied; returns
  // once the member's round is done. `step`: the batch's loss and
  // accuracy, where the host tells them (the member's records average them
  // over each epoch). Each throws
  // HostedError when the member ended or `timeout` passed first.
  float begin_step(std::chrono::milliseconds timeout, trainer::StepResult step = {});
  void end_step(std::chrono::milliseconds timeout);
  // Waits until the member's first step may begin (it has joined or
  // started); throws as above.
  void wait_ready(std::chrono::milliseconds timeout);
  // Between two steps: training ends here, the member takes its mode's
  // final average (FinishRequested) and stops. Returns once it has ended
  // (at once if it had); HostedError as above, or when a step is half done.
  void finish(std::chrono::milliseconds timeout);
  Turn turn() const;
  // The host's latest test figures, which the member's evaluations report.
  void set_evaluation(trainer::EvalResult e);
  trainer::EvalResult evaluation() const;

 private:
  void wait_host(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout, Turn want,
                 const char* what);

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  Turn turn_ = Turn::kStarting;
  float lr_ = 0;
  trainer::StepResult step_;
  std::span<float> grads_;   // keep_gradients(): the member's buffer
  std::vector<float> kept_;  // and the host's gradients of this step
  trainer::EvalResult evaluation_;
  std::string error_;
  bool timed_out_ = false;
  bool failed_ = false;  // ended with an error (not a finish or a stop)
};

// A hosted member's failure as its host sees it: the member's own error, or
// a wait that timed out (what it waited for, named).
class HostedError : public std::runtime_error {
 public:
  HostedError(const std::string& what, bool timed_out) : std::runtime_error(what), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

}  // namespace gossipd::daemon
