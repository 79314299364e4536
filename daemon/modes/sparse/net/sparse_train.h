#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "daemon/modes/sparse/net/sparse_backprop.h"
#include "daemon/modes/sparse/net/sparse_net.h"
#include "trainer/optimizer.h"

namespace gossipd::trainer::sparse {

// A sparse network made trainable: its layers (ReLU, no cap) and a dense
// softmax head of `classes` outputs on the last layer's N neurons.
struct SparseModel {
  SparseNet net;
  HeadShare head;                // every neuron of the last layer
  std::vector<float> head_bias;  // classes
};

// The pattern's edges with He-initialised weights (normal, variance 2 /
// fan-in), zero biases, a head of `classes` (Glorot-uniform weights, zero
// biases): the same for the same seed on every process.
SparseModel make_trainable(const SparseNet& pattern, uint32_t classes, uint64_t seed);

struct SparseStep {
  double loss = 0;  // mean over the batch
  int correct = 0;
};

// A batch: samples [first, first + count) of `inputs` with their labels.
struct SparseBatch {
  const SparseInputs& inputs;
  std::span<const uint8_t> labels;  // one per input
  size_t first = 0;
  size_t count = 0;
};

// The samples `which` of `inputs`, in that order (a shuffled batch).
SparseInputs pick_samples(const SparseInputs& inputs, std::span<const uint32_t> which);

// Loads a batch neuron-major (y[j * count + lane]), zeros elsewhere; with
// `only`, just those neurons' entries (ascending), the others left zero.
void load_batch(const SparseBatch& b, std::span<float> y, const std::vector<uint32_t>* only = nullptr);

// The softmax cross-entropy of class-major logits (classes × count):
// the loss and correct count, and d(mean loss)/d(logits) class-major.
SparseStep softmax_step(std::span<const float> logits, const SparseBatch& b, uint32_t classes,
                        std::span<float> dlogits);

// The update of a sparse model's parameters, which live in several vectors
// (each layer's weights and biases, the head's): one trainer::Optimizer per
// vector, so SGD, momentum, Nesterov and weight decay are gossipd train's
// (LARS takes a vector as its layer). Vector k is the k-th passed to step()
// in an update, the same order every time.
class SparseUpdate {
 public:
  explicit SparseUpdate(OptimizerOptions o) : o_(o) {}
  void step(size_t k, std::span<float> p, std::span<const float> g, float lr);

 private:
  OptimizerOptions o_;
  std::vector<std::unique_ptr<Optimizer>> per_vector_;
};

// Serial training on batches of samples; the reference the row-parallel
// trainer (daemon/modes/sparse/row_training.h) is held to.
class SparseTrainer {
 public:
  SparseTrainer(SparseModel model, OptimizerOptions o);

  // One step at learning rate `lr`.
  SparseStep step(const SparseBatch& batch, float lr);
  // Loss and correct count over `inputs`, in batches of `batch`.
  SparseStep evaluate(const SparseInputs& inputs, std::span<const uint8_t> labels, size_t batch = 256);

  const SparseModel& model() const { return m_; }

  // The last step's gradients (before its update): per layer d/dw (as the
  // layer's edges) and d/db, then the head's d/dV and d/dc.
  struct Gradients {
    const std::vector<std::vector<float>>& weights;
    const std::vector<std::vector<float>>& bias;
    const std::vector<float>& head_weights;
    const std::vector<float>& head_bias;
  };
  Gradients gradients() const { return {dw_, db_, dv_, dc_}; }

 private:
  // Activations of every layer for the batch; logits class-major.
  void forward(const SparseBatch& b);

  SparseModel m_;
  SparseUpdate update_;
  std::vector<std::vector<float>> ys_;
  std::vector<float> logits_, dlogits_, g_, gprev_, dv_, dc_;
  std::vector<std::vector<float>> dw_, db_;
};

}  // namespace gossipd::trainer::sparse
