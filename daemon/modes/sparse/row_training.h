#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/modes/sparse/net/sparse_train.h"
#include "daemon/modes/sparse/row_exchange.h"
#include "daemon/modes/sparse/sparse_rows.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/tensor_stream.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// A process's share of a trainable sparse model: its rows of every layer
// (weights and biases with them), its columns of the head (the last
// layer's neurons it owns) and the head's biases (every process keeps the
// same copy).
struct RowModel {
  RowShare share;
  trainer::sparse::HeadShare head;
  std::vector<float> head_bias;
};

// Process `me`'s share of `m` under the owners (as share_rows).
RowModel share_model(const trainer::sparse::SparseModel& m, const std::vector<std::vector<uint32_t>>& owners,
                     uint32_t procs, uint32_t me);

// Payload bytes this process sent in the last step, per product: the
// forward's expand and the backward's fold (none for the first product,
// whose inputs need no gradient).
struct RowStepBytes {
  std::vector<uint64_t> forward, backward;
};

// The sparse mode's training, row-parallel (Demirci and Ferhatosmanoglu):
// forward as the inference (the entries of layer l − 1 a process reads come
// from their owners, only those), the head's logits summed from every
// process's partial sums (gathered, added in rank order, so every process
// holds the same logits and loss); backward the other way: each process
// forms the partial sums of layer l − 1's gradient over its rows and sends
// those of entries it read to their owners, who add them to their own.
// The update (SGD, momentum, weight decay) on the rows a process owns,
// only on their existing edges. The
// kernels are the serial trainer's (trainer::sparse::SparseTrainer), so
// the parameters follow the serial run's up to the order of the sums.
// Every member calls step() with the same batch; a member silent for the
// group's timeout fails it (PeerTimeout, PeerLost), a stop aborts it.
class RowTraining {
 public:
  // `o`: the update of every parameter vector (element by element, as the
  // serial trainer's; LARS's norms would need the whole layer: refused).
  // Tags from the sparse mode's range `tags` (SparseTag).
  RowTraining(protocol::Node& node, const std::vector<std::string>& members, RowModel model, uint32_t neurons,
              trainer::OptimizerOptions o, protocol::CollectiveOptions options, protocol::tags::Range tags);
  ~RowTraining();

  trainer::sparse::SparseStep step(const trainer::sparse::SparseBatch& b, float lr);
  // Loss and correct count over the batch, no update (every member calls it).
  trainer::sparse::SparseStep evaluate(const trainer::sparse::SparseBatch& b);

  const RowModel& model() const { return m_; }
  const RowStepBytes& last_bytes() const { return bytes_; }

 private:
  void forward(const trainer::sparse::SparseBatch& b);
  void backward(const trainer::sparse::SparseBatch& b);
  void update(float lr);

  protocol::Node& node_;
  RowModel m_;
  uint32_t neurons_;
  trainer::sparse::SparseUpdate update_;
  std::unique_ptr<protocol::Group> rows_, logits_group_;
  std::unique_ptr<protocol::TensorStream> stream_;
  RowExchange exchange_;
  RowStepBytes bytes_;
  std::vector<std::vector<float>> ys_;  // every layer's activations this process holds, neuron-major
  std::vector<float> logits_, dlogits_, g_, gprev_, dv_, dc_;
  // Per product: gradients of the local and the remote rows.
  std::vector<std::vector<float>> dw_local_, db_local_, dw_remote_, db_remote_;
};

}  // namespace gossipd::daemon
