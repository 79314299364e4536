#include "daemon/worker/background_eval.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace gossipd::daemon {

// One evaluation. `params` and `done` are fixed at submission; each batch is
// evaluated by the background thread (into `by_background`) or by the caller
// (into `by_caller`), and `owner` says whose result counts: the first to
// claim it after computing it.
struct BackgroundEvaluator::Job {
  enum : uint8_t { kNone = 0, kBackground = 1, kCaller = 2 };

  Job(std::span<const float> p, Done d, size_t batches, uint64_t n)
      : number(n),
        submitted(std::chrono::steady_clock::now()),
        params(p.begin(), p.end()),
        done(std::move(d)),
        by_background(batches),
        by_caller(batches),
        owner(std::make_unique<std::atomic<uint8_t>[]>(batches)) {
    for (size_t b = 0; b < batches; ++b) owner[b].store(kNone, std::memory_order_relaxed);
  }
  size_t batches() const { return by_background.size(); }

  const uint64_t number;  // in submission order, from 0
  const std::chrono::steady_clock::time_point submitted;
  const std::vector<float> params;
  Done done;
  std::vector<trainer::EvalBatch> by_background;
  std::vector<trainer::EvalBatch> by_caller;
  std::unique_ptr<std::atomic<uint8_t>[]> owner;
  std::atomic<size_t> background_done{0};  // batches the background thread owns
  std::atomic<bool> taken_over{false};     // the caller finishes it: the background thread stops
};

namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

size_t resolve_max_pending(size_t requested, size_t params) {
  if (requested > 0) return requested;
  const size_t bytes = std::max<size_t>(params * sizeof(float), 1);
  return std::clamp<size_t>(BackgroundEvaluator::kPendingBytes / bytes, 1, BackgroundEvaluator::kMaxPending);
}

}  // namespace

BackgroundEvaluator::BackgroundEvaluator(std::unique_ptr<trainer::Model> own, trainer::Trainer& replica,
                                         const trainer::Dataset& test, size_t max_pending, bool start_thread,
                                         std::chrono::steady_clock::duration max_wait)
    : own_(std::move(own)),
      replica_(replica.model()),
      test_(test),
      caller_(replica.evaluator()),
      background_(*own_, replica.options().eval_batch, replica.options().label_smoothing),
      slots_(resolve_max_pending(max_pending, replica_.params().size())),
      max_wait_(max_wait) {
  if (own_->params().size() != replica_.params().size()) {
    throw std::invalid_argument("background evaluation model has " + std::to_string(own_->params().size()) +
                                " parameters, the replica " + std::to_string(replica_.params().size()));
  }
  if (start_thread) thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

BackgroundEvaluator::~BackgroundEvaluator() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.fetch_add(1, std::memory_order_seq_cst);
  wake_.notify_all();
  // The thread stops at its next batch; at idle priority on a busy machine
  // finishing the one it is in could take a while, so where we may (root,
  // or RLIMIT_NICE) it gets normal priority back for that.
  sched_param none{};
  pthread_setschedparam(thread_.native_handle(), SCHED_OTHER, &none);
  // ~jthread joins (declared last).
}

void BackgroundEvaluator::loop(std::stop_token stop) {
  // Only the cycles nothing else wants (sched(7)); where the policy is not
  // available the thread runs at normal priority, which is still correct.
  sched_param none{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
  uint64_t next = 0;  // the number of the next job to look at
  while (!stop.stop_requested()) {
    const uint64_t wake = wake_.load(std::memory_order_seq_cst);
    next = std::max(next, published_.load(std::memory_order_seq_cst));
    if (next >= submitted_.load(std::memory_order_seq_cst)) {
      wake_.wait(wake, std::memory_order_seq_cst);  // returns at once if a submit came after the load
      continue;
    }
    std::atomic<Job*>& slot = slots_[next % slots_.size()];
    if (Job* job = slot.load(std::memory_order_seq_cst)) {
      // Hazard pointer: announce the job, then check it is still in its
      // slot; the caller frees only jobs that are in no slot and not this
      // one (retire()). A job of another number there means job `next` was
      // published already.
      using_.store(job, std::memory_order_seq_cst);
      if (slot.load(std::memory_order_seq_cst) == job && job->number == next) work(*job, stop);
      using_.store(nullptr, std::memory_order_release);
    }
    ++next;
  }
}

void BackgroundEvaluator::work(Job& job, const std::stop_token& stop) {
  if (job.taken_over.load(std::memory_order_acquire)) return;
  std::copy(job.params.begin(), job.params.end(), own_->params().begin());
  for (size_t b = 0; b < job.batches(); ++b) {
    if (stop.stop_requested() || job.taken_over.load(std::memory_order_acquire)) return;
    if (job.owner[b].load(std::memory_order_acquire) != Job::kNone) continue;
    job.by_background[b] = background_.run_batch(test_, b);
    uint8_t none = Job::kNone;
    if (job.owner[b].compare_exchange_strong(none, Job::kBackground, std::memory_order_acq_rel)) {
      job.background_done.fetch_add(1, std::memory_order_release);
    }
  }
}

double BackgroundEvaluator::submit(std::span<const float> params, Done done) {
  if (params.size() != own_->params().size()) {
    throw std::invalid_argument("evaluation of " + std::to_string(params.size()) +
                                " parameters on a model of " + std::to_string(own_->params().size()));
  }
  double seconds = 0;
  if (pending_.size() >= slots_.size()) {
    const auto start = std::chrono::steady_clock::now();
    finish_oldest();
    seconds = since(start);
  }
  const uint64_t number = submitted_.load(std::memory_order_relaxed);  // written by this thread only
  pending_.push_back(std::make_unique<Job>(params, std::move(done), caller_.batches(test_), number));
  slots_[number % slots_.size()].store(pending_.back().get(), std::memory_order_seq_cst);
  submitted_.store(number + 1, std::memory_order_seq_cst);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  wake_.notify_one();
  return seconds;
}

double BackgroundEvaluator::poll() {
  const auto complete = [&] {
    return !pending_.empty() &&
           pending_.front()->background_done.load(std::memory_order_acquire) == pending_.front()->batches();
  };
  while (complete()) publish_oldest();
  const auto now = std::chrono::steady_clock::now();
  if (pending_.empty() || now - pending_.front()->submitted <= max_wait_) return 0;
  finish_oldest();
  while (complete()) publish_oldest();
  return since(now);
}

double BackgroundEvaluator::finish() {
  if (pending_.empty()) return 0;
  const auto start = std::chrono::steady_clock::now();
  while (!pending_.empty()) finish_oldest();
  return since(start);
}

void BackgroundEvaluator::finish_oldest() {
  Job& job = *pending_.front();
  if (job.background_done.load(std::memory_order_acquire) < job.batches()) {
    job.taken_over.store(true, std::memory_order_release);
    std::span<float> p = replica_.params();
    live_.assign(p.begin(), p.end());
    std::copy(job.params.begin(), job.params.end(), p.begin());
    for (size_t b = 0; b < job.batches(); ++b) {
      if (job.owner[b].load(std::memory_order_acquire) != Job::kNone) continue;
      // The background thread may be inside this batch; whoever claims it first counts.
      job.by_caller[b] = caller_.run_batch(test_, b);
      uint8_t none = Job::kNone;
      if (job.owner[b].compare_exchange_strong(none, Job::kCaller, std::memory_order_acq_rel))
        ++batches_on_caller_;
    }
    std::copy(live_.begin(), live_.end(), p.begin());
  }
  publish_oldest();
}

void BackgroundEvaluator::publish_oldest() {
  std::unique_ptr<Job> job = std::move(pending_.front());
  pending_.pop_front();
  slots_[job->number % slots_.size()].store(nullptr, std::memory_order_seq_cst);
  published_.store(job->number + 1, std::memory_order_seq_cst);
  std::vector<trainer::EvalBatch> sums(job->batches());
  for (size_t b = 0; b < sums.size(); ++b) {
    sums[b] = job->owner[b].load(std::memory_order_acquire) == Job::kBackground ? job->by_background[b]
                                                                                : job->by_caller[b];
  }
  const trainer::EvalResult result = trainer::Evaluator::total(sums);
  Done done = std::move(job->done);
  try {
    done(result, job->params);
  } catch (...) {
    retire(std::move(job));
    throw;
  }
  retire(std::move(job));
}

void BackgroundEvaluator::retire(std::unique_ptr<Job> job) {
  retired_.push_back(std::move(job));  // already out of its slot
  Job* in_use = using_.load(std::memory_order_seq_cst);
  std::erase_if(retired_, [&](const std::unique_ptr<Job>& j) { return j.get() != in_use; });
}

}  // namespace gossipd::daemon
