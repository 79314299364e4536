#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trainer/model.h"

namespace gossipd::trainer {

// What one layer of a model costs on this machine for one batch: the
// pipeline planner's profile (gossipctl plan pipeline).
struct LayerTiming {
  std::string kind;       // the layer's kind (dense, conv2d, relu, ...)
  double forward_s = 0;   // median seconds of a forward pass
  double backward_s = 0;  // median seconds of a backward pass (with its input gradient)
  // What a backward costs more when another batch ran forward since this
  // one's (the layer makes its forward state again: im2col, maxima).
  double refind_s = 0;
  size_t out_floats = 0;  // its output per sample
  size_t params = 0;
  // Of backward_s, what a split backward runs later (its parameters'
  // gradient, Layer::backward_weights); 0 for a layer that does not split.
  double weights_s = 0;
};

// Times every layer of `model` forward and backward on `batch` samples of
// random input, the median of `reps` passes after one untimed (refind_s:
// backwards alternating between two other copies of the input). The model's
// parameters and gradients are used as they are (the gradients are
// overwritten).
std::vector<LayerTiming> time_layers(Model& model, int batch, int reps);

}  // namespace gossipd::trainer
