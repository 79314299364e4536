#include "daemon/modes/gossip/gossip_traffic.h"

#include <map>

#include "topology/derangement.h"
#include "topology/exponential_graph.h"
#include "topology/hierarchy.h"
#include "topology/view.h"

namespace gossipd::daemon {
namespace {

class GossipTraffic : public RoundTraffic {
 public:
  GossipTraffic(GossipAlgo algo, const GossipFlags& flags, TrafficContext c)
      : algo_(algo),
        flags_(flags),
        codec_{checked_codec(flags.compress)},
        spread_(group_spread(flags)),
        c_(std::move(c)),
        view_(topology::starting_view(c_.members)) {
    if (!flags_.hierarchical) return;
    std::map<std::string, std::string> labels;
    for (size_t i = 0; i < c_.members.size(); ++i) labels[c_.members[i]] = c_.labels.at(i);
    groups_ = std::make_unique<topology::Groups>(view_, labels);
  }

  std::vector<TrafficStage> round(uint64_t round) const override {
    if (round % flags_.local_steps != 0) return {};  // a local step
    if (algo_ != GossipAlgo::kCrossover) return {push_sum(round)};
    if (!flags_.hierarchical) return {crossover(round)};
    return {group_allreduces(), between_groups(round), group_allreduces()};
  }

 private:
  uint32_t index(const std::string& id) const { return static_cast<uint32_t>(*view_.index_of(id)); }

  TrafficStage crossover(uint64_t round) const {
    TrafficStage st;
    st.folded_next_round = flags_.overlap;
    if (flags_.pace) st.pace = TrafficStage::Pace::kAfterLast;
    const size_t n = view_.size();
    for (uint32_t s = 0; s < c_.segments.size(); ++s) {
      const std::vector<uint32_t> to = topology::derangement(n, c_.seed, view_.id(), round, s);
      for (uint32_t i = 0; i < to.size(); ++i)
        st.messages.push_back({i, to[i], segment_message_bytes(c_.segments[s], codec_), s});
    }
    return st;
  }

  TrafficStage push_sum(uint64_t round) const {
    TrafficStage st;
    st.folded_next_round = algo_ == GossipAlgo::kOsgp;
    if (flags_.pace) st.pace = TrafficStage::Pace::kReceiver;
    const size_t n = view_.size();
    for (uint32_t i = 0; i < n; ++i) {
      const std::vector<size_t> out = topology::exponential_out_peers(n, i, round);
      for (uint32_t s = 0; s < c_.segments.size(); ++s) {
        for (size_t k : out)
          st.messages.push_back(
              {i, static_cast<uint32_t>(k), segment_message_bytes(c_.segments[s], codec_), s});
      }
    }
    return st;
  }

  TrafficStage group_allreduces() const {
    TrafficStage st;
    st.kind = TrafficStage::Kind::kAllreduce;
    st.allreduce_bytes = model_bytes(c_.segments);
    // In a codec both travel in it (a group's very first average is float32,
    // which the model leaves out: one round of a run).
    st.allreduce_codec = codec_;
    for (size_t g = 0; g < groups_->count(); ++g) {
      st.groups.emplace_back();
      for (const auto& id : groups_->members(g)) st.groups.back().push_back(index(id));
    }
    return st;
  }

  TrafficStage between_groups(uint64_t round) const {
    TrafficStage st;
    for (uint32_t s = 0; s < c_.segments.size(); ++s) {
      for (size_t g = 0; g < groups_->count(); ++g) {
        const std::string& owner = groups_->segment_owner(g, s, spread_, round);
        const auto x =
            topology::inter_group_exchange(*groups_, view_.id(), owner, c_.seed, round, s, spread_);
        if (x)
          st.messages.push_back(
              {index(owner), index(x->send_to), segment_message_bytes(c_.segments[s], codec_), s});
      }
    }
    return st;
  }

  GossipAlgo algo_;
  GossipFlags flags_;
  protocol::CodecSpec codec_;     // how segments travel; the groups' allreduces stay float32
  topology::GroupSpread spread_;  // who exchanges a group's segments
  TrafficContext c_;
  topology::View view_;
  std::unique_ptr<topology::Groups> groups_;
};

}  // namespace

std::unique_ptr<RoundTraffic> gossip_traffic(GossipAlgo algo, const GossipFlags& flags,
                                             TrafficContext context) {
  return std::make_unique<GossipTraffic>(algo, flags, std::move(context));
}

}  // namespace gossipd::daemon
