#pragma once

#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/modes/grid/grid_shape.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/tensor_stream.h"
#include "protocol/collectives/two_levels.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// The collectives a grid step runs, by the group they run over. Blocks are
// given as counts, block k (from the process at grid row k) following
// block k - 1 in the buffer.
class GridComm {
 public:
  virtual ~GridComm() = default;
  // Over the Pr processes of this grid column: every block to everyone.
  virtual void allgather_column(std::span<float> data, std::span<const size_t> counts) = 0;
  // Sum over the column; afterwards this process's block holds it.
  virtual void reduce_scatter_column(std::span<float> data, std::span<const size_t> counts) = 0;
  // Sum over the Pc processes of this grid row, in place; the members start
  // it together and return once every one of them holds the sum.
  virtual void allreduce_row(std::span<float> data) = 0;
  // Sum over all P processes, in place (the convolutions' weight gradients).
  virtual void allreduce_all(std::span<float> data) = 0;
  // Sum over this grid column, in place: LARS's squared norms of the row
  // blocks (a few floats; in no kind of GridBytes).
  virtual void sum_column(std::span<float> data) = 0;
  // Image rows with the neighbours in this grid column: `up` to the process
  // of grid row - 1, `down` to row + 1; `from_up` and `from_down` receive
  // theirs. At the column's ends the missing neighbour's spans are empty.
  virtual void exchange_halo(std::span<const float> up, std::span<const float> down, std::span<float> from_up,
                             std::span<float> from_down) = 0;
};

// Payload bytes one process sent, by what for (gossipctl plan grid
// predicts them: its words x 4).
struct GridBytes {
  uint64_t forward = 0;          // allgather of outputs over the column
  uint64_t input_gradient = 0;   // reduce-scatter over the column
  uint64_t weight_gradient = 0;  // allreduce over the row
  uint64_t halo = 0;             // image rows to the neighbours
};

// GridComm over the node's transport (the direct data path where the node
// has one): one Group per grid column, per grid row, for a column's halo
// tensors and for the whole grid, tagged from the grid's range, so all are
// in flight without meeting. `members` is the grid in rank order. Where a
// row's (or the grid's, or a column's) members share hosts evenly, its
// allreduce takes two levels, in each host and then across
// (protocol::HostAwareCollectives).
class GroupGridComm : public GridComm {
 public:
  // The index in the grid's tag range a worker's own all-grid group (its
  // start barrier) may take: no group here uses it.
  static constexpr uint64_t kStartTag = uint64_t{1} << 23;
  // The tags the grid needs (Mode::tag_count): a range of 2^24.
  static constexpr uint32_t kTagCount = uint32_t{1} << 24;

  // `tags`: the grid's range (Mode::tags, kTagCount of them).
  GroupGridComm(protocol::Node& node, const std::vector<std::string>& members, topology::GridShape shape,
                size_t rank, protocol::CollectiveOptions options, protocol::tags::Range tags);
  void allgather_column(std::span<float> data, std::span<const size_t> counts) override;
  void reduce_scatter_column(std::span<float> data, std::span<const size_t> counts) override;
  void allreduce_row(std::span<float> data) override;
  void allreduce_all(std::span<float> data) override;
  void sum_column(std::span<float> data) override;
  void exchange_halo(std::span<const float> up, std::span<const float> down, std::span<float> from_up,
                     std::span<float> from_down) override;
  // A stop request aborts a collective in progress (protocol::Aborted).
  void set_stop(std::stop_token stop);
  // Every cell's parameter block to the others of its column (for an
  // evaluation of the whole model); not counted in bytes().
  void gather_parameters(std::span<float> data, std::span<const size_t> counts);
  // What the step's collectives sent since this was made.
  const GridBytes& bytes() const { return bytes_; }

 private:
  // Runs `collective`, adding the payload bytes this node sent meanwhile to `kind`.
  template <typename F>
  void counted(uint64_t& kind, F&& collective);

  protocol::Node& node_;
  std::unique_ptr<protocol::Group> column_, row_, halo_, all_;
  // Their sums, each saying at its first if it takes two levels (its members
  // share hosts evenly); the two levels' tags keyed apart (row 0's and
  // all_'s tags agree in their low 16 bits).
  std::unique_ptr<protocol::HostAwareCollectives> column_sum_, row_sum_, all_sum_;
  std::unique_ptr<protocol::TensorStream> halo_stream_;
  uint64_t halo_seq_ = 0;
  GridBytes bytes_;
};

}  // namespace gossipd::daemon
