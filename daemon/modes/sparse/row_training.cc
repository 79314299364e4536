#include "daemon/modes/sparse/row_training.h"

#include <algorithm>
#include <stdexcept>

#include "protocol/collectives/collectives.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

namespace sp = trainer::sparse;

namespace {

// `m`'s head columns of the given last-layer neurons.
sp::HeadShare head_share(const sp::SparseModel& m, const std::vector<uint32_t>& neurons) {
  sp::HeadShare h;
  h.classes = m.head.classes;
  h.neurons = neurons;
  const size_t n = m.head.neurons.size();
  h.weights.resize(size_t{h.classes} * neurons.size());
  for (uint32_t c = 0; c < h.classes; ++c)
    for (size_t k = 0; k < neurons.size(); ++k)
      h.weights[c * neurons.size() + k] = m.head.weights[c * n + neurons[k]];
  return h;
}

}  // namespace

RowModel share_model(const sp::SparseModel& m, const std::vector<std::vector<uint32_t>>& owners,
                     uint32_t procs, uint32_t me) {
  RowModel r{share_rows(m.net, owners, procs, me), {}, m.head_bias};
  r.head = head_share(m, r.share.products.empty() ? r.share.inputs : r.share.products.back().mine);
  return r;
}

RowTraining::RowTraining(protocol::Node& node, const std::vector<std::string>& members, RowModel model,
                         uint32_t neurons, trainer::OptimizerOptions o, protocol::CollectiveOptions options,
                         protocol::tags::Range tags)
    : node_(node),
      m_(std::move(model)),
      neurons_(neurons),
      update_(o),
      rows_(std::make_unique<protocol::Group>(node, tags.at(kTrainRowsTag), members, options)),
      logits_group_(std::make_unique<protocol::Group>(node, tags.at(kTrainLogitsTag), members, options)),
      stream_(std::make_unique<protocol::TensorStream>(*rows_)),
      exchange_(*stream_) {
  if (o.kind == trainer::OptimizerKind::kLars)
    throw std::invalid_argument("LARS takes norms of whole layers: not for the row-parallel training");
  for (const RowProduct& p : m_.share.products) {
    dw_local_.emplace_back(p.local.rows.edges());
    db_local_.emplace_back(p.local.rows.neurons);
    dw_remote_.emplace_back(p.remote.rows.edges());
    db_remote_.emplace_back(p.remote.rows.neurons);
  }
  dv_.resize(m_.head.weights.size());
  dc_.resize(m_.head.classes);
}

RowTraining::~RowTraining() = default;

void RowTraining::forward(const sp::SparseBatch& b) {
  if (b.inputs.neurons != neurons_) {
    throw std::invalid_argument("the inputs have " + std::to_string(b.inputs.neurons) +
                                " neurons, the network " + std::to_string(neurons_));
  }
  const size_t n = m_.share.products.size();
  const sp::Block blk{b.count, b.count};
  exchange_.connect();
  ys_.resize(n + 1);
  for (auto& y : ys_) y.assign(size_t{neurons_} * b.count, 0.0f);
  sp::load_batch(b, ys_[0], &m_.share.inputs);
  bytes_.forward.assign(n, 0);
  for (size_t l = 0; l < n; ++l) {
    const RowProduct& p = m_.share.products[l];
    const uint64_t before = node_.payload_bytes_sent();
    const uint64_t seq = rows_->next_seq();
    exchange_.send(p.send, seq, ys_[l].data(), b.count, b.count);
    sp::train_forward(p.local.rows, p.local.neurons.data(), ys_[l].data(), ys_[l + 1].data(), blk);
    exchange_.receive(p.recv, seq, ys_[l].data(), b.count, b.count, false);
    sp::train_forward(p.remote.rows, p.remote.neurons.data(), ys_[l].data(), ys_[l + 1].data(), blk);
    exchange_.wait_sent();
    bytes_.forward[l] = node_.payload_bytes_sent() - before;
  }
  // Every process's partial logits, added in rank order after the biases.
  const size_t size = size_t{m_.head.classes} * b.count, procs = logits_group_->size();
  std::vector<float> all(procs * size, 0.0f);
  sp::head_forward(m_.head, ys_.back().data(), blk, all.data() + logits_group_->rank() * size);
  protocol::Allgather(*logits_group_, all).run();
  logits_.resize(size);
  for (uint32_t c = 0; c < m_.head.classes; ++c)
    std::fill_n(logits_.begin() + static_cast<ptrdiff_t>(c * b.count), b.count, m_.head_bias[c]);
  for (size_t q = 0; q < procs; ++q)
    for (size_t i = 0; i < size; ++i) logits_[i] += all[q * size + i];
}

void RowTraining::backward(const sp::SparseBatch& b) {
  const size_t n = m_.share.products.size();
  const sp::Block blk{b.count, b.count};
  for (uint32_t c = 0; c < m_.head.classes; ++c) {
    float s = 0;
    for (size_t t = 0; t < b.count; ++t) s += dlogits_[c * b.count + t];
    dc_[c] = s;
  }
  std::fill(dv_.begin(), dv_.end(), 0.0f);
  g_.assign(ys_.back().size(), 0.0f);
  sp::head_backward(m_.head, ys_.back().data(), dlogits_.data(), blk, dv_.data(), g_.data());
  bytes_.backward.assign(n, 0);
  for (size_t l = n; l-- > 0;) {
    const RowProduct& p = m_.share.products[l];
    std::fill(dw_local_[l].begin(), dw_local_[l].end(), 0.0f);
    std::fill(db_local_[l].begin(), db_local_[l].end(), 0.0f);
    std::fill(dw_remote_[l].begin(), dw_remote_[l].end(), 0.0f);
    std::fill(db_remote_[l].begin(), db_remote_[l].end(), 0.0f);
    float* gprev = nullptr;
    if (l > 0) {
      gprev_.assign(g_.size(), 0.0f);
      gprev = gprev_.data();
    }
    const float* y = ys_[l].data();
    const float* out = ys_[l + 1].data();
    sp::train_backward(p.local.rows, p.local.neurons.data(), y, out, g_.data(), blk, dw_local_[l].data(),
                       db_local_[l].data(), gprev);
    sp::train_backward(p.remote.rows, p.remote.neurons.data(), y, out, g_.data(), blk, dw_remote_[l].data(),
                       db_remote_[l].data(), gprev);
    if (l == 0) break;
    // The partial sums of entries read from others go back to their owners.
    const uint64_t before = node_.payload_bytes_sent();
    const uint64_t seq = rows_->next_seq();
    exchange_.send(p.recv, seq, gprev, b.count, b.count);
    exchange_.receive(p.send, seq, gprev, b.count, b.count, true);
    exchange_.wait_sent();
    bytes_.backward[l] = node_.payload_bytes_sent() - before;
    std::swap(g_, gprev_);
  }
}

void RowTraining::update(float lr) {
  size_t k = 0;
  for (size_t l = 0; l < m_.share.products.size(); ++l) {
    RowProduct& p = m_.share.products[l];
    update_.step(k++, p.local.rows.weights, dw_local_[l], lr);
    update_.step(k++, p.local.rows.bias, db_local_[l], lr);
    update_.step(k++, p.remote.rows.weights, dw_remote_[l], lr);
    update_.step(k++, p.remote.rows.bias, db_remote_[l], lr);
  }
  update_.step(k++, m_.head.weights, dv_, lr);
  update_.step(k, m_.head_bias, dc_, lr);
}

sp::SparseStep RowTraining::step(const sp::SparseBatch& b, float lr) {
  forward(b);
  dlogits_.resize(logits_.size());
  const sp::SparseStep r = sp::softmax_step(logits_, b, m_.head.classes, dlogits_);
  backward(b);
  update(lr);
  return r;
}

sp::SparseStep RowTraining::evaluate(const sp::SparseBatch& b) {
  forward(b);
  return sp::softmax_step(logits_, b, m_.head.classes, {});
}

}  // namespace gossipd::daemon
