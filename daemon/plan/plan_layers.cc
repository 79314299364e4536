#include "daemon/plan/plan_layers.h"

#include <stdexcept>

#include "trainer/conv2d.h"
#include "trainer/max_pool.h"

namespace gossipd::daemon {
namespace {

PlanLayer describe(const trainer::Layer& layer, trainer::Shape in) {
  PlanLayer p;
  p.name = layer.kind();
  p.in = in;
  p.out = layer.output_shape();
  p.params = layer.param_count();
  if (p.name == "dense") {
    p.kind = PlanLayer::Kind::kDense;
  } else if (const auto* conv = dynamic_cast<const trainer::Conv2D*>(&layer)) {
    const trainer::Conv2D::Padding pad = conv->padding();
    const int half = conv->kernel() / 2;
    if (conv->stride() != 1 || pad.rows != half || pad.cols != half || conv->kernel() % 2 == 0) {
      throw std::invalid_argument(
          "a " + std::to_string(conv->kernel()) + "x" + std::to_string(conv->kernel()) +
          " convolution with stride " + std::to_string(conv->stride()) + " and padding " +
          std::to_string(pad.rows) + "x" + std::to_string(pad.cols) +
          " cannot be split by image rows (odd kernel, stride 1, padding kernel/2 only)");
    }
    p.kind = PlanLayer::Kind::kConv;
    p.kernel = conv->kernel();
  } else if (const auto* pool = dynamic_cast<const trainer::MaxPool2D*>(&layer)) {
    p.kind = PlanLayer::Kind::kPool;
    p.kernel = pool->size();
  }
  return p;
}

}  // namespace

std::vector<PlanLayer> plan_layers(const trainer::Model& model) {
  std::vector<PlanLayer> layers;
  trainer::Shape in = model.input_shape();
  int dense = 0, conv = 0;
  for (const auto& layer : model.layers()) {
    PlanLayer p = describe(*layer, in);
    p.input_grad = !layers.empty();
    if (p.kind == PlanLayer::Kind::kDense) p.name = "dense" + std::to_string(++dense);
    if (p.kind == PlanLayer::Kind::kConv) p.name = "conv" + std::to_string(++conv);
    in = p.out;
    layers.push_back(std::move(p));
  }
  return layers;
}

std::string describe(const std::vector<PlanLayer>& layers) {
  if (layers.empty()) return "";
  const trainer::Shape in = layers.front().in;
  std::string s =
      std::to_string(in.height) + "x" + std::to_string(in.width) + "x" + std::to_string(in.channels);
  for (const PlanLayer& l : layers) {
    const std::string k = std::to_string(l.kernel);
    if (l.kind == PlanLayer::Kind::kDense) s += " d" + std::to_string(l.out.size());
    if (l.kind == PlanLayer::Kind::kConv) s += " c" + k + "x" + k + "x" + std::to_string(l.out.channels);
    if (l.kind == PlanLayer::Kind::kPool) s += " p" + k;
  }
  return s;
}

int row_unit(const std::vector<PlanLayer>& layers) {
  int unit = 1;
  for (const PlanLayer& l : layers) {
    if (l.kind == PlanLayer::Kind::kPool) unit *= l.kernel;
  }
  return unit;
}

}  // namespace gossipd::daemon
