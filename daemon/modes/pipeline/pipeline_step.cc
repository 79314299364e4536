#include "daemon/modes/pipeline/pipeline_step.h"

#include <algorithm>
#include <stdexcept>

namespace gossipd::daemon {
namespace {

using topology::PipelineOp;
using topology::PipelineSchedule;

bool asynchronous(const PipelineStepOptions& o) { return o.schedule == PipelineSchedule::kOneFOneBAsync; }

// Micro-batches per schedule: a batch's, or an epoch's without draining.
size_t scheduled_micros(const PipelineStepOptions& o) {
  return asynchronous(o) ? o.micros * o.steps_per_epoch : o.micros;
}

}  // namespace

PipelineStep::PipelineStep(trainer::Stage& stage, PipelineComm& comm, trainer::Optimizer& optimizer,
                           PipelineStepOptions o)
    : stage_(stage),
      comm_(comm),
      optimizer_(optimizer),
      o_(o),
      micro_batch_(o.micros == 0 ? 0 : o.batch / o.micros),
      loss_(static_cast<int>(stage.output_shape().size()), o.label_smoothing),
      ops_(topology::pipeline_ops(o.schedule, comm.shape().stages, scheduled_micros(o), comm.at().stage)),
      slots_(2),
      slot_sends_(2) {
  if (o.micros == 0 || o.batch % o.micros != 0)
    throw std::invalid_argument("pipeline: " + std::to_string(o.micros) +
                                " micro-batches do not divide the batch of " + std::to_string(o.batch));
  stage_.stash_weights(asynchronous(o));
  stage_.zero_grads();
  share_segments();
}

// Replica r updates segments [shard_segments_[r], shard_segments_[r + 1]),
// about 1/D of the stage's parameters; with fewer segments than replicas,
// each replica updates them all after an allreduce.
void PipelineStep::share_segments() {
  const size_t replicas = comm_.shape().replicas;
  const std::vector<trainer::ParamSegment>& segments = optimizer_.segments();
  size_t total = 0;
  bool contiguous = true;
  for (const trainer::ParamSegment& s : segments) {
    contiguous = contiguous && s.offset == total;
    total += s.length;
  }
  if (replicas == 1 || segments.size() < replicas || !contiguous || total != stage_.params().size()) return;
  shard_segments_.assign(1, 0);
  size_t sum = 0;
  for (size_t k = 0; k + 1 < segments.size(); ++k) {
    sum += segments[k].length;
    const size_t r = shard_segments_.size();  // the boundary next placed
    const size_t left = segments.size() - k - 1;
    const bool full = static_cast<double>(sum) * static_cast<double>(replicas) >=
                      static_cast<double>(total) * static_cast<double>(r);
    if (r < replicas && (full || left == replicas - r)) shard_segments_.push_back(k + 1);
  }
  shard_segments_.push_back(segments.size());
  for (size_t r = 0; r < replicas; ++r) {
    size_t n = 0;
    for (size_t k = shard_segments_[r]; k < shard_segments_[r + 1]; ++k) n += segments[k].length;
    if (r == comm_.at().replica) shard_offset_ = segments[shard_segments_[r]].offset;
    shards_.push_back(n);
  }
}

trainer::LossResult PipelineStep::train(std::span<const float> x, std::span<const uint8_t> y, float lr) {
  const uint64_t batch = batches_++;
  Batch b{x, y, batch * o_.micros};
  size_t end = ops_.size();
  if (asynchronous(o_)) {
    const uint64_t in_epoch = batch % o_.steps_per_epoch;
    if (in_epoch == 0) {
      next_op_ = 0;
      epoch_base_ = b.base;
    }
    // Up to the next batch's first forward; the epoch's last batch drains.
    const uint64_t stop_at = (in_epoch + 1) * o_.micros;
    for (end = next_op_; end < ops_.size(); ++end) {
      if (ops_[end].kind == PipelineOp::kForward && ops_[end].micro >= stop_at) break;
    }
    b.base = epoch_base_;  // ops count the epoch's micro-batches
  } else {
    next_op_ = 0;
  }
  trainer::LossResult sum;
  busy_ = 0;
  const Clock::time_point start = Clock::now();
  for (; next_op_ < end; ++next_op_) run(ops_[next_op_], b, lr, sum);
  span_ = std::chrono::duration<double>(Clock::now() - start).count();
  if (!asynchronous(o_)) update(lr);
  sum.loss /= static_cast<double>(o_.micros);
  return sum;
}

void PipelineStep::run(const PipelineOp& op, const Batch& b, float lr, trainer::LossResult& sum) {
  const uint64_t key = b.base + op.micro;
  switch (op.kind) {
    case PipelineOp::kForward:
      forward(key, b, sum);
      break;
    case PipelineOp::kBackwardWeights:
      timed([&] { stage_.backward_weights(key); });
      break;
    default:
      backward(key, op.kind == PipelineOp::kBackwardInput, lr);
  }
}

void PipelineStep::forward(uint64_t key, const Batch& b, trainer::LossResult& sum) {
  const size_t in_floats = stage_.input_shape().size() * micro_batch_;
  const size_t m = (key - b.base) % o_.micros;  // within its batch
  std::span<const float> in;
  if (comm_.first()) {
    in = b.x.subspan(m * in_floats, in_floats);
  } else {
    input_.resize(in_floats);
    comm_.recv_activation(key, input_);
    in = input_;
  }
  const Clock::time_point start = Clock::now();
  const std::span<const float> out = stage_.forward(key, in, static_cast<int>(micro_batch_));
  if (comm_.last()) {
    std::vector<float>& d = dlogits_[key];
    d.resize(out.size());
    const trainer::LossResult r = loss_.compute(out.data(), b.y.subspan(m * micro_batch_, micro_batch_), d);
    // d(mean over the batch) = d(mean over the micro-batch) / M.
    for (float& v : d) v /= static_cast<float>(o_.micros);
    sum.loss += r.loss;
    sum.correct += r.correct;
  }
  busy_ += std::chrono::duration<double>(Clock::now() - start).count();
  if (!comm_.last()) sent_outputs_[key] = comm_.send_activation(key, out);
}

// The whole backward, or (`input_only`) its input gradient, whose weights'
// gradient comes in a kBackwardWeights op.
void PipelineStep::backward(uint64_t key, bool input_only, float lr) {
  std::span<const float> dout;
  if (comm_.last()) {
    dout = dlogits_.at(key);
  } else {
    dout_.resize(stage_.output_shape().size() * micro_batch_);
    comm_.recv_gradient(key, dout_);
    dout = dout_;
    comm_.wait(sent_outputs_.at(key));  // the output lives in the stash its backward frees
    sent_outputs_.erase(key);
  }
  std::vector<float>* din = comm_.first() ? nullptr : &gradient_slot();
  if (din) din->resize(stage_.input_shape().size() * micro_batch_);
  const std::span<float> to = din ? std::span<float>(*din) : std::span<float>();
  timed([&] { input_only ? stage_.backward_input(key, dout, to) : stage_.backward(key, dout, to); });
  dlogits_.erase(key);
  if (din) slot_sends_[next_slot_] = comm_.send_gradient(key, *din);
  next_slot_ = (next_slot_ + 1) % slots_.size();
  if (asynchronous(o_)) update(lr);
}

template <typename F>
void PipelineStep::timed(F&& compute) {
  const Clock::time_point start = Clock::now();
  compute();
  busy_ += std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<float>& PipelineStep::gradient_slot() {
  comm_.wait(slot_sends_[next_slot_]);
  return slots_[next_slot_];
}

// The accumulated gradients, averaged over the replicas, into one step:
// with D > 1 each replica sums and updates its share of the stage's
// segments and gathers the others' (the bytes of an allreduce, 1/D of
// the update each).
void PipelineStep::update(float lr) {
  const std::span<float> g = stage_.grads();
  stage_.keep_weights_in_flight();
  if (shards_.empty()) {
    if (const size_t replicas = comm_.shape().replicas; replicas > 1) {
      comm_.allreduce_replicas(g);
      const float mean = 1.0f / static_cast<float>(replicas);
      for (float& v : g) v *= mean;
    }
    optimizer_.step(stage_.params(), g, lr);
  } else {
    comm_.reduce_scatter_replicas(g, shards_);
    const size_t r = comm_.at().replica;
    const float mean = 1.0f / static_cast<float>(comm_.shape().replicas);
    for (float& v : g.subspan(shard_offset_, shards_[r])) v *= mean;
    optimizer_.step_segments(stage_.params(), g, lr, shard_segments_[r], shard_segments_[r + 1]);
    comm_.allgather_replicas(stage_.params(), shards_);
  }
  stage_.zero_grads();
}

// Input gradients still on their way read the slots: they go before the
// slots do (a failed peer's are abandoned with the transport's error).
PipelineStep::~PipelineStep() {
  try {
    for (const auto& h : slot_sends_) comm_.wait(h);
  } catch (const std::exception&) {
  }
}

}  // namespace gossipd::daemon
