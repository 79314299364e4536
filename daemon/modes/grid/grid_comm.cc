#include "daemon/modes/grid/grid_comm.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <stdexcept>

#include "protocol/collectives/barrier.h"
#include "protocol/collectives/collectives.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {
GroupGridComm::GroupGridComm(protocol::Node& node, const std::vector<std::string>& members,
                             topology::GridShape shape, size_t rank, protocol::CollectiveOptions options,
                             protocol::tags::Range grid)
    : node_(node) {
  if (members.size() != shape.procs()) {
    throw std::invalid_argument("grid " + shape.name() + " needs " + std::to_string(shape.procs()) +
                                " members, got " + std::to_string(members.size()));
  }
  const topology::GridCoord at = topology::grid_coord(shape, rank);
  const std::vector<std::string> column =
      protocol::members_at(members, topology::column_ranks(shape, at.col));
  column_ = std::make_unique<protocol::Group>(node, grid.at(4 * at.col), column, options);
  row_ = std::make_unique<protocol::Group>(node, grid.at(4 * at.row + 1),
                                           protocol::members_at(members, topology::row_ranks(shape, at.row)),
                                           options);
  halo_ = std::make_unique<protocol::Group>(node, grid.at(4 * at.col + 2), column, options);
  halo_stream_ = std::make_unique<protocol::TensorStream>(*halo_);
  all_ = std::make_unique<protocol::Group>(node, grid.at(kStartTag + 1), members, options);
  // Keys as the groups' tags' indices, the grid's (index 3 is no group's).
  auto sums = [&](protocol::Group& group, uint32_t key, const char* what) {
    return std::make_unique<protocol::HostAwareCollectives>(
        group, key, [id = node.id(), what](const std::string& levels) {
          spdlog::info("node '{}': the grid's {} allreduce in two levels, {}", id, what, levels);
        });
  };
  column_sum_ = sums(*column_, static_cast<uint32_t>(4 * at.col), "column");
  row_sum_ = sums(*row_, static_cast<uint32_t>(4 * at.row + 1), "row");
  all_sum_ = sums(*all_, 3u, "whole");
}

void GroupGridComm::set_stop(std::stop_token stop) {
  for (protocol::Group* g : {column_.get(), row_.get(), halo_.get(), all_.get()}) g->options().stop = stop;
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

// Between two barriers: the row's members start the sum together and leave
// it together. The row is where the grid's columns meet; without the
// barriers a column that comes early floods the late one's links with its
// halves while the late one is still in its backward (its reduce-scatters
// slow down), and the member that came last leaves first (the others'
// halves were waiting for it) while its own sends still drain to the row,
// so its column's next forward shares the link with them. Measured, 4x2 at
// 100 mbit (tests/bench/grid_claim.sh): communication 1.30x the alpha-beta
// time without them, 1.10x with them.
void GroupGridComm::allreduce_row(std::span<float> data) {
  counted(bytes_.weight_gradient, [&] {
    protocol::Barrier(*row_).run();
    row_sum_->allreduce(data);
    protocol::Barrier(*row_).run();
  });
}

void GroupGridComm::allreduce_all(std::span<float> data) {
  counted(bytes_.weight_gradient, [&] { all_sum_->allreduce(data); });
}

void GroupGridComm::sum_column(std::span<float> data) { column_sum_->allreduce(data); }

// Both receives posted before the sends (the neighbours send at once too).
void GroupGridComm::exchange_halo(std::span<const float> up, std::span<const float> down,
                                  std::span<float> from_up, std::span<float> from_down) {
  counted(bytes_.halo, [&] {
    const size_t me = halo_->rank(), seq = halo_seq_++;
    using Recv = protocol::TensorStream::RecvHandle;
    using Send = protocol::TensorStream::SendHandle;
    std::optional<Recv> above, below;
    std::optional<Send> sent_up, sent_down;
    if (!from_up.empty()) above = halo_stream_->irecv(me - 1, seq, from_up);
    if (!from_down.empty()) below = halo_stream_->irecv(me + 1, seq, from_down);
    if (!up.empty()) sent_up = halo_stream_->send(me - 1, seq, up);
    if (!down.empty()) sent_down = halo_stream_->send(me + 1, seq, down);
    if (above) halo_stream_->wait(*above);
    if (below) halo_stream_->wait(*below);
    if (sent_up) halo_stream_->wait(*sent_up);
    if (sent_down) halo_stream_->wait(*sent_down);
  });
}

void GroupGridComm::gather_parameters(std::span<float> data, std::span<const size_t> counts) {
  protocol::Allgather(*column_, data, counts).run();
}

}  // namespace gossipd::daemon
