#include "daemon/member/join_policy.h"

#include <algorithm>

namespace gossipd::daemon {

proto::Hello describe(const std::string& algo, const proto::Member& self, trainer::Trainer& trainer,
                      const protocol::SegmentTable& segments) {
  proto::Hello h;
  h.set_endpoint(self.endpoint());
  h.set_group(self.group());
  h.set_algo(algo);
  h.set_parameter_floats(trainer.model().params().size());
  h.set_optimizer_state_floats(trainer.optimizer().state().size());
  for (const auto& seg : segments) h.add_segment_lengths(seg.length);
  return h;
}

std::string refusal(const proto::Hello& mine, const proto::Hello& theirs) {
  if (theirs.algo() != mine.algo()) return "it runs --algo " + theirs.algo() + ", the cluster " + mine.algo();
  if (theirs.parameter_floats() != mine.parameter_floats()) {
    return "its model has " + std::to_string(theirs.parameter_floats()) + " parameters, the cluster's " +
           std::to_string(mine.parameter_floats()) + ": use the cluster's --model and --hidden";
  }
  if (theirs.optimizer_state_floats() != mine.optimizer_state_floats()) {
    return "its optimizer keeps " + std::to_string(theirs.optimizer_state_floats()) +
           " floats, the cluster's " + std::to_string(mine.optimizer_state_floats()) +
           ": use the cluster's --optimizer";
  }
  if (!std::equal(theirs.segment_lengths().begin(), theirs.segment_lengths().end(),
                  mine.segment_lengths().begin(), mine.segment_lengths().end())) {
    return "its segments differ from the cluster's: use the cluster's --segments";
  }
  return "";
}

}  // namespace gossipd::daemon
