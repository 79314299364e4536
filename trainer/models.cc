#include "trainer/models.h"

#include <stdexcept>

#include "trainer/conv2d.h"
#include "trainer/dense.h"
#include "trainer/elementwise.h"
#include "trainer/max_pool.h"

namespace gossipd::trainer {
namespace {

void check_widths(const std::vector<int>& widths, const char* what) {
  for (int w : widths) {
    if (w < 1 || w > 65536) {
      throw std::invalid_argument(std::string(what) + " width " + std::to_string(w) + " is outside 1..65536");
    }
  }
}

void add_dense_stack(Model& m, const std::vector<int>& hidden, int classes) {
  int in = static_cast<int>(m.current_shape().size());
  int index = 1;
  for (int h : hidden) {
    m.add(std::make_unique<Dense>(in, h), "dense" + std::to_string(index++));
    m.add(std::make_unique<ReLU>(Shape{1, 1, h}));
    in = h;
  }
  m.add(std::make_unique<Dense>(in, classes), "dense" + std::to_string(index));
}

}  // namespace

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"mlp", "cnn"};
  return names;
}

ModelOptions resolve_model_options(ModelOptions o) {
  if (o.name == "mlp") {
    if (o.hidden.empty()) o.hidden = {256, 128};
    o.conv_channels.clear();
  } else if (o.name == "cnn") {
    if (o.hidden.empty()) o.hidden = {128};
    if (o.conv_channels.empty()) o.conv_channels = {32, 64};
  } else {
    throw std::invalid_argument("unknown model '" + o.name + "' (known: mlp, cnn)");
  }
  check_widths(o.hidden, "hidden layer");
  check_widths(o.conv_channels, "conv channel");
  if (o.classes < 2) throw std::invalid_argument("a model needs at least 2 classes");
  return o;
}

std::unique_ptr<Model> make_model(ModelOptions options, uint64_t seed) {
  const ModelOptions o = resolve_model_options(std::move(options));
  auto m = std::make_unique<Model>(o.input);
  if (o.name == "cnn") {
    int index = 1;
    for (int channels : o.conv_channels) {
      m->add(std::make_unique<Conv2D>(m->current_shape(), channels, 3, 1, 1),
             "conv" + std::to_string(index++));
      m->add(std::make_unique<ReLU>(m->current_shape()));
      m->add(std::make_unique<MaxPool2D>(m->current_shape(), 2));
    }
    m->add(std::make_unique<Flatten>(m->current_shape()));
  }
  add_dense_stack(*m, o.hidden, o.classes);
  m->finalize(seed);
  return m;
}

}  // namespace gossipd::trainer
