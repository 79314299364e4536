#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/membership.h"
#include "daemon/modes/allreduce/robust_average.h"
#include "daemon/observe/metrics.h"
#include "daemon/worker/outer_momentum.h"
#include "daemon/worker/training_loop.h"
#include "daemon/worker/view_watch.h"
#include "daemon/worker/worker.h"
#include "protocol/collectives/error_feedback.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/two_levels.h"
#include "protocol/robust/attack.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

struct AllreduceWorkerOptions {
  size_t steps_per_epoch = 1;                        // the same on every member
  std::chrono::milliseconds timeout{10000};          // a silent peer fails the step
  std::chrono::milliseconds startup_timeout{60000};  // waiting for every member at start
  std::chrono::milliseconds failure_timeout{
      3000};            // how long membership may take to evict a dead member (eviction_bound_ms)
  bool joined = false;  // a joiner: no start-up barrier, enters by re-forming
  proto::StateHeader snapshot_header;    // filled into every snapshot served to a joiner
  Checkpointer* checkpointer = nullptr;  // writes this worker's checkpoints (nullptr: none)
  bool resumed = false;  // restarted from checkpoints: after the barrier all take the first member's state
  // Compute groups: the ring of a view is this member's part of it, on the
  // tag ring_tag gives those members (the default: the whole view, a tag per
  // view). The ring re-forms when its members change.
  std::function<std::vector<std::string>(const topology::View&)> ring_of;
  std::function<uint32_t(const std::vector<std::string>&)> ring_tag;
  // Compute groups: instead of the allreduce and the update, called with the
  // ring, its collectives (in two levels where its members share hosts) and
  // the step's round once the gradients are computed, inside the step's
  // fault handling (a failure re-forms the ring like the allreduce's).
  std::function<void(protocol::Group&, protocol::HostAwareCollectives&, uint64_t round)> update;
  // Where the bytes it sent are reported (/status, the epoch records): the
  // collectives' payload (nullptr: nowhere).
  WorkerState* state = nullptr;
  // --local-steps H: local SGD, the parameters averaged every H-th step and
  // at last_step (the run's last), no gradients exchanged (local_sgd.cc).
  uint32_t local_steps = 1;
  uint64_t last_step = 0;
  float outer_momentum = 0.0f;  // --outer-momentum: on each average (outer_momentum.h)
  // --compress: the collectives in a codec (protocol::CompressedAllreduce),
  // with error feedback; local SGD then averages each window's change.
  protocol::CodecSpec codec{};
  // --inject-byzantine: this member contributes its attack on its
  // gradients (robust/attack.h) to every step's sum.
  std::optional<protocol::AttackSpec> attack;
  // --robust clip: the gradients' robust average (robust_average.h) in
  // place of the sum (nullptr: the sum).
  std::shared_ptr<RobustAverage> robust;
  // Counts the steps every member skipped because the summed gradient held
  // NaN or an infinity (nullptr: not counted).
  Counter* non_finite_steps = nullptr;
};

// AllReduce-SGD's own flags, as gossipd run parses them.
struct AllreduceFlags {
  uint32_t local_steps = 1;
  float outer_momentum = 0.0f;
  protocol::CodecSpec codec{};
  std::optional<protocol::AttackSpec> attack;
  std::optional<protocol::ClipSpec> defence;  // --robust
  size_t evict_quorum = 0;                    // --evict-byzantine: the members named are accused (0: not)
};

// AllReduce-SGD: every step, each member computes gradients on its own shard,
// the ring allreduce sums them, and every member applies the same average, so
// replicas stay bit-identical. The ring follows the view: when the view for
// the next step differs from the ring's (a joiner enters at its announced
// step, a member was evicted), every member re-forms the ring over the new
// view and re-synchronises from its first member that was already in the
// view (parameters, optimizer state, step). When a member dies the step
// fails; the worker waits for membership to evict it, re-forms and retries
// the step. A failure with no view change (no one evicted within the failure
// timeout) is reported as the error it was.
class AllreduceWorker : public Worker {
 public:
  AllreduceWorker(protocol::Node& node, std::vector<std::string> members, Membership& membership,
                  trainer::Trainer& trainer, TrainingLoop& loop, AllreduceWorkerOptions options);

  // Trains; throws PeerTimeout (no view change), or Aborted when `stop` fires.
  void run(std::stop_token stop) override;

 private:
  trainer::StepResult step(std::span<const uint32_t> idx, std::stop_token stop);
  trainer::StepResult local_step(std::span<const uint32_t> idx, std::stop_token stop);
  // The sum over the ring of `data`, in the codec when there is one; a
  // failure leaves the residual as it was (data is the caller's to restore).
  // The ring's sum of the gradients divided by the members, or with
  // --robust their robust average, for step `round`.
  void average_gradients(uint64_t round);
  // A summed gradient holding NaN or an infinity: every member has the same
  // sum, so every one skips the step (counted, not applied) and the
  // replicas stay equal. Returns whether it did.
  bool skipped_non_finite(uint64_t round);
  // A sum that held NaN or an infinity, counted and logged (every 100th).
  void count_non_finite(uint64_t round, const char* sum, const char* skipped);
  void sum(std::span<float> data);
  // The ring the worker uses from now on. Its sums take two levels where
  // its members share hosts evenly (protocol::HostAwareCollectives, laid
  // out at the ring's first sum, with its final options: the subgroups
  // copy them), else one flat ring.
  void use_ring(std::unique_ptr<protocol::Group> ring);
  protocol::HostAwareCollectives& ring_collectives();  // group_'s, made at the first use
  // Local SGD: the parameters' average over the ring, in place.
  void average_parameters(std::span<float> params);
  // Local SGD: a window starts at `params` (the first, or after a resync).
  void restart_window(std::span<const float> params);
  void report_bytes();  // the collectives' bytes so far, to /status
  void await_view_change(std::exception_ptr failure, uint64_t round, std::stop_token stop);
  void reform(const topology::View& view, uint64_t round, std::stop_token stop);
  // The re-formed ring's barrier; a view change meanwhile (seen by a watch
  // that stops `newer`, the barrier's token) throws TransportError.
  void barrier_unless_view_changes(uint64_t round, std::stop_source& newer, std::stop_token stop);
  // The ring's members for `view`, and whether they differ from the ring's.
  std::vector<std::string> ring_members(const topology::View& view) const;
  bool ring_changed(const topology::View& view) const;
  // The ring formed (over view_id_), from step `round` on: its collectives
  // stop when the view for the step in flight leaves it (ViewWatch).
  void watch_ring(uint64_t round, std::stop_token stop);
  // Whether the step's loop must re-form the ring before `view`'s step.
  bool must_reform(const topology::View& view) const {
    return !group_ || ring_changed(view) || (watch_ && watch_->fired());
  }
  std::unique_ptr<protocol::Group> make_ring(const topology::View& view, protocol::CollectiveOptions copts);
  // Every member takes the parameters, optimizer state and step of `root`.
  void sync_from(size_t root);
  // This worker's state, for a joiner or a checkpoint (replicas are identical).
  ReplicaState capture() const;

  protocol::Node& node_;
  std::vector<std::string> members_;
  Membership& membership_;
  trainer::Trainer& trainer_;
  TrainingLoop& loop_;
  AllreduceWorkerOptions options_;
  std::unique_ptr<protocol::Group> group_;
  // group_'s collectives; they say once if they take two levels.
  std::unique_ptr<protocol::HostAwareCollectives> ring_sum_;
  uint32_t view_id_ = 0;                           // the id of the view group_ was formed over
  std::unique_ptr<ViewWatch> watch_;               // group_'s
  std::unique_ptr<OuterMomentum> outer_;           // local SGD's outer step (--outer-momentum)
  protocol::ErrorFeedback feedback_;               // --compress: what this member's encodings rounded off
  std::vector<float> window_start_;                // --compress with local SGD: the replicas' last average
  std::optional<protocol::SegmentAttack> attack_;  // --inject-byzantine
  uint64_t non_finite_skipped_ = 0;
};

// The options gossipd run gives an AllReduce-SGD worker.
AllreduceWorkerOptions allreduce_worker_options(const WorkerContext& context);
// gossipd run's factory for --algo allreduce (--local-steps H).
std::unique_ptr<Worker> make_allreduce_worker(WorkerContext& context, const AllreduceFlags& flags = {});

}  // namespace gossipd::daemon
