#include "daemon/modes/gossip/gossip_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/modes/gossip/final_average.h"
#include "daemon/worker/outer_momentum.h"
#include "daemon/worker/view_watch.h"
#include "protocol/collectives/consensus.h"
#include "protocol/collectives/group.h"
#include "protocol/gossip/crossover.h"
#include "protocol/gossip/overlapped_round.h"
#include "protocol/gossip/push_sum.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"
#include "topology/view.h"

namespace gossipd::daemon {

GossipWorker::GossipWorker(protocol::Node& node, std::vector<std::string> members, Membership& membership,
                           trainer::Trainer& trainer, TrainingLoop& loop, WorkerState& state,
                           MetricsRegistry& metrics, GossipWorkerOptions options)
    : node_(node),
      members_(std::move(members)),
      membership_(membership),
      trainer_(trainer),
      loop_(loop),
      state_(state),
      metrics_(metrics),
      options_(std::move(options)),
      skipped_(metrics.counter("gossipd_segments_skipped_total", "Segments that missed their deadline")),
      values_refused_(
          metrics.counter("gossipd_group_values_non_finite_total",
                          "Elements of a hierarchical group's average or share that came out NaN or "
                          "infinite and kept the member's own value")),
      bytes_sent_(metrics.counter("gossipd_gossip_bytes_sent_total", "Gossip bytes sent")),
      bytes_received_(metrics.counter("gossipd_gossip_bytes_received_total", "Gossip bytes received")),
      consensus_(metrics.gauge("gossipd_consensus_distance",
                               "Mean squared distance of the replicas from their mean")),
      measure_failures_(metrics.counter("gossipd_consensus_failures_total",
                                        "Consensus measurements abandoned (a member failed meanwhile)")),
      robust_report_(node.id(), "segments", metrics, state) {
  robust_report_.evict_through(membership_, options_.evict_quorum);
}

// What differs between the protocols inside one step; the step around it is
// GossipWorker::run's. After train() the trainer has counted the step, so
// its count is the round being exchanged.
class GossipWorker::Protocol {
 public:
  virtual ~Protocol() = default;
  // The state a joiner downloads and a checkpoint holds: the parameters (for
  // SGP the push-sum numerators).
  virtual std::span<float> state() = 0;
  virtual protocol::PushSumGossip* push_sum() { return nullptr; }
  virtual trainer::StepResult train(std::span<const uint32_t> idx) = 0;
  virtual protocol::RoundStats exchange(uint64_t round) = 0;
  // The model's parameters as the replica stands (SGP: de-biased), for a
  // consensus measurement.
  virtual std::span<const float> replica() = 0;
  // Before an evaluation and at the end: the model holds the replica.
  virtual protocol::RoundStats settle() { return {}; }
  // The model's parameters were replaced (the final average): the
  // protocol's own state follows (SGP: the numerators x = w z).
  virtual void adopt_model() {}
  // --robust clip's record of the peers (nullopt: no defence).
  using Clipping = std::optional<std::map<std::string, protocol::PeerClipping>>;
  virtual Clipping clipping() const { return std::nullopt; }
};

namespace {

// Crossover-SGD: flat, hierarchical (groups) or overlapped (the round runs on
// a communication thread while the next step computes).
class CrossoverProtocol : public GossipWorker::Protocol {
 public:
  CrossoverProtocol(protocol::Node& node, Membership& membership, trainer::Trainer& trainer,
                    const GossipWorkerOptions& o, const protocol::GossipOptions& g)
      : membership_(membership),
        trainer_(trainer),
        options_(o),
        stop_(g.stop),
        params_(trainer.model().params()),
        flat_(node, o.segments, g),
        hierarchical_(node, o.segments, g, o.spread) {
    if (o.overlap) {
      overlapped_ = std::make_unique<protocol::OverlappedRound>([this](uint64_t round, std::span<float> p) {
        return flat_.run_round(membership_.view_at(round), round, p);
      });
    }
  }
  std::span<float> state() override { return params_; }
  trainer::StepResult train(std::span<const uint32_t> idx) override { return trainer_.train_step(idx); }
  protocol::RoundStats exchange(uint64_t round) override {
    if (overlapped_) return overlapped_->exchange(round, params_);  // waits for the previous round's
    if (options_.hierarchical) return hierarchical(round);
    return flat_.run_round(membership_.view_at(round), round, params_);
  }
  std::span<const float> replica() override { return params_; }
  protocol::RoundStats settle() override {
    return overlapped_ ? overlapped_->drain(params_) : protocol::RoundStats{};
  }
  Clipping clipping() const override {
    if (!options_.clip) return std::nullopt;
    return options_.hierarchical ? hierarchical_.clipping_peers() : flat_.clipping()->peers();
  }

 private:
  protocol::RoundStats hierarchical(uint64_t round) {
    // Behind the group's furthest member: skip to its round, training
    // alone, where the others wait at the next round's collectives.
    if (round < rejoin_at_) return skipped_round();
    std::vector<float> before(params_.begin(), params_.end());
    const topology::View view = membership_.view_at(round);
    watch_view(view, round);
    try {
      return hierarchical_.run_round(view, membership_.labels(), round, params_);
    } catch (const protocol::RoundsApart& e) {
      // The group's collectives went through (the group stays as it is),
      // but its members were at different rounds: the result is not taken.
      std::copy(before.begin(), before.end(), params_.begin());
      rejoin_at_ = e.latest() + 1;
      return skipped_round();
    } catch (const protocol::Aborted&) {
      if (stop_.stop_requested()) throw;  // the worker is stopping
      return skip_round(before);          // the view watch: the view for this round changed
    } catch (const protocol::TransportError&) {
      // A group member failed mid-round (silent past --timeout-ms, or its
      // connection gone): go on; membership evicts the dead one.
      return skip_round(before);
    }
  }
  // A round the group could not finish: keep our own replica whole (the
  // group collectives work in place) and build the group anew next round.
  protocol::RoundStats skip_round(std::span<const float> before) {
    std::copy(before.begin(), before.end(), params_.begin());
    hierarchical_.reset();
    return skipped_round();
  }
  protocol::RoundStats skipped_round() const {
    protocol::RoundStats skipped;
    skipped.segments_skipped = options_.segments.size();
    return skipped;
  }
  // The group's collectives stop once the view for the round in flight is
  // no longer `view` (ViewWatch): a member evicted mid-round.
  void watch_view(const topology::View& view, uint64_t round) {
    if (!watch_ || watched_view_ != view.id() || watch_->fired()) {
      watch_.reset();
      watch_ = std::make_unique<ViewWatch>(
          membership_, [this, id = view.id()](uint64_t r) { return membership_.view_at(r).id() != id; },
          round, stop_);
      watched_view_ = view.id();
      hierarchical_.stop_groups_with(watch_->token());
    }
    watch_->at_round(round);
  }

  Membership& membership_;
  trainer::Trainer& trainer_;
  const GossipWorkerOptions& options_;
  std::stop_token stop_;  // the worker's
  std::span<float> params_;
  protocol::CrossoverGossip flat_;
  protocol::HierarchicalCrossover hierarchical_;
  std::unique_ptr<protocol::OverlappedRound> overlapped_;
  std::unique_ptr<ViewWatch> watch_;  // hierarchical: the view its group was built for
  uint32_t watched_view_ = 0;
  uint64_t rejoin_at_ = 0;  // hierarchical: the round the group goes on at (RoundsApart)
};

// SGP: the numerators x live here; the model holds z = x / w for the gradients.
class PushSumProtocol : public GossipWorker::Protocol {
 public:
  PushSumProtocol(protocol::Node& node, Membership& membership, trainer::Trainer& trainer,
                  const GossipWorkerOptions& o, const protocol::GossipOptions& g)
      : membership_(membership),
        trainer_(trainer),
        params_(trainer.model().params()),
        x_(params_.begin(), params_.end()),
        push_sum_(node, o.segments, g, 1, o.algo == GossipAlgo::kOsgp) {
    if (!o.push_sum_weights.empty()) push_sum_.set_weights(o.push_sum_weights);
  }
  std::span<float> state() override { return x_; }
  protocol::PushSumGossip* push_sum() override { return &push_sum_; }
  trainer::StepResult train(std::span<const uint32_t> idx) override {
    push_sum_.debias(x_, params_);
    trainer::StepResult r = trainer_.compute_gradients(idx);
    // The step is taken on z and stored as x = w z: its size on the model is
    // the learning rate whatever the weights (push_sum.h).
    trainer_.apply_gradients(trainer_.current_lr());
    push_sum_.rebias(params_, x_);
    return r;
  }
  protocol::RoundStats exchange(uint64_t round) override {
    return push_sum_.run_round(membership_.view_at(round), round, x_);
  }
  std::span<const float> replica() override {
    push_sum_.debias(x_, params_);
    return params_;
  }
  protocol::RoundStats settle() override {
    push_sum_.debias(x_, params_);
    return {};
  }
  void adopt_model() override { push_sum_.rebias(params_, x_); }
  Clipping clipping() const override {
    if (!push_sum_.clipping()) return std::nullopt;
    return push_sum_.clipping()->peers();
  }

 private:
  Membership& membership_;
  trainer::Trainer& trainer_;
  std::span<float> params_;
  std::vector<float> x_;
  protocol::PushSumGossip push_sum_;
};

}  // namespace

void GossipWorker::maybe_measure(uint64_t round, Protocol& protocol) {
  if (options_.consensus_every == 0 || round % options_.consensus_every != 0) return;
  const topology::View view = membership_.view_at(round);
  if (view.size() < 2) return;
  if (!consensus_group_ || consensus_view_ != view.id()) {
    protocol::CollectiveOptions copts;
    copts.timeout = options_.segment_deadline;
    copts.stop = stop_;
    // A fresh tag per view: sequence numbers restart without meeting stale ones.
    consensus_group_ = std::make_unique<protocol::Group>(
        node_, protocol::tags::range(protocol::tags::User::kConsensus).at(view.id()), view.members(), copts);
    consensus_view_ = view.id();
  }
  double d = 0;
  const TrainingLoop::ObserveTimer observing(loop_);  // an observation: not training time
  try {
    d = protocol::ConsensusDistance(*consensus_group_).run(protocol.replica());
  } catch (const protocol::Aborted&) {
    throw;  // the worker is stopping: not a failed measurement
  } catch (const protocol::TransportError&) {
    // A member timed out, left or was lost mid-measure: the measure is only
    // an observation, so it is skipped and counted, never the worker's end.
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

void GossipWorker::finish(Protocol& p) {
  account(p.settle());
  const uint64_t round = trainer_.step_count();
  const uint32_t n = final_average(node_, membership_.view_at(round), trainer_.model().params(),
                                   trainer_.optimizer().state(), options_.timeout, stop_);
  p.adopt_model();
  const std::string hash = param_hash(trainer_.model().params());
  state_.update([&](proto::Status& s) {
    s.set_final_average_members(n);
    s.set_param_hash(hash);
  });
  if (n > 1)
    spdlog::info("node '{}': final model at round {}: the exact average of {} members", node_.id(), round, n);
}

void GossipWorker::report_robustness(const Protocol& p, const std::vector<std::string>& named,
                                     uint64_t round) {
  if (const auto peers = p.clipping()) robust_report_.publish(*peers, named, round);
}

void GossipWorker::account(const protocol::RoundStats& stats) {
  skipped_.add(static_cast<double>(stats.segments_skipped));
  if (stats.values_refused > 0) {
    values_refused_.add(static_cast<double>(stats.values_refused));
    if (rounds_refusing_++ % 100 == 0) {
      spdlog::warn(
          "node '{}': {} values of its group's average or share came out NaN or infinite and kept its own "
          "({} rounds so far; a sum does not say which member sent one)",
          node_.id(), stats.values_refused, rounds_refusing_);
    }
  }
  bytes_sent_.add(static_cast<double>(stats.bytes_sent));
  bytes_received_.add(static_cast<double>(stats.bytes_received));
  state_.update([&](proto::Status& s) {
    s.set_segments_skipped(s.segments_skipped() + stats.segments_skipped);
    s.set_bytes_sent(s.bytes_sent() + stats.bytes_sent);
    s.set_bytes_received(s.bytes_received() + stats.bytes_received);
  });
}

ReplicaState GossipWorker::capture(std::span<const float> x, const protocol::PushSumGossip* push_sum) const {
  ReplicaState st = replica_state(options_.snapshot_header, trainer_.step_count(), options_.steps_per_epoch,
                                  x, trainer_.optimizer().state());
  if (push_sum) {
    for (double v : push_sum->weights()) st.header.add_push_sum_weights(v);
  }
  return st;
}

ReplicaState GossipWorker::split_off_for_joiner(std::span<float> x, protocol::PushSumGossip* push_sum,
                                                const ShareSpan& share) {
  if (push_sum) {
    std::vector<double> w = push_sum->weights();
    for (size_t s = 0; s < options_.segments.size(); ++s) {
      const auto& seg = options_.segments[s];
      if (!share.holds_param(seg.offset)) continue;  // another donor's segment
      for (size_t i = seg.offset; i < seg.offset + seg.length; ++i) x[i] *= 0.5f;
      w[s] *= 0.5;
    }
    push_sum->set_weights(w);
  }
  return capture(x, push_sum);
}

std::unique_ptr<GossipWorker::Protocol> GossipWorker::make_protocol() {
  protocol::GossipOptions g;
  g.seed = options_.seed;
  g.segment_deadline = options_.segment_deadline;
  g.group_timeout = options_.timeout;
  g.adaptive_deadline = options_.adaptive_deadline;
  g.deadline_quantile = options_.deadline_quantile;
  g.stop = stop_;
  g.pace = options_.pace;
  g.codec = options_.codec;
  g.rounds_apart = options_.local_steps;
  g.attack = options_.attack;
  g.clip = options_.clip;
  if (options_.algo == GossipAlgo::kCrossover) {
    return std::make_unique<CrossoverProtocol>(node_, membership_, trainer_, options_, g);
  }
  return std::make_unique<PushSumProtocol>(node_, membership_, trainer_, options_, g);
}

trainer::StepResult GossipWorker::step(Protocol& p, OuterMomentum& outer, std::span<const uint32_t> idx) {
  // Between two steps: a joiner or a checkpoint may take the state.
  const uint64_t done = trainer_.step_count();
  membership_.at_step(
      done, [&](const ShareSpan& share) { return split_off_for_joiner(p.state(), p.push_sum(), share); });
  if (options_.checkpointer)
    options_.checkpointer->at_step(done, [&] { return capture(p.state(), p.push_sum()); });
  const trainer::StepResult r = p.train(idx);
  const uint64_t round = trainer_.step_count();
  if (round % options_.local_steps == 0) {  // --local-steps: the others are local steps
    TrainingLoop::CommTimer comm(loop_);
    const protocol::RoundStats stats = p.exchange(round);
    account(stats);
    report_robustness(p, stats.named, round);
    outer.step(p.state());
  }
  maybe_measure(round, p);
  return r;
}

void GossipWorker::run(std::stop_token stop) {
  stop_ = stop;
  const std::unique_ptr<Protocol> p = make_protocol();
  start(stop);
  OuterMomentum outer(options_.outer_momentum);  // crossover only (the flag is crossover's)
  if (outer.on()) outer.restart(p->state());
  membership_.arm();
  const auto checkpoint_now = [&] {
    if (options_.checkpointer) options_.checkpointer->write_now(capture(p->state(), p->push_sum()));
  };
  try {
    loop_.run(
        options_.steps_per_epoch, stop, [&](std::span<const uint32_t> idx) { return step(*p, outer, idx); },
        [&] { account(p->settle()); });
  } catch (const StoppedMidStep&) {
    throw;  // the host was writing the parameters
  } catch (const FinishRequested&) {
    finish(*p);
    checkpoint_now();
    throw;  // then stops as asked
  } catch (const protocol::Aborted&) {
    // Stopped between two steps, or inside a round: a gossip state is whole
    // after any part of a round (each segment mixed or not yet), so it is kept.
    checkpoint_now();
    throw;
  }
  checkpoint_now();
}

topology::GroupSpread group_spread(const GossipFlags& flags) {
  if (checked_defence(flags.robust)) return topology::GroupSpread::kRotate;
  return flags.group_owner == "root" ? topology::GroupSpread::kRoot : topology::GroupSpread::kSpread;
}

std::unique_ptr<Worker> make_gossip_worker(WorkerContext& c, GossipAlgo algo, const GossipFlags& o) {
  GossipWorkerOptions w;
  w.algo = algo;
  w.steps_per_epoch = c.steps_per_epoch;
  w.seed = c.topology_seed;
  w.segments = c.segments;
  w.segment_deadline = std::chrono::milliseconds(c.options.segment_deadline_ms);
  w.adaptive_deadline = o.deadline == "adaptive";
  w.deadline_quantile = o.deadline_quantile;
  w.overlap = o.overlap;
  w.pace = o.pace;
  w.codec = checked_codec(o.compress);
  w.local_steps = o.local_steps;
  w.outer_momentum = o.outer_momentum;
  // An attacker's noise differs from member to member and from run to run.
  w.attack = checked_attack(o.robust, c.topology_seed ^ std::hash<std::string>{}(c.node.id()));
  w.clip = checked_defence(o.robust);
  w.evict_quorum = checked_eviction(o.robust);
  w.hierarchical = o.hierarchical;
  w.spread = group_spread(o);
  w.consensus_every = o.consensus_every;
  w.startup_timeout = std::chrono::milliseconds(c.options.startup_timeout_ms);
  w.timeout = std::chrono::milliseconds(c.options.timeout_ms);
  w.joined = c.joined;
  if (c.entered_from)
    w.push_sum_weights.assign(c.entered_from->push_sum_weights().begin(),
                              c.entered_from->push_sum_weights().end());
  w.snapshot_header = c.snapshot_header;
  w.checkpointer = c.checkpointer;
  w.resumed = c.resumed;
  return std::make_unique<GossipWorker>(c.node, c.members, c.membership, c.trainer(), c.loop(), c.state,
                                        c.metrics, w);
}

}  // namespace gossipd::daemon
