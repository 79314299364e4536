#include "protocol/collectives/ring.h"

#include <algorithm>

#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

RingLayout::RingLayout(const Group& group, size_t count, std::span<const size_t> counts,
                       const std::string& name)
    : blocks_(block_layout(count, group.size(), counts, name)) {
  size_t largest = 0;
  for (const BlockRange& b : blocks_) largest = std::max(largest, b.size());
  pieces_ = std::max<size_t>(1, piece_count(largest, group.options()));
}

BlockRange RingLayout::piece(size_t block, size_t j) const {
  const BlockRange b = blocks_[block];
  const BlockRange p = block_range(b.size(), pieces_, j);
  return {b.begin + p.begin, b.begin + p.end};
}

RingPipeline::RingPipeline(Group& group, std::span<float> data, size_t shift, size_t steps,
                           size_t reduce_steps, std::string name, std::span<const size_t> counts)
    : group_(group),
      data_(data),
      shift_(shift),
      steps_(steps),
      reduce_steps_(reduce_steps),
      name_(std::move(name)),
      layout_(group, data.size(), counts, name_) {}

size_t RingPipeline::block_at(size_t step, size_t extra) const {
  const size_t n = group_.size();
  // (rank - step - shift - extra) mod n without unsigned underflow.
  return (group_.rank() + n * (step + shift_ + extra + 1) - step - shift_ - extra) % n;
}

void RingPipeline::run() {
  CollectiveChannel channel(group_, name_);
  if (group_.size() == 1 || data_.empty() || steps_ == 0) return;
  SendTracker tracker(group_.size());
  const size_t right = group_.rank() + 1;
  try {
    run_steps(channel, tracker);
    channel.wait_sent(tracker, right);
  } catch (...) {
    channel.release_sends(tracker, {right});
    throw;
  }
}

void RingPipeline::run_steps(CollectiveChannel& channel, SendTracker& tracker) {
  const size_t left = group_.rank() + group_.size() - 1;
  const size_t right = group_.rank() + 1;
  const auto send_piece = [&](size_t step, size_t block, size_t j) {
    const BlockRange p = layout_.piece(block, j);
    if (p.size() == 0) return;
    channel.send(right, static_cast<uint32_t>(step), static_cast<uint32_t>(j),
                 data_.subspan(p.begin, p.size()), tracker.token(block));
  };
  const size_t first = block_at(0, 0);
  for (size_t j = 0; j < layout_.pieces(); ++j) send_piece(0, first, j);

  for (size_t s = 0; s < steps_; ++s) {
    const size_t block = block_at(s, 1);
    const bool reduce = s < reduce_steps_;
    // A copy step overwrites a block we sent earlier: it must have left.
    if (!reduce && !channel.wait_slot(tracker, block, Clock::now() + group_.options().timeout)) {
      throw PeerTimeout(group_.node().id(), group_.member(right), group_.options().timeout,
                        name_ + " (send)");
    }
    const auto fold = reduce ? CollectiveChannel::Fold::kAdd : CollectiveChannel::Fold::kCopy;
    // All of the step's pieces posted first: one that overtakes the one we
    // wait for lands in place too.
    for (size_t j = 0; j < layout_.pieces(); ++j) {
      const BlockRange p = layout_.piece(block, j);
      if (p.size() > 0)
        channel.expect(left, static_cast<uint32_t>(s), static_cast<uint32_t>(j),
                       data_.subspan(p.begin, p.size()), fold);
    }
    for (size_t j = 0; j < layout_.pieces(); ++j) {
      const BlockRange p = layout_.piece(block, j);
      if (p.size() == 0) continue;
      channel.recv_into(left, static_cast<uint32_t>(s), static_cast<uint32_t>(j),
                        data_.subspan(p.begin, p.size()), fold);
      if (s + 1 < steps_) send_piece(s + 1, block, j);
    }
  }
}

AllreduceRing::AllreduceRing(Group& group, std::span<float> data)
    : pipeline_(group, data, 1, 2 * (group.size() - 1), group.size() - 1, "allreduce") {}

ReduceScatterRing::ReduceScatterRing(Group& group, std::span<float> data, std::span<const size_t> counts)
    : pipeline_(group, data, 1, group.size() - 1, group.size() - 1, "reduce-scatter", counts) {}

AllgatherRing::AllgatherRing(Group& group, std::span<float> data, std::span<const size_t> counts)
    : pipeline_(group, data, 0, group.size() - 1, 0, "allgather", counts) {}

}  // namespace gossipd::protocol
