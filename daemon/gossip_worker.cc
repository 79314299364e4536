#include "daemon/gossip_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "daemon/round_floats.h"
#include "protocol/broadcast_ring.h"
#include "protocol/consensus.h"
#include "protocol/crossover.h"
#include "protocol/errors.h"
#include "protocol/group.h"
#include "protocol/overlapped_round.h"
#include "protocol/push_sum.h"
#include "protocol/ring_collectives.h"
#include "protocol/tags.h"
#include "topology/view.h"

namespace gossipd::daemon {

uint64_t agree_on_oldest_round(protocol::Group& group, uint64_t mine) {
  // Two floats per member (round_to_floats); each contributes its own block.
  std::vector<float> all(2 * group.size(), 0.0f);
  const auto own = round_to_floats(mine);
  std::copy(own.begin(), own.end(), all.begin() + static_cast<std::ptrdiff_t>(2 * group.rank()));
  protocol::AllgatherRing(group, all).run();
  uint64_t oldest = mine;
  for (size_t r = 0; r < group.size(); ++r) oldest = std::min(oldest, round_from_floats(&all[2 * r]));
  return oldest;
}

GossipWorker::GossipWorker(protocol::Node& node, std::vector<std::string> members, Membership& membership,
                           trainer::Trainer& trainer, TrainingLoop& loop, WorkerState& state,
                           MetricsRegistry& metrics, GossipWorkerOptions options)
    : node_(node),
      members_(std::move(members)),
      membership_(membership),
      trainer_(trainer),
      loop_(loop),
      state_(state),
      options_(std::move(options)),
      skipped_(metrics.counter("gossipd_segments_skipped_total", "Segments that missed their deadline")),
      bytes_sent_(metrics.counter("gossipd_gossip_bytes_sent_total", "Gossip bytes sent")),
      bytes_received_(metrics.counter("gossipd_gossip_bytes_received_total", "Gossip bytes received")),
      consensus_(metrics.gauge("gossipd_consensus_distance", "Mean squared distance of the replicas from their mean")),
      measure_failures_(metrics.counter("gossipd_consensus_failures_total",
                                        "Consensus measurements abandoned (a member failed meanwhile)")) {}

void GossipWorker::maybe_measure(const topology::View& view, uint64_t round, std::span<const float> replica) {
  if (options_.consensus_every == 0 || round % options_.consensus_every != 0 || view.size() < 2) return;
  if (!consensus_group_ || consensus_epoch_ != view.epoch()) {
    protocol::CollectiveOptions copts;
    copts.timeout = options_.segment_deadline;
    copts.stop = stop_;
    // A fresh tag per view: sequence numbers restart without meeting stale ones.
    consensus_group_ = std::make_unique<protocol::Group>(node_, protocol::tags::kConsensusBase + protocol::tags::epoch_offset(view.epoch()), view.members(), copts);
    consensus_epoch_ = view.epoch();
  }
  double d = 0;
  try {
    d = protocol::ConsensusDistance(*consensus_group_).run(replica);
  } catch (const protocol::PeerTimeout&) {
    measure_failures_.add();
    consensus_group_.reset();  // its sequence may now differ between members
    return;
  }
  consensus_.set(d);
  state_.update([&](proto::Status& s) {
    s.set_consensus_distance(d);
    s.set_consensus_round(round);
  });
}

void GossipWorker::account(const protocol::RoundStats& stats) {
  skipped_.add(static_cast<double>(stats.segments_skipped));
  bytes_sent_.add(static_cast<double>(stats.bytes_sent));
  bytes_received_.add(static_cast<double>(stats.bytes_received));
  state_.update([&](proto::Status& s) {
    s.set_segments_skipped(s.segments_skipped() + stats.segments_skipped);
    s.set_bytes_sent(s.bytes_sent() + stats.bytes_sent);
    s.set_bytes_received(s.bytes_received() + stats.bytes_received);
  });
}

JoinState GossipWorker::capture(std::span<const float> x, const protocol::PushSumGossip* push_sum) const {
  JoinState st;
  st.header = options_.snapshot_header;
  st.header.set_step(trainer_.step_count());
  st.header.set_epoch(static_cast<uint32_t>(trainer_.step_count() / std::max<size_t>(1, options_.steps_per_epoch)));
  if (push_sum) {
    for (double v : push_sum->weights()) st.header.add_push_sum_weights(v);
  }
  st.params.assign(x.begin(), x.end());
  auto opt = trainer_.optimizer().state();
  st.optimizer.assign(opt.begin(), opt.end());
  return st;
}

JoinState GossipWorker::snapshot(std::span<float> x, protocol::PushSumGossip* push_sum) {
  if (push_sum) {
    // The joiner takes half of this member's mass: numerators and weights.
    std::vector<double> w = push_sum->weights();
    for (size_t s = 0; s < options_.segments.size(); ++s) {
      const auto& seg = options_.segments[s];
      for (size_t i = seg.offset; i < seg.offset + seg.length; ++i) x[i] *= 0.5f;
      w[s] *= 0.5;
    }
    push_sum->set_weights(w);
  }
  return capture(x, push_sum);
}

protocol::RoundStats GossipWorker::hierarchical_round(protocol::HierarchicalCrossover& h, uint64_t round,
                                                      std::span<float> params) {
  const topology::View view = membership_.view_at(round);
  std::vector<float> before(params.begin(), params.end());
  try {
    return h.run_round(view, membership_.labels(), round, params);
  } catch (const protocol::PeerTimeout&) {
    // A group member failed mid-round: keep our own replica whole (the group
    // collectives work in place) and go on; membership evicts the dead one.
    std::copy(before.begin(), before.end(), params.begin());
    h.reset();
    protocol::RoundStats skipped;
    skipped.segments_skipped = options_.segments.size();
    return skipped;
  }
}

void GossipWorker::run(std::stop_token stop) {
  stop_ = stop;
  protocol::GossipOptions gopts;
  gopts.seed = options_.seed;
  gopts.segment_deadline = options_.segment_deadline;
  gopts.stop = stop;
  gopts.pace = options_.pace;
  auto params = trainer_.model().params();
  protocol::CrossoverGossip crossover(node_, options_.segments, gopts);
  protocol::HierarchicalCrossover hierarchical(node_, options_.segments, gopts, options_.spread);
  protocol::PushSumGossip push_sum(node_, options_.segments, gopts, 1, options_.algo == GossipAlgo::kOsgp);
  if (!options_.push_sum_weights.empty()) push_sum.set_weights(options_.push_sum_weights);
  if (!options_.joined) {
    protocol::CollectiveOptions copts;
    copts.timeout = options_.startup_timeout;
    copts.stop = stop;
    protocol::Group everyone(node_, protocol::tags::kStartup, members_, copts);
    protocol::Barrier(everyone).run();  // every member is up (and knows the segments) before round 0
    if (options_.resumed) {
      // Rounds name the topology draws and the segments' sequence: every
      // member goes on from the same one, the oldest checkpoint's.
      const uint64_t mine = trainer_.step_count();
      trainer_.set_step_count(agree_on_oldest_round(everyone, mine));
      if (trainer_.step_count() != mine) {
        spdlog::info("node '{}': resuming at round {} with the others (own checkpoint: round {})", node_.id(),
                     trainer_.step_count(), mine);
      }
    }
  }
  if (options_.hierarchical) {
    // Groups come from labels every member must know before round 1.
    const auto deadline = std::chrono::steady_clock::now() + options_.startup_timeout;
    while (!membership_.labels_known(trainer_.step_count() + 1)) {
      if (stop.stop_requested()) throw protocol::Aborted(node_.id(), "waiting for group labels");
      if (std::chrono::steady_clock::now() >= deadline) {
        throw protocol::TransportError(node_.id(), "",
                                       "node '" + node_.id() + "': the members' --group labels never all arrived "
                                       "within --startup-timeout-ms (are all members running with --hierarchical?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  membership_.arm();
  const size_t steps = options_.steps_per_epoch;
  auto serve = [&](std::span<float> x, protocol::PushSumGossip* ps) {
    membership_.at_step(trainer_.step_count(), [&] { return snapshot(x, ps); });
    if (options_.checkpointer) options_.checkpointer->at_step(trainer_.step_count(), [&] { return capture(x, ps); });
  };
  auto last_checkpoint = [&](std::span<const float> x, const protocol::PushSumGossip* ps) {
    if (options_.checkpointer) options_.checkpointer->write_now(capture(x, ps));
  };

  if (options_.algo == GossipAlgo::kCrossover && options_.overlap) {
    protocol::OverlappedRound overlapped([&](uint64_t round, std::span<float> p) {
      return crossover.run_round(membership_.view_at(round), round, p);
    });
    loop_.run(
        steps, stop,
        [&](std::span<const uint32_t> idx) {
          serve(params, nullptr);
          trainer::StepResult r = trainer_.train_step(idx);
          {
            TrainingLoop::CommTimer comm(loop_);  // waits for the previous round's exchange
            account(overlapped.exchange(trainer_.step_count(), params));
          }
          maybe_measure(membership_.view_at(trainer_.step_count()), trainer_.step_count(), params);
          return r;
        },
        [&] { account(overlapped.drain(params)); });
    last_checkpoint(params, nullptr);
    return;
  }
  if (options_.algo == GossipAlgo::kCrossover) {
    loop_.run(steps, stop, [&](std::span<const uint32_t> idx) {
      serve(params, nullptr);
      trainer::StepResult r = trainer_.train_step(idx);
      const uint64_t round = trainer_.step_count();
      {
        TrainingLoop::CommTimer comm(loop_);
        if (options_.hierarchical) {
          account(hierarchical_round(hierarchical, round, params));
        } else {
          account(crossover.run_round(membership_.view_at(round), round, params));
        }
      }
      maybe_measure(membership_.view_at(round), round, params);
      return r;
    });
    last_checkpoint(params, nullptr);
    return;
  }
  // SGP: the numerators x live here; the model holds z = x / w for the gradients.
  std::vector<float> x(params.begin(), params.end());
  loop_.run(
      steps, stop,
      [&](std::span<const uint32_t> idx) {
        serve(x, &push_sum);
        push_sum.debias(x, params);
        trainer::StepResult r = trainer_.compute_gradients(idx);
        // The step is taken on z and stored as x = w z: its size on the
        // model is the learning rate whatever the weights (push_sum.h).
        trainer_.optimizer().step(params, trainer_.model().grads(), trainer_.current_lr());
        push_sum.rebias(params, x);
        const uint64_t round = trainer_.step_count() + 1;
        const topology::View view = membership_.view_at(round);
        {
          TrainingLoop::CommTimer comm(loop_);
          account(push_sum.run_round(view, round, x));
        }
        trainer_.count_step();
        if (options_.consensus_every > 0 && round % options_.consensus_every == 0) {
          push_sum.debias(x, params);  // the replicas SGP trains are z = x / w
          maybe_measure(view, round, params);
        }
        return r;
      },
      [&] { push_sum.debias(x, params); });
  last_checkpoint(x, &push_sum);
}

}  // namespace gossipd::daemon
