#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trainer/model.h"

namespace gossipd::trainer {

// A contiguous range of a model's layers, [first, last), run for
// micro-batches in whatever order a pipeline schedule asks: each
// micro-batch's forward stashes its activations until its backward, which
// adds its parameter gradients to the model's gradient buffer and returns the gradient
// with respect to its input. Knows nothing about the network: a pipeline
// stage feeds it what arrived and sends what it returns. Nothing else may
// run the model backward while a stage accumulates in its gradient buffer.
//
// The range's parameters are the model's own (contiguous, since layers
// bind their parameters in order); the model's other layers are not run.
class Stage {
 public:
  // `model` is finalized and outlives the stage.
  Stage(Model& model, size_t first, size_t last);
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  size_t first() const { return first_; }
  size_t last() const { return last_; }
  Shape input_shape() const;
  Shape output_shape() const;
  // The range's parameters, a view into the model's buffer; offset() is
  // where they start in it.
  std::span<float> params();
  size_t offset() const { return offset_; }
  // The model's segments in the range, offsets relative to params().
  const std::vector<ParamSegment>& segments() const { return segments_; }
  // The sum of the parameter gradients of every backward since zero_grads().
  // They live in the model's gradient buffer: the layers add to it (the
  // first backward after zero_grads() writes it instead, so zeroing costs
  // no pass over it unless they are read before any backward).
  std::span<const float> grads() const;
  std::span<float> grads();
  void zero_grads() { fresh_input_ = fresh_weights_ = true; }

  // Weight stashing (PipeDream): each micro-batch's backward runs with the
  // parameters its forward ran with, though updates came in between. A
  // copy is taken only when an update comes while micro-batches are in
  // flight (keep_weights_in_flight), one shared by all of them, and their
  // backward runs on it by rebinding the layers: no copy per micro-batch.
  void stash_weights(bool on) { stash_weights_ = on; }
  // The parameters are about to change: with weight stashing, the
  // micro-batches in flight keep the ones their forward ran with.
  void keep_weights_in_flight();

  // Runs micro-batch `micro` (`batch` samples, input_shape() each) forward;
  // the output is valid until its backward. Throws std::logic_error if it
  // is already in flight.
  std::span<const float> forward(uint64_t micro, std::span<const float> in, int batch);
  // Runs it backward from the gradient of its output, adds its parameter
  // gradients to grads() and writes the gradient of its input into `din`
  // unless `din` is empty (the first stage needs none). Frees its stash.
  void backward(uint64_t micro, std::span<const float> dout, std::span<float> din);
  // The same in two calls, as the zb schedule runs it: backward_input
  // writes the input's gradient (and the gradients of layers that cannot
  // split their backward) and keeps the stash with every splitting layer's
  // output gradient; backward_weights adds those layers' parameter
  // gradients and frees the stash. Every float is what backward() makes,
  // as long as each kind of call comes in micro-batch order.
  void backward_input(uint64_t micro, std::span<const float> dout, std::span<float> din);
  void backward_weights(uint64_t micro);

  size_t in_flight() const { return live_.size(); }
  // High-water marks since construction: micro-batches in flight, and the
  // activation floats their stashes held (input and every layer's output).
  size_t most_in_flight() const { return most_in_flight_; }
  size_t most_stashed_floats() const { return most_stashed_; }

  // The floats one micro-batch of `batch` samples stashes in layers
  // [first, last) of `model`: its input and every layer's output.
  static size_t stash_floats(const Model& model, size_t first, size_t last, int batch);

 private:
  struct Stash {
    uint64_t micro = 0;
    int batch = 0;
    std::vector<float> input;
    std::vector<std::vector<float>> outputs;      // per layer of the range
    std::shared_ptr<std::vector<float>> weights;  // weight stashing: its forward's, if updated since
    std::vector<std::vector<float>> douts;        // backward_input: splitting layers' output gradients
    bool input_done = false;                      // backward_input ran
    size_t floats() const;
  };
  Stash& take(uint64_t micro, int batch);
  Stash& find(uint64_t micro);
  void release(uint64_t micro);
  Stash& checked(uint64_t micro, std::span<const float> dout, std::span<float> din);
  template <typename F>
  void with_weights(Stash& s, F&& run);  // runs with the weights s's forward used
  void run_backward(Stash& s, std::span<const float> dout, std::span<float> din, bool split);
  bool writes_late(size_t layer) const;  // its parameter gradients come in backward_weights
  const float* layer_input(const Stash& s, size_t layer) const;
  // The range's layers onto `params` (and the model's gradients).
  void bind_layers(std::span<float> params);
  // The range's gradients, zeroed first if no backward ran since zero_grads().
  std::span<float> zeroed_if_fresh() const;

  Model& model_;
  size_t first_, last_;
  size_t offset_ = 0, count_ = 0;
  std::vector<ParamSegment> segments_;
  std::vector<Stash> live_;  // micro-batches in flight
  std::vector<Stash> free_;  // their buffers, for reuse
  std::vector<float> dbuf_[2];
  std::vector<size_t> layer_offsets_;                  // each layer's first parameter, relative to params()
  std::shared_ptr<std::vector<float>> spare_weights_;  // a stashed copy no longer in use
  bool stash_weights_ = false;
  // zero_grads() since the last backward that wrote the gradients of the
  // layers that write them in backward_input (or backward), and of those
  // that write them in backward_weights: the buffer there is not yet zero.
  mutable bool fresh_input_ = true, fresh_weights_ = true;
  size_t stashed_ = 0, most_stashed_ = 0, most_in_flight_ = 0;
};

}  // namespace gossipd::trainer
