#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/model.h"

namespace gossipd::trainer {

struct ModelOptions {
  std::string name = "mlp";        // "mlp" or "cnn"
  std::vector<int> hidden;         // empty: the model's default widths
  std::vector<int> conv_channels;  // cnn only; empty: {32, 64}
  Shape input{28, 28, 1};
  int classes = 10;
};

// Names accepted by make_model.
const std::vector<std::string>& model_names();

// mlp: input -> [Dense + ReLU] per hidden width (default 256, 128) -> Dense.
// cnn: two [3x3 conv (pad 1) + ReLU + 2x2 max-pool] blocks (default 32, 64
// channels) -> Flatten -> [Dense + ReLU] per hidden width (default 128) -> Dense.
// Segments: one per conv or dense layer ("conv1", "dense1", ...).
// Throws std::invalid_argument for an unknown name or bad widths.
std::unique_ptr<Model> make_model(ModelOptions options, uint64_t seed);

// Fills in defaults so that the options describe the model exactly.
ModelOptions resolve_model_options(ModelOptions options);

}  // namespace gossipd::trainer
