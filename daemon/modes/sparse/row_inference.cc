#include "daemon/modes/sparse/row_inference.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "daemon/modes/sparse/net/sparse_kernel.h"
#include "daemon/modes/sparse/row_exchange.h"
#include "protocol/collectives/collectives.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

namespace sp = trainer::sparse;

namespace {

size_t round_up(size_t n) { return (n + sp::kLaneChunk - 1) / sp::kLaneChunk * sp::kLaneChunk; }

// Samples per block where none is asked for: every product costs each
// process a round trip to the others, which a wider block pays once for
// more samples, so the rows take 4 MiB of activations a block where the
// serial run takes 1 (default_block), up to the same 256 lanes. Measured
// alternately, `gossipctl bench sparse DIR --inputs 6000 --procs 2 --reps 3
// --block B` (N = 4096, 120 layers, hypergraph), two pairs: B = 64 (the
// serial default) 5.02 and 5.42 s median (best 4.48, 4.86), 256 4.89 and
// 4.90 (4.63, 4.67); 512 was 6.8-7.1 s (out of cache).
constexpr size_t kRowBlockBytes = size_t{4} << 20;

}  // namespace

// One block of samples through every layer: the whole layer's activations
// neuron-major (y; a process writes the rows it owns and receives the rows
// it reads, the others are never read), its outputs written in place in z,
// which becomes the next product's y.
class RowInference::Block {
 public:
  Block(RowInference& r, size_t stride)
      : r_(r),
        stride_(stride),
        y_(size_t{r.neurons_} * stride),
        z_(y_.size()),
        max_(stride),
        exchange_(*r.stream_) {}

  void run(const sp::SparseInputs& in, size_t first, size_t count, const sp::InferOptions& o,
           RowInferResult& out) {
    load(in, first, count);
    exchange_.connect();
    for (size_t l = 0; l < r_.share_.products.size() && live_ > 0; ++l) {
      const RowProduct& p = r_.share_.products[l];
      const uint64_t before = r_.node_.payload_bytes_sent();
      const uint64_t seq = r_.rows_->next_seq();
      exchange_.send(p.send, seq, y_.data(), stride_, live_);
      out.payload_bytes[l] += r_.node_.payload_bytes_sent() - before;
      out.samples[l] += live_;
      const bool agree = agreeing(l);
      if (agree) send_maxima(r_.rows_->next_seq());
      // The rows that read only this process's entries while the others'
      // are on their way; then the rest.
      std::fill(max_.begin(), max_.end(), 0.0f);
      compute(p.local, o.ymax);
      exchange_.receive(p.recv, seq, y_.data(), stride_, live_, false);
      compute(p.remote, o.ymax);
      if (agree) receive_maxima();
      exchange_.wait_sent();
      wait_maxima_sent();
      // Layer l's outputs are the next product's inputs (the rest of z is
      // stale, and never read: the next product receives what it reads).
      std::swap(y_, z_);
      if (agree) compact_if_it_pays(p.mine);
    }
    collect(o.keep_activations, out);
  }

 private:
  // Whether the processes agree on the dead samples after product l: every
  // kAgreeEvery-th. Every layer costs P − 1 small messages per process a
  // layer, which at P = 8 in namespaces (hypergraph, N = 1024 shuffled, 500
  // inputs) took 0.79–0.82 s against 0.59–0.69 every 4th; at P = 2 every
  // 4th is as fast (0.49–0.50 s against 0.50–0.51).
  static constexpr size_t kAgreeEvery = 4;
  static bool agreeing(size_t l) { return l % kAgreeEvery == kAgreeEvery - 1; }

  void load(const sp::SparseInputs& in, size_t first, size_t count) {
    std::fill(y_.begin(), y_.end(), 0.0f);
    std::fill(max_.begin(), max_.end(), 0.0f);
    const std::vector<uint32_t>& mine = r_.share_.inputs;
    ids_.resize(count);
    for (size_t lane = 0; lane < count; ++lane) {
      ids_[lane] = static_cast<uint32_t>(first + lane);
      for (uint32_t k = in.offsets[first + lane]; k < in.offsets[first + lane + 1]; ++k) {
        if (!std::binary_search(mine.begin(), mine.end(), in.index[k])) continue;
        y_[size_t{in.index[k]} * stride_ + lane] = in.value[k];
        if (in.value[k] != 0.0f) max_[lane] = 1.0f;  // the result with no layers
      }
    }
    live_ = count;
  }

  // This process's largest entry per live lane of what it just sent (the
  // previous layer's outputs) to every other process.
  void send_maxima(uint64_t seq) {
    sent_max_.assign(max_.begin(), max_.begin() + static_cast<ptrdiff_t>(live_));
    const size_t procs = r_.rows_->size(), me = r_.rows_->rank();
    for (size_t q = 0; q < procs; ++q)
      if (q != me) max_sends_.push_back(r_.stream_->send(q, seq, sent_max_));
    max_seq_ = seq;
  }

  // Every process's maxima: `alive_` is their largest per lane.
  void receive_maxima() {
    alive_ = sent_max_;
    theirs_.resize(live_);
    const size_t procs = r_.rows_->size(), me = r_.rows_->rank();
    for (size_t q = 0; q < procs; ++q) {
      if (q == me) continue;
      r_.stream_->recv(q, max_seq_, theirs_);
      for (size_t lane = 0; lane < live_; ++lane) alive_[lane] = std::max(alive_[lane], theirs_[lane]);
    }
  }

  void wait_maxima_sent() {
    for (const auto& h : max_sends_) r_.stream_->wait(h);
    max_sends_.clear();
  }

  // The lanes that were all zeros before this layer are all zeros after it
  // too: they leave once a whole chunk of lanes is saved (as the serial run
  // does), every process dropping the same ones. Only this process's rows
  // move: the others' are received anew for every layer.
  void compact_if_it_pays(const std::vector<uint32_t>& mine) {
    keep_.clear();
    for (size_t lane = 0; lane < live_; ++lane)
      if (alive_[lane] > 0.0f) keep_.push_back(static_cast<uint32_t>(lane));
    if (round_up(keep_.size()) == round_up(live_)) return;
    for (const uint32_t j : mine) {
      float* row = y_.data() + size_t{j} * stride_;
      for (size_t k = 0; k < keep_.size(); ++k) row[k] = row[keep_[k]];
    }
    for (size_t k = 0; k < keep_.size(); ++k) {
      ids_[k] = ids_[keep_[k]];
      max_[k] = max_[keep_[k]];
    }
    live_ = keep_.size();
  }

  // Into this process's rows of z, in place.
  void compute(const RowSet& s, float ymax) {
    sp::forward_block(s.rows, y_.data(), z_.data(), {stride_, round_up(live_)}, ymax, max_.data(),
                      s.neurons.data());
  }

  // A sample is a category when any process's last outputs for it are not
  // all zero: every process's largest output per live lane, gathered.
  void collect(bool keep, RowInferResult& out) {
    const size_t procs = r_.maxima_->size(), me = r_.maxima_->rank(), count = live_;
    std::vector<float> all(procs * count);
    std::copy_n(max_.begin(), count, all.begin() + static_cast<ptrdiff_t>(me * count));
    if (count > 0) protocol::Allgather(*r_.maxima_, all).run();
    const std::vector<uint32_t>& mine =
        r_.share_.products.empty() ? r_.share_.inputs : r_.share_.products.back().mine;
    for (size_t lane = 0; lane < count; ++lane) {
      float most = 0.0f;
      for (size_t q = 0; q < procs; ++q) most = std::max(most, all[q * count + lane]);
      if (most <= 0.0f) continue;
      out.categories.push_back(ids_[lane]);
      if (!keep) continue;
      for (uint32_t j : mine) {
        const float v = y_[size_t{j} * stride_ + lane];
        if (v == 0.0f) continue;
        out.activations.index.push_back(j);
        out.activations.value.push_back(v);
      }
      out.activations.offsets.push_back(static_cast<uint32_t>(out.activations.index.size()));
    }
  }

  RowInference& r_;
  const size_t stride_;
  std::vector<float> y_, z_, max_;
  std::vector<float> sent_max_, theirs_, alive_;  // lane maxima, this process's and everyone's
  std::vector<protocol::TensorStream::SendHandle> max_sends_;
  uint64_t max_seq_ = 0;
  std::vector<uint32_t> ids_, keep_;  // the sample in each lane; the lanes that stay
  size_t live_ = 0;
  RowExchange exchange_;
};

RowInference::RowInference(protocol::Node& node, const std::vector<std::string>& members, RowShare share,
                           uint32_t neurons, protocol::CollectiveOptions options, protocol::tags::Range tags)
    : node_(node),
      share_(std::move(share)),
      neurons_(neurons),
      // The stream's tensors and the allgather's pieces on tags of their own.
      rows_(std::make_unique<protocol::Group>(node, tags.at(kInferRowsTag), members, options)),
      maxima_(std::make_unique<protocol::Group>(node, tags.at(kInferMaximaTag), members, options)),
      stream_(std::make_unique<protocol::TensorStream>(*rows_)) {}

RowInference::~RowInference() = default;

RowInferResult RowInference::run(const sp::SparseInputs& inputs, const sp::InferOptions& o) {
  if (inputs.neurons != neurons_) {
    throw std::invalid_argument("the inputs have " + std::to_string(inputs.neurons) +
                                " neurons, the network " + std::to_string(neurons_));
  }
  const size_t block = round_up(o.block != 0 ? o.block : sp::default_block(neurons_, kRowBlockBytes));
  RowInferResult out;
  out.activations.neurons = neurons_;
  out.payload_bytes.assign(share_.products.size(), 0);
  out.samples.assign(share_.products.size(), 0);
  const auto t0 = std::chrono::steady_clock::now();
  Block b(*this, block);
  for (size_t first = 0; first < inputs.count(); first += block)
    b.run(inputs, first, std::min(block, inputs.count() - first), o, out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gossipd::daemon
