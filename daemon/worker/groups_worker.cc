#include "daemon/worker/groups_worker.h"

#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/worker/allreduce_worker.h"
#include "daemon/worker/group_fold.h"
#include "topology/compute_groups.h"

namespace gossipd::daemon {
namespace {

// The fold outlives the ring worker that calls it.
class GroupsWorker : public Worker {
 public:
  GroupsWorker(std::unique_ptr<GroupFold> fold, WorkerContext& c, AllreduceWorkerOptions w)
      : fold_(std::move(fold)) {
    w.ring_of = [f = fold_.get()](const topology::View& view) { return f->ring_of(view); };
    w.ring_tag = &GroupFold::ring_tag;
    w.after_update = [f = fold_.get()](protocol::Group& ring, uint64_t round) {
      f->after_update(ring, round);
    };
    ring_ = std::make_unique<AllreduceWorker>(c.node, c.members, c.membership, c.trainer(), c.loop(),
                                              std::move(w));
  }
  void run(std::stop_token stop) override { ring_->run(stop); }

 private:
  std::unique_ptr<GroupFold> fold_;
  std::unique_ptr<AllreduceWorker> ring_;
};

}  // namespace

void check_groups(const GroupsFlags& o, size_t members) {
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
}

std::unique_ptr<Worker> make_groups_worker(WorkerContext& c, const GroupsFlags& o) {
  protocol::GossipOptions g;
  g.seed = c.topology_seed;
  g.segment_deadline = std::chrono::milliseconds(c.options.segment_deadline_ms);
  const MomentumRule momentum{c.options.train.momentum_auto, o.target_momentum, o.momentum_floor};
  auto fold = std::make_unique<GroupFold>(c.node, c.membership,
                                          topology::compute_group_labels(c.members, o.compute_groups),
                                          c.segments, g, momentum, c.trainer(), c.state, c.metrics);
  AllreduceWorkerOptions w = allreduce_worker_options(c);
  return std::make_unique<GroupsWorker>(std::move(fold), c, std::move(w));
}

}  // namespace gossipd::daemon
