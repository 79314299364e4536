#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daemon/modes/sparse/net/sparse_net.h"
#include "trainer/dataset.h"

namespace gossipd::trainer::sparse {

// Images as the challenge makes its inputs from MNIST: each resized to
// side × side = N pixels (bilinear) and binarised (intensity at least one
// half: 1, else nothing), the first `count` images. Throws
// std::invalid_argument unless N is a square of at least 4.
SparseInputs inputs_from_images(const Dataset& images, uint32_t neurons, size_t count);

// Every image so made, with its label: what the sparse mode trains on.
struct SparseDataset {
  SparseInputs inputs;
  std::vector<uint8_t> labels;  // one per input
};
SparseDataset sparse_dataset(const Dataset& images, uint32_t neurons);

}  // namespace gossipd::trainer::sparse
