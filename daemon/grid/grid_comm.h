#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "protocol/group.h"
#include "topology/grid.h"

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
  // Sum over the Pc processes of this grid row, in place.
  virtual void allreduce_row(std::span<float> data) = 0;
};

// GridComm over the node's transport (the direct data path where the node
// has one): one Group per grid column and per grid row, tagged from the
// grid's range, so both are in flight without meeting. `members` is the
// grid in rank order (the order of --peers).
class GroupGridComm : public GridComm {
 public:
  GroupGridComm(protocol::Node& node, const std::vector<std::string>& members, topology::GridShape shape,
                size_t rank, protocol::CollectiveOptions options);
  void allgather_column(std::span<float> data, std::span<const size_t> counts) override;
  void reduce_scatter_column(std::span<float> data, std::span<const size_t> counts) override;
  void allreduce_row(std::span<float> data) override;

 private:
  std::unique_ptr<protocol::Group> column_, row_;
};

}  // namespace gossipd::daemon
