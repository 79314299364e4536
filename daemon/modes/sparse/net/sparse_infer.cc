#include "daemon/modes/sparse/net/sparse_infer.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "daemon/modes/sparse/net/sparse_kernel.h"

namespace gossipd::trainer::sparse {
namespace {

size_t round_up(size_t n) { return (n + kLaneChunk - 1) / kLaneChunk * kLaneChunk; }

// One block of samples through every layer, its activations in two
// neuron-major buffers that swap after each layer.
class BlockRun {
 public:
  BlockRun(const SparseNet& net, const InferOptions& o, size_t stride)
      : net_(net), o_(o), stride_(stride), y_(net.neurons * stride), z_(net.neurons * stride), max_(stride) {}

  void run(const SparseInputs& in, size_t first, size_t count, InferResult& out) {
    load(in, first, count);
    for (const SparseLayer& layer : net_.layers) {
      if (live_ == 0) break;
      std::fill(max_.begin(), max_.end(), 0.0f);
      forward_block(layer, y_.data(), z_.data(), {stride_, round_up(live_)}, o_.ymax, max_.data());
      std::swap(y_, z_);
      compact_if_it_pays();
    }
    collect(out);
  }

 private:
  void load(const SparseInputs& in, size_t first, size_t count) {
    std::fill(y_.begin(), y_.end(), 0.0f);
    std::fill(max_.begin(), max_.end(), 0.0f);
    ids_.resize(count);
    for (size_t lane = 0; lane < count; ++lane) {
      ids_[lane] = static_cast<uint32_t>(first + lane);
      for (uint32_t k = in.offsets[first + lane]; k < in.offsets[first + lane + 1]; ++k) {
        y_[static_cast<size_t>(in.index[k]) * stride_ + lane] = in.value[k];
        max_[lane] = std::max(max_[lane], in.value[k] != 0.0f ? 1.0f : 0.0f);  // the result with no layers
      }
    }
    live_ = count;
  }

  // Samples that became all zeros leave once a whole chunk of lanes is
  // saved; until then they ride along as zeros (which stay zeros). Lanes
  // past the live ones may hold anything: no lane reads another.
  void compact_if_it_pays() {
    std::vector<uint32_t> keep;
    for (size_t lane = 0; lane < live_; ++lane)
      if (max_[lane] > 0.0f) keep.push_back(static_cast<uint32_t>(lane));
    if (round_up(keep.size()) == round_up(live_)) return;
    for (size_t j = 0; j < net_.neurons; ++j) {
      float* row = y_.data() + j * stride_;
      for (size_t k = 0; k < keep.size(); ++k) row[k] = row[keep[k]];
    }
    for (size_t k = 0; k < keep.size(); ++k) {
      ids_[k] = ids_[keep[k]];
      max_[k] = max_[keep[k]];
    }
    live_ = keep.size();
  }

  void collect(InferResult& out) const {
    for (size_t lane = 0; lane < live_; ++lane) {
      if (max_[lane] <= 0.0f) continue;
      out.categories.push_back(ids_[lane]);
      if (!o_.keep_activations) continue;
      for (uint32_t j = 0; j < net_.neurons; ++j) {
        const float v = y_[static_cast<size_t>(j) * stride_ + lane];
        if (v == 0.0f) continue;
        out.activations.index.push_back(j);
        out.activations.value.push_back(v);
      }
      out.activations.offsets.push_back(static_cast<uint32_t>(out.activations.index.size()));
    }
  }

  const SparseNet& net_;
  const InferOptions& o_;
  const size_t stride_;
  std::vector<float> y_, z_, max_;
  std::vector<uint32_t> ids_;  // the sample in each lane
  size_t live_ = 0;
};

}  // namespace

size_t default_block(uint32_t neurons, size_t bytes) {
  const size_t per_block = bytes / sizeof(float) / std::max<uint32_t>(neurons, 1);
  return std::clamp<size_t>(per_block / kLaneChunk * kLaneChunk, kLaneChunk, 256);
}

InferResult infer(const SparseNet& net, const SparseInputs& inputs, const InferOptions& o) {
  if (inputs.neurons != net.neurons) {
    throw std::invalid_argument("the inputs have " + std::to_string(inputs.neurons) +
                                " neurons, the network " + std::to_string(net.neurons));
  }
  const size_t block = round_up(o.block != 0 ? o.block : default_block(net.neurons));
  InferResult out;
  out.activations.neurons = net.neurons;
  const auto t0 = std::chrono::steady_clock::now();
  BlockRun run(net, o, block);
  for (size_t first = 0; first < inputs.count(); first += block)
    run.run(inputs, first, std::min(block, inputs.count() - first), out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gossipd::trainer::sparse
