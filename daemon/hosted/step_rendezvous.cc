#include "daemon/hosted/step_rendezvous.h"

#include <algorithm>

#include "daemon/worker/training_loop.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

trainer::StepResult StepRendezvous::gradients(std::stop_token stop) {
  std::unique_lock lock(mu_);
  if (turn_ == Turn::kMemberGradients) {  // the step is retried: the host waits on its first try
    if (kept_.empty()) throw std::logic_error("hosted: a step retried without kept gradients");
    std::copy(kept_.begin(), kept_.end(), grads_.begin());
    return step_;
  }
  turn_ = Turn::kHost;  // the previous step (or the start) is complete
  cv_.notify_all();
  cv_.wait(lock, stop, [&] { return turn_ == Turn::kMemberGradients || turn_ == Turn::kMemberFinish; });
  if (turn_ == Turn::kMemberFinish) throw FinishRequested("hosted", "the host finished training");
  // Stopped before the host handed this step's gradients: nothing of it happened.
  if (turn_ != Turn::kMemberGradients)
    throw StoppedBetweenSteps("hosted", "waiting for the host's gradients");
  if (!grads_.empty()) kept_.assign(grads_.begin(), grads_.end());
  return step_;
}

void StepRendezvous::keep_gradients(std::span<float> grads) {
  std::lock_guard lock(mu_);
  grads_ = grads;
}

void StepRendezvous::apply(float lr, std::stop_token stop) {
  std::unique_lock lock(mu_);
  lr_ = lr;
  turn_ = Turn::kHostApply;
  cv_.notify_all();
  cv_.wait(lock, stop, [&] { return turn_ == Turn::kMemberApplied; });
  if (turn_ != Turn::kMemberApplied) throw StoppedMidStep("hosted", "waiting for the host's optimizer step");
}

void StepRendezvous::ended(const std::string& error, bool timed_out) {
  std::lock_guard lock(mu_);
  turn_ = Turn::kEnded;
  timed_out_ = timed_out;
  failed_ = !error.empty();
  error_ = error.empty() ? "the member's training has ended" : error;
  cv_.notify_all();
}

void StepRendezvous::wait_host(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout,
                               Turn want, const char* what) {
  const bool met = cv_.wait_for(lock, timeout, [&] { return turn_ == want || turn_ == Turn::kEnded; });
  if (turn_ == Turn::kEnded) throw HostedError(error_, timed_out_);
  if (!met) {
    throw HostedError(std::string("gossipd: no ") + what + " within " + std::to_string(timeout.count()) +
                          " ms (is every peer up and reachable? see the member's log and /status)",
                      true);
  }
}

void StepRendezvous::wait_ready(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  wait_host(lock, timeout, Turn::kHost, "start of training (the other members, or the join)");
}

void StepRendezvous::finish(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (turn_ == Turn::kEnded) return;
  if (turn_ == Turn::kHostApply)
    throw HostedError("gossipd: finish() inside a step (after begin_step)", false);
  wait_host(lock, timeout, Turn::kHost, "end of the round before the finish");
  turn_ = Turn::kMemberFinish;
  cv_.notify_all();
  if (!cv_.wait_for(lock, timeout, [&] { return turn_ == Turn::kEnded; })) {
    throw HostedError("gossipd: the member did not end within " + std::to_string(timeout.count()) +
                          " ms of finish() (its final average waits --timeout-ms for the others)",
                      true);
  }
  if (failed_) throw HostedError(error_, timed_out_);
}

float StepRendezvous::begin_step(std::chrono::milliseconds timeout, trainer::StepResult step) {
  std::unique_lock lock(mu_);
  wait_host(lock, timeout, Turn::kHost, "start of the step (the previous round)");
  step_ = step;
  turn_ = Turn::kMemberGradients;
  cv_.notify_all();
  wait_host(lock, timeout, Turn::kHostApply, "averaged gradients (the step's collective)");
  return lr_;
}

void StepRendezvous::end_step(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (turn_ != Turn::kHostApply) throw HostedError("gossipd: end_step without begin_step", false);
  turn_ = Turn::kMemberApplied;
  cv_.notify_all();
  wait_host(lock, timeout, Turn::kHost, "end of the round (the peers' segments)");
}

void StepRendezvous::set_evaluation(trainer::EvalResult e) {
  std::lock_guard lock(mu_);
  evaluation_ = e;
}

trainer::EvalResult StepRendezvous::evaluation() const {
  std::lock_guard lock(mu_);
  return evaluation_;
}

StepRendezvous::Turn StepRendezvous::turn() const {
  std::lock_guard lock(mu_);
  return turn_;
}

}  // namespace gossipd::daemon
