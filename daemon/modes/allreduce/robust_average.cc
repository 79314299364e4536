#include "daemon/modes/allreduce/robust_average.h"

#include <algorithm>
#include <utility>

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
  average_.resize(grads.size());
  {
    TrainingLoop::CommTimer comm(loop);
    mean_.gather(group, sent);
  }
  mean_.aggregate(group);
  {
    TrainingLoop::CommTimer comm(loop);
    mean_.share(group, average_);
  }
  report_.publish(mean_.judge(), mean_.end_round(), round);
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
