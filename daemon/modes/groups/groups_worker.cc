#include "daemon/modes/groups/groups_worker.h"

#include <algorithm>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/config/worker_values.h"
#include "daemon/modes/allreduce/allreduce_worker.h"
#include "daemon/modes/groups/compute_groups.h"
#include "daemon/modes/groups/groups_report.h"
#include "daemon/modes/groups/momentum_rule.h"
#include "daemon/modes/groups/overlapped_exchange.h"
#include "daemon/modes/groups/shard_client.h"
#include "daemon/modes/groups/shard_service.h"
#include "daemon/modes/groups/shard_store.h"
#include "daemon/worker/robust_report.h"
#include "protocol/collectives/collectives.h"
#include "protocol/collectives/compressed.h"
#include "protocol/wire/tags.h"
#include "topology/hierarchy.h"

namespace gossipd::daemon {
namespace {

// A tag per ring (its members), inside the compute groups' range after the
// shards' two (daemon/modes/groups/shard_wire.h).
uint32_t ring_tag(protocol::tags::Range range, const std::vector<std::string>& members) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids, each ended by a 0
  for (const auto& id : members) {
    for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h *= 1099511628211ull;
  }
  return range.at(2 + h % (range.count - 2));
}

AliveMembers alive_members(Membership& membership) {
  return [&membership] {
    std::vector<std::string> alive = membership.view().members();
    std::sort(alive.begin(), alive.end());
    return alive;
  };
}

// --momentum auto, or no --momentum: measured, an explicit 0.9 (the other
// modes' default) diverges from g = 4 on (tests/bench/README.md).
bool momentum_auto(const RunOptions& o) { return o.train.momentum_auto || !o.train.momentum_given; }

// The groups whose asynchrony the staleness amounts to: g, or 2g with
// --group-overlap (each group's gradient a step older: about 2g - 1 updates
// stale instead of g - 1, the implicit momentum 1 - 1/(2g)).
size_t staleness_groups(bool overlap, size_t groups) { return overlap ? 2 * groups : groups; }

trainer::OptimizerOptions owners_optimizer(const WorkerContext& c, const GroupsFlags& o, size_t groups) {
  trainer::OptimizerOptions opt = c.trainer().optimizer().options();
  if (momentum_auto(c.options))
    opt.momentum = auto_momentum(o.target_momentum, o.momentum_floor, staleness_groups(o.overlap, groups));
  return opt;
}

class GroupsWorker : public Worker {
 public:
  GroupsWorker(WorkerContext& c, const GroupsFlags& o, std::map<std::string, std::string> labels,
               protocol::tags::Range tags)
      : node_(c.node),
        membership_(c.membership),
        trainer_(c.trainer()),
        labels_(std::move(labels)),
        groups_(o.compute_groups),
        store_(ShardLayout(trainer_.model().params().size(), c.members), owners_optimizer(c, o, groups_)),
        codec_(checked_codec(o.compress)),
        service_(c.node, alive_members(c.membership), c.membership.changes(), store_, labels_,
                 std::chrono::milliseconds(c.options.timeout_ms), shard_tags(tags), codec_),
        client_(c.node, alive_members(c.membership), store_, service_, labels_.at(c.node.id()),
                attacking(client_options(c, shard_tags(tags), codec_), c, o)),
        scattered_(codec_),
        gathered_(codec_),
        rule_{momentum_auto(c.options), o.target_momentum, o.momentum_floor},
        last_step_(static_cast<uint64_t>(c.options.train.epochs) * c.steps_per_epoch),
        report_(c.node, c.state, c.metrics, store_, client_,
                GroupsReportInfo{groups_, labels_.at(c.node.id()), momentum_auto(c.options)}) {
    if (const auto defence = checked_defence(o.robust)) {
      store_.defend(*defence, c.node.id());
      robust_.emplace(c.node.id(), "shard pushes", c.metrics, c.state);
    }
    AllreduceWorkerOptions w = allreduce_worker_options(c);
    // A member may wait on a dead owner until membership moves its shard,
    // then exchange again with the shard's new owner: its ring waits that
    // long before it calls the member dead (waiting only the first, a ring
    // mate that finished its own exchange sooner timed out on one that met
    // the dead owner).
    w.timeout = client_options(c, shard_tags(tags)).give_up + std::chrono::milliseconds(c.options.timeout_ms);
    w.ring_of = [this](const topology::View& view) {
      const topology::Groups groups(view, labels_);
      return groups.members(*groups.group_of(node_.id()));
    };
    w.ring_tag = [tags](const std::vector<std::string>& members) { return ring_tag(tags, members); };
    w.update = [this](protocol::Group& ring, protocol::HostAwareCollectives& levels, uint64_t round) {
      step(ring, levels, round);
    };
    ring_ =
        std::make_unique<AllreduceWorker>(c.node, c.members, c.membership, trainer_, c.loop(), std::move(w));
    if (o.overlap) {
      overlapped_ = std::make_unique<OverlappedExchange>(client_, trainer_.model().params().size());
      held_versions_ = client_.versions();
    }
  }
  void run(std::stop_token stop) override {
    ring_->run(stop);
    overlapped_.reset();  // a stop may leave one in flight
    service_.finish(stop);
    report_.at_end();
  }

 private:
  static ShardClientOptions client_options(const WorkerContext& c, ShardTags tags,
                                           protocol::CodecSpec codec = {}) {
    ShardClientOptions o;
    o.codec = codec;
    o.tags = tags;
    o.give_up = std::chrono::milliseconds(c.options.timeout_ms + eviction_bound_ms(c.options));
    o.send_timeout = std::chrono::milliseconds(c.options.timeout_ms);
    return o;
  }
  // --inject-byzantine: the client's pushes attacked.
  static ShardClientOptions attacking(ShardClientOptions o, const WorkerContext& c,
                                      const GroupsFlags& flags) {
    o.attack = checked_attack(flags.robust, c.topology_seed ^ std::hash<std::string>{}(c.node.id()));
    return o;
  }
  void step(protocol::Group& ring, protocol::HostAwareCollectives& levels, uint64_t round);
  // The fresh values of the exchange in flight (--group-overlap) into the
  // parameters, allgathered over the ring.
  void take_overlapped(protocol::Group& ring, protocol::HostAwareCollectives& levels,
                       const std::vector<size_t>& counts);
  // The ring's collectives, in the codec when there is one, else in two
  // levels where the ring's members share hosts.
  void reduce_scatter(protocol::Group& ring, protocol::HostAwareCollectives& levels, std::span<float> grads,
                      const std::vector<size_t>& counts);
  void allgather(protocol::Group& ring, protocol::HostAwareCollectives& levels, std::span<float> params,
                 const std::vector<size_t>& counts);

  protocol::Node& node_;
  Membership& membership_;
  trainer::Trainer& trainer_;
  std::map<std::string, std::string> labels_;
  size_t groups_;
  ShardStore store_;
  protocol::CodecSpec codec_;
  ShardService service_;
  ShardClient client_;
  protocol::ErrorFeedback scattered_, gathered_;  // the ring's rounding (--compress)
  MomentumRule rule_;
  uint64_t last_step_;
  GroupsReport report_;
  std::optional<RobustReport> robust_;  // --robust clip: what this owner saw of each pusher
  std::unique_ptr<AllreduceWorker> ring_;
  std::unique_ptr<OverlappedExchange> overlapped_;  // --group-overlap
  std::vector<uint64_t> held_versions_;             // --group-overlap: the versions the parameters hold
};

// The group's gradient reduce-scattered over its ring, each member's slice
// of shards pushed and pulled, the fresh values allgathered.
void GroupsWorker::step(protocol::Group& ring, protocol::HostAwareCollectives& levels, uint64_t round) {
  const ShardLayout& layout = store_.layout();
  auto grads = trainer_.model().grads();
  auto params = trainer_.model().params();
  const std::vector<size_t> counts = layout.slice_counts(ring.size());
  if (ring.size() > 1) reduce_scatter(ring, levels, grads, counts);
  const auto slice = layout.slice(ring.rank(), ring.size());
  if (slice.first < slice.second) {
    const float scale = 1.0f / static_cast<float>(ring.size());
    const size_t end = layout.range(slice.second - 1).end;
    for (size_t i = layout.range(slice.first).begin; i < end; ++i) grads[i] *= scale;
  }
  // The versions this step's gradient was computed on: those the parameters
  // hold (an overlapped pull still in flight has moved the client's on).
  std::vector<uint64_t> computed_on = overlapped_ ? held_versions_ : client_.versions();
  if (overlapped_ && overlapped_->pending()) take_overlapped(ring, levels, counts);
  if (overlapped_ && round < last_step_) {
    const size_t begin = slice.first < slice.second ? layout.range(slice.first).begin : 0;
    const size_t end = slice.first < slice.second ? layout.range(slice.second - 1).end : 0;
    overlapped_->start(round, trainer_.current_lr(), slice, {begin, end}, grads, params,
                       std::move(computed_on), ring.options().stop);
  } else {
    client_.exchange(round, trainer_.current_lr(), slice, grads, params, ring.options().stop, computed_on);
    if (ring.size() > 1) {
      allgather(ring, levels, params, counts);
      client_.share_versions(ring);
    }
  }
  trainer_.count_step();
  const size_t groups = topology::Groups(membership_.view(), labels_).count();
  if (rule_.automatic)
    store_.set_momentum(
        auto_momentum(rule_.target, rule_.floor, staleness_groups(overlapped_ != nullptr, groups)));
  report_.at_step(ring, groups);
  if (robust_) {
    const std::vector<std::string> named = store_.end_round();  // before the record, which marks them
    robust_->publish(store_.pushers(), named, round);
  }
}

void GroupsWorker::take_overlapped(protocol::Group& ring, protocol::HostAwareCollectives& levels,
                                   const std::vector<size_t>& counts) {
  auto params = trainer_.model().params();
  overlapped_->finish(params);
  if (ring.size() > 1) {
    allgather(ring, levels, params, counts);
    client_.share_versions(ring);
  }
  held_versions_ = client_.versions();
}

void GroupsWorker::reduce_scatter(protocol::Group& ring, protocol::HostAwareCollectives& levels,
                                  std::span<float> grads, const std::vector<size_t>& counts) {
  if (codec_.lossless()) return levels.reduce_scatter(grads, counts);
  protocol::CompressedRing(protocol::CompressedRing::Kind::kReduceScatter, ring, grads, scattered_, counts)
      .run();
}

void GroupsWorker::allgather(protocol::Group& ring, protocol::HostAwareCollectives& levels,
                             std::span<float> params, const std::vector<size_t>& counts) {
  if (codec_.lossless()) return levels.allgather(params, counts);
  protocol::CompressedRing(protocol::CompressedRing::Kind::kAllgather, ring, params, gathered_, counts).run();
}

}  // namespace

void check_groups(const GroupsFlags& o, size_t members, const RunOptions& options) {
  if (o.compute_groups == 0) {
    throw UsageError("--algo groups needs --compute-groups g (g divides the " + std::to_string(members) +
                     " workers: 1 is AllReduce-SGD, " + std::to_string(members) + " one group per worker)");
  }
  try {
    topology::compute_group_labels(std::vector<std::string>(members, ""), o.compute_groups);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--compute-groups " + std::to_string(o.compute_groups) + ": " + e.what() +
                     "; choose a divisor of " + std::to_string(members));
  }
  if (options.train.optimizer != "sgd") {
    throw UsageError(
        "--algo groups updates each parameter shard at its owner, element by element: --optimizer " +
        options.train.optimizer + " needs whole layers; use --optimizer sgd");
  }
}

std::unique_ptr<Worker> make_groups_worker(WorkerContext& c, const GroupsFlags& o,
                                           protocol::tags::Range tags) {
  try {
    const auto labels = topology::compute_group_labels(c.members, o.compute_groups, comma_list(o.order));
    return std::make_unique<GroupsWorker>(c, o, labels, tags);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--compute-group-order: " + std::string(e.what()));
  }
}

}  // namespace gossipd::daemon
