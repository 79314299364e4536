#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/modes/grid/grid_comm.h"
#include "daemon/modes/grid/grid_shape.h"
#include "daemon/plan/plan_layers.h"
#include "topology/split.h"
#include "trainer/layer.h"

namespace gossipd::daemon {

// One layer of a network's convolutional front as a grid process runs it:
// the trainer's own layer, made for this process's rows of the image.
struct FrontLayer {
  PlanLayer::Kind kind = PlanLayer::Kind::kOther;
  std::vector<topology::BlockRange> rows;  // of the layer's input, per grid row
  size_t row_floats = 0;                   // floats in one image row of the input (width x channels)
  size_t halo = 0;                         // a convolution's kernel / 2 rows from each neighbour
  bool input_grad = true;                  // false for the network's first layer
  size_t serial_offset = 0;                // of its parameters in the serial model's
  size_t params = 0;
  std::unique_ptr<trainer::Layer> layer;  // null for the flatten (our rows are already in its order)
};

// The layers before a network's first dense one (convolutions, ReLUs, max
// pools, a flatten) split by image rows over the Pr processes of a grid
// column: domain parallelism. The split comes in whole units of the pools'
// windows (topology::unit_split), so no pooling window straddles it; a k x k
// convolution takes k/2 halo rows of its input from each neighbour in the
// forward pass and sends them the gradient of those rows in the backward
// pass; rows beyond the image are the padding's zeros. The parameters are
// the serial model's, whole on every process (their gradients are partial
// sums over this process's rows and samples: the caller sums them over all P).
class GridFront {
 public:
  // `layers`: the network's layers before its first dense one. Throws
  // std::invalid_argument naming a layer that cannot be split so.
  GridFront(std::span<const PlanLayer> layers, topology::GridShape shape, size_t grid_row);
  // Why these layers cannot be a grid's front, or nullopt.
  static std::optional<std::string> refusal(std::span<const PlanLayer> layers);

  size_t param_count() const { return params_; }
  void bind(std::span<float> params, std::span<float> grads);
  void load(std::span<const float> serial_params, std::span<float> params) const;
  void store(std::span<const float> params, std::span<float> serial_params) const;

  // Floats per sample of the feature map's rows each grid row holds, in
  // order: together the flattened feature map the first dense layer takes.
  const std::vector<size_t>& feature_counts() const { return feature_; }
  const std::vector<FrontLayer>& layers() const { return layers_; }

  // `x`: whole samples, `batch` of them. Returns this process's rows of
  // their feature map, [batch x feature_counts()[grid row]].
  const std::vector<float>& forward(const float* x, size_t batch, GridComm& comm);
  // `dfeature`: the gradient of those rows. Leaves this process's partial
  // parameter gradients in the bound buffer.
  void backward(std::span<const float> dfeature, size_t batch, GridComm& comm);

 private:
  size_t own(const FrontLayer& l) const { return l.rows[row_].size(); }
  void conv_forward(FrontLayer& l, const float* in, float* out, size_t batch, GridComm& comm);
  void conv_backward(FrontLayer& l, const float* dout, float* din, size_t batch, GridComm& comm);
  void size_halos(size_t floats);

  size_t row_ = 0, grid_rows_ = 1;
  size_t image_floats_ = 0;  // per whole input sample
  std::vector<FrontLayer> layers_;
  std::vector<size_t> feature_;
  size_t params_ = 0;
  // acts_[i]: layer i's input rows for the current batch (acts_.back() the output).
  std::vector<std::vector<float>> acts_;
  std::vector<float> padded_, up_, down_, from_up_, from_down_, grad_, din_;  // scratch
};

}  // namespace gossipd::daemon
