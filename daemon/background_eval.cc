#include "daemon/background_eval.h"

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

  Job(std::span<const float> p, Done d, size_t batches)
      : params(p.begin(), p.end()),
        done(std::move(d)),
        by_background(batches),
        by_caller(batches),
        owner(std::make_unique<std::atomic<uint8_t>[]>(batches)) {
    for (size_t b = 0; b < batches; ++b) owner[b].store(kNone, std::memory_order_relaxed);
  }
  size_t batches() const { return by_background.size(); }

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

}  // namespace

BackgroundEvaluator::BackgroundEvaluator(std::unique_ptr<trainer::Model> own, trainer::Trainer& replica,
                                         const trainer::Dataset& test, bool start_thread)
    : own_(std::move(own)),
      replica_(replica.model()),
      test_(test),
      caller_(replica.evaluator()),
      background_(*own_, replica.options().eval_batch, replica.options().label_smoothing) {
  if (own_->params().size() != replica_.params().size()) {
    throw std::invalid_argument("background evaluation model has " + std::to_string(own_->params().size()) +
                                " parameters, the replica " + std::to_string(replica_.params().size()));
  }
  if (start_thread) thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

BackgroundEvaluator::~BackgroundEvaluator() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  posted_generation_.fetch_add(1, std::memory_order_seq_cst);
  posted_generation_.notify_all();
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
  uint64_t seen = 0;
  while (!stop.stop_requested()) {
    posted_generation_.wait(seen, std::memory_order_seq_cst);
    seen = posted_generation_.load(std::memory_order_seq_cst);
    Job* job = posted_.load(std::memory_order_seq_cst);
    if (job == nullptr || stop.stop_requested()) continue;
    // Hazard pointer: announce the job, then check it is still the posted
    // one; the caller frees only jobs that are neither (retire()).
    using_.store(job, std::memory_order_seq_cst);
    if (posted_.load(std::memory_order_seq_cst) == job) work(*job, stop);
    using_.store(nullptr, std::memory_order_release);
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
  const double seconds = finish();
  current_ = std::make_unique<Job>(params, std::move(done), caller_.batches(test_));
  posted_.store(current_.get(), std::memory_order_seq_cst);
  posted_generation_.fetch_add(1, std::memory_order_seq_cst);
  posted_generation_.notify_one();
  return seconds;
}

void BackgroundEvaluator::poll() {
  if (current_ && current_->background_done.load(std::memory_order_acquire) == current_->batches()) publish();
}

double BackgroundEvaluator::finish() {
  if (!current_) return 0;
  const auto start = std::chrono::steady_clock::now();
  Job& job = *current_;
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
  publish();
  return since(start);
}

void BackgroundEvaluator::publish() {
  std::unique_ptr<Job> job = std::move(current_);
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
  retired_.push_back(std::move(job));
  Job* posted = posted_.load(std::memory_order_seq_cst);
  Job* in_use = using_.load(std::memory_order_seq_cst);
  std::erase_if(retired_,
                [&](const std::unique_ptr<Job>& j) { return j.get() != posted && j.get() != in_use; });
}

}  // namespace gossipd::daemon
