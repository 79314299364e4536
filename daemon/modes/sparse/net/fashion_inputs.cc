#include "daemon/modes/sparse/net/fashion_inputs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gossipd::trainer::sparse {
namespace {

// Bilinear sample of a single-channel image at (y, x) in its own pixels.
float sample_at(const float* img, int h, int w, float y, float x) {
  const int y0 = std::clamp(static_cast<int>(std::floor(y)), 0, h - 1);
  const int x0 = std::clamp(static_cast<int>(std::floor(x)), 0, w - 1);
  const int y1 = std::min(y0 + 1, h - 1);
  const int x1 = std::min(x0 + 1, w - 1);
  const float fy = std::clamp(y - static_cast<float>(y0), 0.0f, 1.0f);
  const float fx = std::clamp(x - static_cast<float>(x0), 0.0f, 1.0f);
  const float top = img[y0 * w + x0] * (1 - fx) + img[y0 * w + x1] * fx;
  const float bottom = img[y1 * w + x0] * (1 - fx) + img[y1 * w + x1] * fx;
  return top * (1 - fy) + bottom * fy;
}

}  // namespace

SparseInputs inputs_from_images(const Dataset& images, uint32_t neurons, size_t count) {
  const auto side = static_cast<uint32_t>(std::lround(std::sqrt(static_cast<double>(neurons))));
  if (side < 2 || side * side != neurons) {
    throw std::invalid_argument("inputs made from images need a square number of neurons, not " +
                                std::to_string(neurons));
  }
  if (images.channels != 1) throw std::invalid_argument("inputs made from images need one channel");
  SparseInputs in;
  in.neurons = neurons;
  const size_t n = std::min(count, images.size());
  // Pixel centres of the side × side grid mapped onto the source's.
  const float sy = static_cast<float>(images.height) / static_cast<float>(side);
  const float sx = static_cast<float>(images.width) / static_cast<float>(side);
  for (size_t i = 0; i < n; ++i) {
    const float* img = images.image(i);
    for (uint32_t r = 0; r < side; ++r) {
      for (uint32_t c = 0; c < side; ++c) {
        const float v =
            sample_at(img, images.height, images.width, (static_cast<float>(r) + 0.5f) * sy - 0.5f,
                      (static_cast<float>(c) + 0.5f) * sx - 0.5f);
        if (pixel_intensity(v) < 0.5f) continue;
        in.index.push_back(r * side + c);
        in.value.push_back(1.0f);
      }
    }
    in.offsets.push_back(static_cast<uint32_t>(in.index.size()));
  }
  return in;
}

SparseDataset sparse_dataset(const Dataset& images, uint32_t neurons) {
  return {inputs_from_images(images, neurons, images.size()), images.labels};
}

}  // namespace gossipd::trainer::sparse
