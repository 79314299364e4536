#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainer/layer.h"

namespace gossipd::trainer {

// One contiguous run of the parameter buffer: the unit of exchange between
// replicas (one per layer block that has parameters).
struct ParamSegment {
  std::string name;
  size_t offset = 0;  // in floats
  size_t length = 0;  // in floats
};

// A sequential network whose parameters live in ONE contiguous float buffer
// and whose gradients live in another of the same size, so that averaging
// protocols can send segments of them without copying.
class Model {
 public:
  // Layers are added in order; `block` names the segment that a layer's
  // parameters belong to (layers of one block share a segment).
  explicit Model(Shape input);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  void add(std::unique_ptr<Layer> layer, std::string block = "");
  Shape current_shape() const;
  // Allocates the buffers, binds every layer and initialises from `seed`.
  void finalize(uint64_t seed);
  // A model computed outside (a PyTorch process holds its layers): no
  // layers here, only the buffers, laid out as `segments` say (contiguous,
  // in order) and starting at `initial`. forward() and backward() are never
  // called on it (the trainer's HostedStep takes their place).
  void host(std::vector<ParamSegment> segments, std::vector<float> initial);

  Shape input_shape() const { return input_; }
  int classes() const { return static_cast<int>(current_shape().size()); }
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() { return grads_; }
  const std::vector<ParamSegment>& segments() const { return segments_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }

  // Forward pass; returns the logits [batch, classes], valid until the next call.
  const float* forward(const float* input, int batch);
  // Backward from d(loss)/d(logits); overwrites grads(). The input gradient
  // of the first layer is never computed.
  void backward(const float* input, const float* dlogits, int batch);

  std::vector<GemmShape> gemm_shapes(int batch) const;

 private:
  void ensure_batch(int batch);

  Shape input_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> blocks_;
  std::vector<float> params_;
  std::vector<float> grads_;
  std::vector<ParamSegment> segments_;
  std::vector<std::vector<float>> acts_;   // output of layer i
  std::vector<std::vector<float>> dacts_;  // gradient w.r.t. output of layer i
  int capacity_ = 0;
  bool finalized_ = false;
};

}  // namespace gossipd::trainer
