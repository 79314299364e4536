#include "daemon/grid/grid_comm.h"

#include <stdexcept>

#include "protocol/collectives.h"
#include "protocol/tags.h"

namespace gossipd::daemon {
namespace {

std::vector<std::string> pick(const std::vector<std::string>& members, const std::vector<size_t>& ranks) {
  std::vector<std::string> ids;
  for (size_t r : ranks) ids.push_back(members.at(r));
  return ids;
}

}  // namespace

GroupGridComm::GroupGridComm(protocol::Node& node, const std::vector<std::string>& members,
                             topology::GridShape shape, size_t rank, protocol::CollectiveOptions options)
    : node_(node) {
  if (members.size() != shape.procs()) {
    throw std::invalid_argument("grid " + shape.name() + " needs " + std::to_string(shape.procs()) +
                                " members, got " + std::to_string(members.size()));
  }
  namespace tags = protocol::tags;
  const topology::GridCoord at = topology::grid_coord(shape, rank);
  const tags::Range grid = tags::range(tags::User::kGrid);
  column_ = std::make_unique<protocol::Group>(node, grid.at(2 * at.col),
                                              pick(members, topology::column_ranks(shape, at.col)), options);
  row_ = std::make_unique<protocol::Group>(node, grid.at(2 * at.row + 1),
                                           pick(members, topology::row_ranks(shape, at.row)), options);
}

void GroupGridComm::set_stop(std::stop_token stop) {
  column_->options().stop = stop;
  row_->options().stop = stop;
}

template <typename F>
void GroupGridComm::counted(uint64_t& kind, F&& collective) {
  const uint64_t before = node_.payload_bytes_sent();
  collective();
  kind += node_.payload_bytes_sent() - before;
}

void GroupGridComm::allgather_column(std::span<float> data, std::span<const size_t> counts) {
  counted(bytes_.forward, [&] { protocol::Allgather(*column_, data, counts).run(); });
}

void GroupGridComm::reduce_scatter_column(std::span<float> data, std::span<const size_t> counts) {
  counted(bytes_.input_gradient, [&] { protocol::ReduceScatter(*column_, data, counts).run(); });
}

void GroupGridComm::allreduce_row(std::span<float> data) {
  counted(bytes_.weight_gradient, [&] { protocol::Allreduce(*row_, data).run(); });
}

void GroupGridComm::gather_parameters(std::span<float> data, std::span<const size_t> counts) {
  protocol::Allgather(*column_, data, counts).run();
}

}  // namespace gossipd::daemon
