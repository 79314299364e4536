#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "trainer/model.h"

namespace gossipd::trainer {

enum class OptimizerKind { kSgd, kLars };

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kSgd;
  float momentum = 0.9f;  // 0: plain SGD
  bool nesterov = false;
  float weight_decay = 0.0f;
  float lars_eta = 0.001f;  // LARS trust coefficient
  // The state's floats per parameter: 1, the velocity. A host that steps
  // with its own optimizer (daemon/hosted: Adam keeps two moments) asks for
  // more; the state is then its storage (joins, checkpoints, re-synced
  // rings carry it) and this optimizer never steps; 0 where the host keeps
  // its state in the parameters' segments (gossipd.torch under gossip),
  // and a step throws for the sizes.
  size_t state_per_param = 1;
};

// SGD with optional (Nesterov) momentum and weight decay, as in PyTorch:
//   g' = g + wd * w;  v = mu * v + g';  d = nesterov ? g' + mu * v : v;  w -= lr * d
// LARS (You et al. 2017) scales the step per segment (layer block):
//   local = eta * |w| / (|g| + wd * |w|)  (1 when a norm is 0)
//   v = mu * v + lr * local * (g + wd * w);  w -= v
// The velocity is one buffer parallel to the parameters, so it can be
// snapshotted and exchanged like them.
class Optimizer {
 public:
  Optimizer(OptimizerOptions options, std::vector<ParamSegment> segments, size_t param_count);

  void step(std::span<float> params, std::span<const float> grads, float lr);
  // Sums, over the processes that each hold a part of the same segments,
  // the squared norms LARS takes of them: |w|^2 and |g|^2 of segment s at
  // 2s and 2s + 1 (this process's parts in, the whole segments' out).
  using NormSum = std::function<void(std::span<double> squares)>;
  // A step on this process's part of the segments (model parallelism).
  void step(std::span<float> params, std::span<const float> grads, float lr, const NormSum& sum);
  // A step on segments [first, last) of the table only (the rest, and
  // their state, untouched): data-parallel replicas that each update a
  // share of the parameters and gather the rest (ZeRO's sharded update).
  // `params` and `grads` are whole.
  void step_segments(std::span<float> params, std::span<const float> grads, float lr, size_t first,
                     size_t last);
  const std::vector<ParamSegment>& segments() const { return segments_; }

  const OptimizerOptions& options() const { return options_; }
  // From the next step on (compute groups tune it while training).
  void set_momentum(float momentum) { options_.momentum = momentum; }
  std::span<float> state() { return velocity_; }
  std::span<const float> state() const { return velocity_; }
  std::string name() const;

 private:
  void sgd_step(std::span<float> w, std::span<const float> g, std::span<float> v, float lr) const;
  void lars_step(std::span<float> w, std::span<const float> g, std::span<float> v, float lr, double wn,
                 double gn) const;

  OptimizerOptions options_;
  std::vector<ParamSegment> segments_;
  std::vector<float> velocity_;
};

}  // namespace gossipd::trainer
