#pragma once

#include <string>
#include <vector>

#include "trainer/model.h"

namespace gossipd::daemon {

// A model's layer as the synchronous modes split it: what it computes on,
// and what a planner needs to price it. Built from the model itself, so a
// plan and a run cannot disagree on the network.
struct PlanLayer {
  enum class Kind {
    kDense,  // rows of W split over a grid column
    kConv,   // k x k, stride 1, padding k/2: image rows split, halo of k/2 rows
    kPool,   // max-pool, window = stride = `kernel`: a row split must not cut a window
    kOther,  // elementwise or a reshape: works on whatever block it is given
  };
  Kind kind = Kind::kOther;
  std::string name;  // its segment (dense1, conv2, ...) or the trainer's kind (relu, maxpool, flatten)
  trainer::Shape in, out;
  int kernel = 0;
  size_t params = 0;
  bool input_grad = true;  // false for the first layer: its input gradient is never computed
};

// The layers of `model` in order. Throws std::invalid_argument naming the
// layer for a convolution the modes cannot split (stride != 1 or padding
// != kernel/2).
std::vector<PlanLayer> plan_layers(const trainer::Model& model);

// The network in one line: input HxWxC, then d<outputs> per dense layer,
// c<k>x<k>x<channels> per convolution, p<window> per pool.
std::string describe(const std::vector<PlanLayer>& layers);

// The image rows a split of the first convolution's input must come in
// multiples of, so that no pooling window below straddles a split: the
// product of the pool windows (1 without pooling).
int row_unit(const std::vector<PlanLayer>& layers);

}  // namespace gossipd::daemon
