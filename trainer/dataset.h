#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gossipd::trainer {

// Images (float, normalised, NHWC with C = 1) and labels held in memory.
struct Dataset {
  int height = 0;
  int width = 0;
  int channels = 1;
  int classes = 10;
  std::vector<float> images;    // size() * sample_size()
  std::vector<uint8_t> labels;  // size()

  size_t size() const { return labels.size(); }
  size_t sample_size() const { return static_cast<size_t>(height) * width * channels; }
  const float* image(size_t i) const { return images.data() + i * sample_size(); }

  // The first `count` samples (all if count >= size()).
  Dataset head(size_t count) const;
};

// Reads one IDX image file and its label file (gzip or plain), checks magic
// numbers, dimensions and counts, and normalises pixels with the
// Fashion-MNIST mean and standard deviation. Throws DataError.
Dataset load_idx_pair(const std::filesystem::path& images_file, const std::filesystem::path& labels_file);

// A normalised pixel's intensity again, in [0, 1].
float pixel_intensity(float normalised);

enum class Split { kTrain, kTest };

// Loads the Fashion-MNIST train or test split from `dir` (the layout of the
// Debian package dataset-fashion-mnist). Throws DataError naming the package
// and the --data flag when the files are missing.
Dataset load_fashion_mnist(const std::filesystem::path& dir, Split split);

}  // namespace gossipd::trainer
