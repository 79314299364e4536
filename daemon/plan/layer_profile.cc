#include "daemon/plan/layer_profile.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "trainer/stage.h"

namespace gossipd::daemon {
namespace {

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

// The fastest of `reps` runs of `f` after an untimed one.
template <typename F>
double best_seconds(int reps, F&& f) {
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r == 1 || (r > 1 && s < best)) best = s;
  }
  return best;
}

// An optimizer step over the whole model, and a copy of its parameters:
// seconds per parameter.
void time_update(trainer::Model& model, const trainer::OptimizerOptions& optimizer, int reps,
                 LayerProfile& p) {
  trainer::Optimizer opt(optimizer, model.segments(), model.params().size());
  std::vector<float> params(model.params().begin(), model.params().end()), grads(params.size(), 1e-3f), copy;
  if (params.empty()) return;
  const double n = static_cast<double>(params.size());
  p.update_s_per_param = best_seconds(reps, [&] { opt.step(params, grads, 1e-3f); }) / n;
  p.copy_s_per_param = best_seconds(reps, [&] { copy.assign(params.begin(), params.end()); }) / n;
}

// a + (b - a) * f, field by field.
trainer::LayerTiming mix(const trainer::LayerTiming& a, const trainer::LayerTiming& b, double f) {
  trainer::LayerTiming t = a;
  t.forward_s = a.forward_s + (b.forward_s - a.forward_s) * f;
  t.backward_s = a.backward_s + (b.backward_s - a.backward_s) * f;
  t.refind_s = a.refind_s + (b.refind_s - a.refind_s) * f;
  t.weights_s = a.weights_s + (b.weights_s - a.weights_s) * f;
  return t;
}

// The layers timed one by one each find the cache warm; in a pass over the
// model they do not. Scales every layer's times so that they add up to a
// whole forward and backward pass (trainer::Stage, as a pipeline stage
// runs them), the median of `reps`.
void as_in_a_pass(trainer::Model& model, size_t batch, int reps, std::vector<trainer::LayerTiming>& layers) {
  trainer::Stage stage(model, 0, model.layers().size());
  std::vector<float> x(model.input_shape().size() * batch, 0.5f);
  std::vector<float> dout(model.layers().back()->output_shape().size() * batch, 0.01f);
  const int b = static_cast<int>(batch);
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    stage.forward(0, x, b);
    stage.backward(0, dout, {});
    if (r > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  double sum = 0;
  for (const trainer::LayerTiming& l : layers) sum += l.forward_s + l.backward_s;
  if (sum <= 0) return;
  const double scale = t[t.size() / 2] / sum;
  for (trainer::LayerTiming& l : layers) {
    l.forward_s *= scale;
    l.backward_s *= scale;
    l.weights_s *= scale;
  }
}

}  // namespace

bool LayerProfile::has(size_t micro_batch) const {
  return std::binary_search(sizes.begin(), sizes.end(), micro_batch);
}

std::vector<trainer::LayerTiming> LayerProfile::timings(size_t b) const {
  if (sizes.empty()) throw std::logic_error("layer profile: no micro-batch size timed");
  const auto hi = std::lower_bound(sizes.begin(), sizes.end(), b);
  if (hi != sizes.end() && *hi == b) return at[static_cast<size_t>(hi - sizes.begin())];
  // Outside the sizes timed: the nearest one's time per sample.
  const bool below = hi == sizes.begin(), above = hi == sizes.end();
  if (below || above) {
    const size_t i = below ? 0 : sizes.size() - 1;
    const double f = static_cast<double>(b) / static_cast<double>(sizes[i]);
    std::vector<trainer::LayerTiming> out = at[i];
    for (trainer::LayerTiming& t : out) t = mix(trainer::LayerTiming{}, t, f);
    return out;
  }
  const size_t j = static_cast<size_t>(hi - sizes.begin());
  const double f = static_cast<double>(b - sizes[j - 1]) / static_cast<double>(sizes[j] - sizes[j - 1]);
  std::vector<trainer::LayerTiming> out;
  for (size_t l = 0; l < at[j].size(); ++l) out.push_back(mix(at[j - 1][l], at[j][l], f));
  return out;
}

std::string this_machine() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown host");
  return std::string(host) + ", " + cpu_model() + ", " + std::to_string(std::thread::hardware_concurrency()) +
         " cores, OpenBLAS threads " + std::to_string(openblas_get_num_threads());
}

std::string model_key(const trainer::Model& model, const trainer::OptimizerOptions& optimizer) {
  const auto shape = [](const trainer::Shape& s) {
    return std::to_string(s.height) + "x" + std::to_string(s.width) + "x" + std::to_string(s.channels);
  };
  // Appended piece by piece: GCC 12 raises a false -Wrestrict (PR 105329)
  // for `"literal" + std::string&&` inlined here.
  std::string key = "in ";
  key += shape(model.input_shape());
  for (const auto& layer : model.layers()) {
    key += ' ';
    key += layer->kind();
    key += ':';
    key += shape(layer->output_shape());
    key += ':';
    key += std::to_string(layer->param_count());
  }
  key += optimizer.kind == trainer::OptimizerKind::kLars ? " lars" : " sgd";
  if (optimizer.momentum > 0) key += optimizer.nesterov ? "+nesterov" : "+momentum";
  return key;
}

void profile_layers(trainer::Model& model, const trainer::OptimizerOptions& optimizer,
                    const std::vector<size_t>& sizes, int reps, LayerProfile& into) {
  if (into.sizes.empty()) {
    into.model = model_key(model, optimizer);
    into.machine = this_machine();
    into.input_floats = model.input_shape().size();
    time_update(model, optimizer, reps, into);
  }
  // The timing runs on the model's own buffers: its parameters are kept
  // (its gradients are overwritten).
  const std::vector<float> params(model.params().begin(), model.params().end());
  for (size_t b : sizes) {
    if (b == 0 || into.has(b)) continue;
    const auto at = std::lower_bound(into.sizes.begin(), into.sizes.end(), b);
    const size_t i = static_cast<size_t>(at - into.sizes.begin());
    into.sizes.insert(at, b);
    std::vector<trainer::LayerTiming> layers = trainer::time_layers(model, static_cast<int>(b), reps);
    as_in_a_pass(model, b, reps, layers);
    into.at.insert(into.at.begin() + static_cast<std::ptrdiff_t>(i), std::move(layers));
  }
  std::copy(params.begin(), params.end(), model.params().begin());
  into.date = now_utc();
}

}  // namespace gossipd::daemon
