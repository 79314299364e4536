#include "trainer/layer_timing.h"

#include <algorithm>
#include <chrono>

#include "trainer/rng.h"

namespace gossipd::trainer {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_seconds(int reps, F&& pass) {
  pass();  // untimed: buffers sized, caches warm
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const Clock::time_point start = Clock::now();
    pass();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace

std::vector<LayerTiming> time_layers(Model& model, int batch, int reps) {
  Rng rng(7);
  Shape in = model.input_shape();
  std::vector<float> x(in.size() * static_cast<size_t>(batch));
  for (float& v : x) v = static_cast<float>(rng.normal());
  std::vector<LayerTiming> out;
  for (size_t i = 0; i < model.layers().size(); ++i) {
    Layer& layer = *model.layers()[i];
    const size_t n = layer.output_shape().size() * static_cast<size_t>(batch);
    std::vector<float> y(n), dy(n), dx(x.size());
    for (float& v : dy) v = static_cast<float>(rng.normal());
    LayerTiming t;
    t.kind = layer.kind();
    t.out_floats = layer.output_shape().size();
    t.params = layer.param_count();
    t.forward_s = median_seconds(reps, [&] { layer.forward(x.data(), y.data(), batch); });
    // Backward needs its forward's state (a convolution's im2col) first.
    layer.forward(x.data(), y.data(), batch);
    float* din = i == 0 ? nullptr : dx.data();
    t.backward_s = median_seconds(reps, [&] { layer.backward(x.data(), y.data(), dy.data(), din, batch); });
    const std::vector<float> copy_a = x, copy_b = x;  // neither is the forward's input
    const float* inputs[2] = {copy_a.data(), copy_b.data()};
    int turn = 0;
    const double other = median_seconds(reps, [&] {
      layer.backward(inputs[turn], y.data(), dy.data(), din, batch);
      turn ^= 1;
    });
    t.refind_s = std::max(0.0, other - t.backward_s);
    if (layer.splits_backward()) {
      const double w = median_seconds(reps, [&] { layer.backward_weights(x.data(), dy.data(), batch); });
      t.weights_s = std::min(w, t.backward_s);
    }
    out.push_back(t);
    x = std::move(y);
    in = layer.output_shape();
  }
  return out;
}

}  // namespace gossipd::trainer
