#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/collectives/tensor_stream.h"

namespace gossipd::daemon {

// Moves rows of a neuron-major buffer (row j's `count` values at
// y[j * stride]) between the processes of the sparse mode, as point-to-point
// tensors keyed by a sequence number: to each process the rows a list names
// for it, in the list's order, nothing else. The forward pass expands
// (RowProduct::send out, RowProduct::recv in, received rows set); the
// backward pass folds the same words the other way (recv out, send in, added
// to the owner's own partial sums, in the order of the senders' ranks).
class RowExchange {
 public:
  using Lists = std::vector<std::vector<uint32_t>>;  // [process]: rows, ascending

  explicit RowExchange(protocol::TensorStream& stream) : stream_(stream) {}

  // Before the first send, every member at the same point: processes on one
  // host share memory for their rows (TensorStream::share_memory; once).
  void connect();

  // Sends rows[t] of `y` to every process t with a non-empty list; returns
  // at once (the rows are copied out first: into the shared ring, or a
  // buffer the send owns).
  void send(const Lists& rows, uint64_t seq, const float* y, size_t stride, size_t count);
  // Receives rows[q] from every process q with a non-empty list into `y`:
  // set, or added to what is there with `add`.
  void receive(const Lists& rows, uint64_t seq, float* y, size_t stride, size_t count, bool add);
  // Waits until every send is done.
  void wait_sent();

 private:
  protocol::TensorStream& stream_;
  std::vector<protocol::TensorStream::SendHandle> sent_;
};

}  // namespace gossipd::daemon
