#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "daemon/modes/pipeline/pipeline_comm.h"
#include "daemon/modes/pipeline/pipeline_schedule.h"
#include "trainer/loss.h"
#include "trainer/optimizer.h"
#include "trainer/stage.h"

namespace gossipd::daemon {

struct PipelineStepOptions {
  topology::PipelineSchedule schedule = topology::PipelineSchedule::kOneFOneB;
  size_t micros = 4;           // M micro-batches per batch
  size_t batch = 64;           // one pipeline's batch; M divides it
  size_t steps_per_epoch = 1;  // 1f1b-async runs one schedule over an epoch's micro-batches
  float label_smoothing = 0.0f;
};

// One stage's part of a pipeline's training steps: it runs its schedule's
// forward and backward passes (topology::pipeline_ops), receiving its input
// from the stage before and its output's gradient from the stage after,
// sending its output and its input's gradient on without waiting (a send of
// micro-batch m overlaps the compute of the next one). The last stage turns
// logits into the loss's gradient. gpipe, 1f1b and zb (where a backward
// but the first stage's comes in two ops, the input gradient sent after the
// first): gradients accumulate over the batch's micro-batches, are averaged
// over the replicas, and the stage takes one optimizer step. 1f1b-async: the schedule runs over a
// whole epoch's micro-batches without draining, and every backward (with
// the weights its forward used) is followed by an update.
class PipelineStep {
 public:
  PipelineStep(trainer::Stage& stage, PipelineComm& comm, trainer::Optimizer& optimizer,
               PipelineStepOptions o);
  ~PipelineStep();
  PipelineStep(const PipelineStep&) = delete;
  PipelineStep& operator=(const PipelineStep&) = delete;

  // One batch: `x` its samples (read by the first stage), `y` their labels
  // (read by the last). The loss and correct count over the batch on the
  // last stage. 1f1b-async drains at the epoch's last batch only (before
  // its evaluation).
  trainer::LossResult train(std::span<const float> x, std::span<const uint8_t> y, float lr);

  // Seconds of the last batch this stage computed, and the seconds from its
  // first pass's start to its last pass's end: 1 - busy / span is its bubble.
  double busy_seconds() const { return busy_; }
  double span_seconds() const { return span_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Batch {
    std::span<const float> x;
    std::span<const uint8_t> y;
    uint64_t base = 0;  // key of the batch's first micro-batch
  };
  void run(const topology::PipelineOp& op, const Batch& b, float lr, trainer::LossResult& sum);
  void forward(uint64_t key, const Batch& b, trainer::LossResult& sum);
  void backward(uint64_t key, bool input_only, float lr);
  template <typename F>
  void timed(F&& compute);              // runs it, counted as busy
  std::vector<float>& gradient_slot();  // a free buffer for an input gradient on its way
  void update(float lr);
  void share_segments();

  trainer::Stage& stage_;
  PipelineComm& comm_;
  trainer::Optimizer& optimizer_;
  PipelineStepOptions o_;
  size_t micro_batch_;
  trainer::SoftmaxCrossEntropy loss_;
  std::vector<topology::PipelineOp> ops_;  // one batch's, or one epoch's (1f1b-async)
  size_t next_op_ = 0;                     // 1f1b-async: where the epoch's schedule stands
  uint64_t epoch_base_ = 0;                // 1f1b-async: key of the epoch's first micro-batch
  uint64_t batches_ = 0;                   // batches started
  std::vector<float> input_, dout_;
  std::unordered_map<uint64_t, std::vector<float>> dlogits_;  // last stage: per micro-batch in flight
  std::unordered_map<uint64_t, PipelineComm::SendHandle> sent_outputs_;
  std::vector<std::vector<float>> slots_;
  std::vector<PipelineComm::SendHandle> slot_sends_;
  size_t next_slot_ = 0;
  double busy_ = 0, span_ = 0;
  std::vector<size_t> shards_;          // floats each replica updates (empty: all, after an allreduce)
  std::vector<size_t> shard_segments_;  // replica r's segments: [r], [r + 1])
  size_t shard_offset_ = 0;             // this replica's first float
};

}  // namespace gossipd::daemon
