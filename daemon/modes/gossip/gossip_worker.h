#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/membership.h"
#include "daemon/observe/metrics.h"
#include "daemon/worker/compress_flags.h"
#include "daemon/worker/outer_momentum.h"
#include "daemon/worker/robust_flags.h"
#include "daemon/worker/robust_report.h"
#include "daemon/worker/training_loop.h"
#include "daemon/worker/worker.h"
#include "protocol/gossip/crossover.h"
#include "protocol/gossip/push_sum.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

enum class GossipAlgo { kCrossover, kSgp, kOsgp };

// gossipd run's flags of the gossip protocols (daemon/modes/gossip/gossip_mode.cc).
struct GossipFlags {
  bool overlap = false;                // crossover
  bool pace = false;                   // flat crossover, sgp
  bool hierarchical = false;           // crossover
  std::string group_owner = "spread";  // spread | root
  uint64_t consensus_every = 100;
  CompressFlags compress{};        // --compress, --compress-block
  uint32_t local_steps = 1;        // exchange every H-th step
  float outer_momentum = 0.0f;     // crossover: the outer step over each exchange window
  RobustFlags robust{};            // crossover, sgp, osgp: --inject-byzantine, --robust
  std::string deadline = "fixed";  // --deadline: fixed | adaptive
  double deadline_quantile = protocol::DeadlineSpec{}.quantile;  // --deadline-quantile
};

// Who exchanges a group's segments (--group-owner; under --robust clip the
// owners rotate, so that each hears every member of a partner group in
// turn and ClippedGossip's radius is not learned from one sender alone).
topology::GroupSpread group_spread(const GossipFlags& flags);

struct GossipWorkerOptions {
  GossipAlgo algo = GossipAlgo::kCrossover;
  size_t steps_per_epoch = 1;  // the same on every member
  uint64_t seed = 1;           // topology seed, the same on every member
  protocol::SegmentTable segments;
  std::chrono::milliseconds segment_deadline{2000};
  // --deadline adaptive: learned from the arrivals, segment_deadline the most
  // (protocol::SegmentDeadlines).
  bool adaptive_deadline = false;
  double deadline_quantile = protocol::DeadlineSpec{}.quantile;
  std::chrono::milliseconds startup_timeout{60000};
  // --timeout-ms: hierarchical groups' exact averages wait this long for a member.
  std::chrono::milliseconds timeout{10000};
  // Crossover: run each round on a communication thread while the next step
  // computes (protocol::OverlappedRound). SGP has its own overlap: osgp.
  bool overlap = false;
  // Crossover: pace the sends (protocol::GossipOptions::pace).
  bool pace = false;
  protocol::CodecSpec codec;    // how segments travel (--compress)
  uint32_t local_steps = 1;     // --local-steps: a round every H-th step
  float outer_momentum = 0.0f;  // --outer-momentum (crossover)
  // Flat crossover: --inject-byzantine (this member attacks) and --robust clip.
  std::optional<protocol::AttackSpec> attack;
  std::optional<protocol::ClipSpec> clip;
  size_t evict_quorum = 0;  // --evict-byzantine: the members named are accused (0: not)
  // Crossover: exact averages inside groups of members with the same
  // --group label, crossover between groups (protocol::HierarchicalCrossover).
  bool hierarchical = false;
  topology::GroupSpread spread = topology::GroupSpread::kSpread;
  // Measure the consensus distance every this many rounds (0: never).
  uint64_t consensus_every = 100;
  // A joiner: no start-up barrier, training starts at the trainer's step
  // count (set from the admitted round); SGP starts from these weights.
  bool joined = false;
  std::vector<double> push_sum_weights;
  // Filled into every snapshot this worker serves a joiner (schedule, algo).
  proto::StateHeader snapshot_header;
  // Writes this worker's checkpoints (nullptr: none).
  Checkpointer* checkpointer = nullptr;
  // Restarted from checkpoints with the other initial members: after the
  // start-up barrier all agree to go on from the oldest round among them.
  bool resumed = false;
};

// Decentralized training: every step each member takes an SGD step on its
// own shard, then one gossip round (Crossover-SGD or SGP) mixes its
// parameters with peers'. No member waits on one peer: a segment that misses
// its deadline is skipped and counted (gossipd_segments_skipped_total). For
// SGP the optimizer updates the push-sum numerators and gradients are taken
// at the de-biased parameters z = x / w. At every step boundary the worker
// serves joiners a snapshot (Membership::at_step); for SGP a joiner takes
// half of this member's numerators and weights, so the total push-sum mass
// is unchanged by a join.
class GossipWorker : public Worker {
 public:
  // `members`: the initial list, all of whom must be up at start;
  // `membership` then gives the live view round by round.
  GossipWorker(protocol::Node& node, std::vector<std::string> members, Membership& membership,
               trainer::Trainer& trainer, TrainingLoop& loop, WorkerState& state, MetricsRegistry& metrics,
               GossipWorkerOptions options);

  // Trains; throws Aborted when `stop` fires.
  void run(std::stop_token stop) override;

  // What differs between the protocols inside one step (gossip_worker.cc).
  class Protocol;

 private:
  // Every member is up, resumed members agree on the round, labels are known.
  void start(std::stop_token stop);
  void account(const protocol::RoundStats& stats);
  // --robust: the peers named this round in the log, and what this member
  // saw of each peer in /status and /metrics.
  void report_robustness(const Protocol& protocol, const std::vector<std::string>& named, uint64_t round);
  // Every member calls it after the same rounds (they run in step). A
  // measurement that fails (a member just died) is skipped, never fatal.
  void maybe_measure(uint64_t round, Protocol& protocol);
  // The host finished training (FinishRequested): the members' exact
  // average (final_average.h) in the model, /status's final_average_members.
  void finish(Protocol& protocol);
  // One step: the joiners' and checkpoints' turn, the local step, the exchange.
  trainer::StepResult step(Protocol& p, OuterMomentum& outer, std::span<const uint32_t> idx);
  // This worker's state (x: the parameters, for SGP the numerators), as a
  // checkpoint holds it; changes nothing.
  ReplicaState capture(std::span<const float> x, const protocol::PushSumGossip* push_sum) const;
  // The state a joiner starts from, of which it downloads `share`. For SGP
  // the joiner takes half of this member's push-sum mass (numerators and
  // weights) of the share's segments, so the total is unchanged (the other
  // segments' halves come from their own donors).
  ReplicaState split_off_for_joiner(std::span<float> x, protocol::PushSumGossip* push_sum,
                                    const ShareSpan& share);
  std::unique_ptr<Protocol> make_protocol();

  protocol::Node& node_;
  std::vector<std::string> members_;
  Membership& membership_;
  trainer::Trainer& trainer_;
  TrainingLoop& loop_;
  WorkerState& state_;
  MetricsRegistry& metrics_;
  GossipWorkerOptions options_;
  Counter& skipped_;
  Counter& values_refused_;
  uint64_t rounds_refusing_ = 0;  // rounds whose group collectives refused a value
  Counter& bytes_sent_;
  Counter& bytes_received_;
  Gauge& consensus_;
  Counter& measure_failures_;
  std::stop_token stop_;
  RobustReport robust_report_;                        // --robust
  std::unique_ptr<protocol::Group> consensus_group_;  // over the view it was built for
  uint32_t consensus_view_ = 0;                       // the id of the view consensus_group_ was built for
};

// gossipd run's factory for --algo crossover, sgp and osgp.
std::unique_ptr<Worker> make_gossip_worker(WorkerContext& context, GossipAlgo algo, const GossipFlags& flags);

// The oldest of the members' rounds (a collective over `group`).
uint64_t agree_on_oldest_round(protocol::Group& group, uint64_t mine);

}  // namespace gossipd::daemon
