#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/shared_floats.h"

namespace gossipd::trainer {

// Images (float, normalised, NHWC with C = 1) and labels held in memory.
struct Dataset {
  int height = 0;
  int width = 0;
  int channels = 1;
  int classes = 10;
  SharedFloats images;          // size() * sample_size(); copies of the data set share them
  std::vector<uint8_t> labels;  // size()

  size_t size() const { return labels.size(); }
  size_t sample_size() const { return static_cast<size_t>(height) * width * channels; }
  const float* image(size_t i) const { return images.data() + i * sample_size(); }

  // The first `count` samples (all if count >= size()).
  Dataset head(size_t count) const;
};

// Reads one IDX image file and its label file (gzip or plain), checks magic
// numbers, dimensions and counts, and normalises pixels with the
// Fashion-MNIST mean and standard deviation. Throws DataError. With `limit`
// > 0 only the first `limit` samples are kept (the whole file is still read
// and checked): what --train-limit keeps, without converting the rest.
Dataset load_idx_pair(const std::filesystem::path& images_file, const std::filesystem::path& labels_file,
                      size_t limit = 0);

// A normalised pixel's intensity again, in [0, 1].
float pixel_intensity(float normalised);

enum class Split { kTrain, kTest };

// Loads the Fashion-MNIST train or test split from `dir` (the layout of the
// Debian package dataset-fashion-mnist), the first `limit` samples if
// `limit` > 0. Throws DataError naming the package and the --data flag when
// the files are missing. The pixels are read once per process: a later load
// of the same files (unchanged: size and time of change) and limit shares
// them (gossipctl simulate's members, ~190 MB of training pixels each).
Dataset load_fashion_mnist(const std::filesystem::path& dir, Split split, size_t limit = 0);

// Both splits from `dir`, the first `train_limit` and `test_limit` samples
// (0 = all): --train-limit and --test-limit.
struct Splits {
  Dataset train;
  Dataset test;
};
Splits load_fashion_mnist_splits(const std::filesystem::path& dir, size_t train_limit, size_t test_limit);

}  // namespace gossipd::trainer
