#include "daemon/modes/allreduce/robust_average.h"

#include <algorithm>
#include <utility>

#include "protocol/collectives/block_gather.h"
#include "protocol/collectives/collectives.h"

namespace gossipd::daemon {

std::span<const float> RobustAverage::outgoing(std::span<const float> grads, protocol::SegmentAttack* attack,
                                               uint64_t round) {
  std::span<const float> sent = grads;
  if (momentum_ > 0) {
    own_.resize(grads.size(), 0.0f);
    for (size_t k = 0; k < grads.size(); ++k) own_[k] = momentum_ * own_[k] + grads[k];
    sent = own_;
  }
  return attack ? attack->apply(0, round, sent) : sent;
}

void RobustAverage::run(protocol::Group& group, std::span<float> grads, protocol::SegmentAttack* attack,
                        TrainingLoop& loop, uint64_t round) {
  const std::span<const float> sent = outgoing(grads, attack, round);
  const protocol::BlockRange own = protocol::block_range(grads.size(), group.size(), group.rank());
  rows_.resize(group.size() * own.size());
  average_.resize(grads.size());
  {
    TrainingLoop::CommTimer comm(loop);
    protocol::BlockGather(group, sent).run(rows_);
  }
  clip_.aggregate(group.members(), group.rank(), rows_,
                  std::span<float>(average_).subspan(own.begin, own.size()));
  {
    TrainingLoop::CommTimer comm(loop);
    protocol::Allgather(group, average_).run();
  }
  report_.publish(clip_.judge(), clip_.end_round(), round);
  if (momentum_ == 0) {
    std::copy(average_.begin(), average_.end(), grads.begin());
    return;
  }
  previous_.resize(grads.size(), 0.0f);
  for (size_t k = 0; k < grads.size(); ++k) grads[k] = average_[k] - momentum_ * previous_[k];
  // M_t becomes M_{t-1}; the next step writes all of average_ again (its
  // own block, then the allgather every other).
  std::swap(previous_, average_);
}

void RobustAverage::restart() {
  own_.clear();
  previous_.clear();
}

}  // namespace gossipd::daemon
