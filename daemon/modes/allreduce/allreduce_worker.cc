#include "daemon/modes/allreduce/allreduce_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "daemon/worker/round_floats.h"
#include "daemon/worker/same_layout.h"
#include "protocol/collectives/barrier.h"
#include "protocol/collectives/broadcast_ring.h"
#include "protocol/collectives/collectives.h"
#include "protocol/collectives/compressed.h"
#include "protocol/collectives/ring.h"
#include "protocol/collectives/two_levels.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

AllreduceWorker::AllreduceWorker(protocol::Node& node, std::vector<std::string> members,
                                 Membership& membership, trainer::Trainer& trainer, TrainingLoop& loop,
                                 AllreduceWorkerOptions options)
    : node_(node),
      members_(std::move(members)),
      membership_(membership),
      trainer_(trainer),
      loop_(loop),
      options_(options),
      feedback_(options.codec) {
  if (options_.attack) attack_.emplace(*options_.attack);
}

void AllreduceWorker::run(std::stop_token stop) {
  if (!options_.joined) {
    protocol::CollectiveOptions copts;
    copts.timeout = options_.startup_timeout;
    copts.stop = stop;
    use_ring(std::make_unique<protocol::Group>(node_, protocol::tags::first(protocol::tags::User::kAllreduce),
                                               members_, copts));
    protocol::Barrier(*group_).run();  // every member is up before the first step
    agree_on_layout(*group_, trainer_);
    group_->options().timeout = options_.timeout;
    if (options_.resumed) {
      const uint64_t mine = trainer_.step_count();
      sync_from(0);
      spdlog::info("node '{}': resuming at step {} from '{}' (own checkpoint: step {})", node_.id(),
                   trainer_.step_count(), group_->member(0), mine);
    }
    const topology::View view = membership_.view_at(trainer_.step_count() + 1);
    view_id_ = view.id();
    if (options_.ring_of) use_ring(make_ring(view, group_->options()));  // every replica starts the same
    watch_ring(trainer_.step_count() + 1, stop);
  }
  membership_.arm();
  try {
    loop_.run(options_.steps_per_epoch, stop, [&](std::span<const uint32_t> idx) { return step(idx, stop); });
  } catch (const StoppedBetweenSteps&) {
    if (options_.checkpointer)
      options_.checkpointer->write_now(capture());  // a stop keeps the last step done
    throw;
  }
  if (options_.checkpointer) options_.checkpointer->write_now(capture());
}

ReplicaState AllreduceWorker::capture() const {
  return replica_state(options_.snapshot_header, trainer_.step_count(), options_.steps_per_epoch,
                       trainer_.model().params(), trainer_.optimizer().state());
}

void AllreduceWorker::report_bytes() {
  if (!options_.state) return;
  const uint64_t sent = node_.payload_bytes_sent();
  options_.state->update([&](proto::Status& s) { s.set_bytes_sent(sent); });
}

trainer::StepResult AllreduceWorker::step(std::span<const uint32_t> idx, std::stop_token stop) {
  if (options_.local_steps > 1) return local_step(idx, stop);
  for (;;) {
    membership_.at_step(trainer_.step_count(), [&](const ShareSpan&) { return capture(); });
    if (options_.checkpointer)
      options_.checkpointer->at_step(trainer_.step_count(), [&] { return capture(); });
    const uint64_t round = trainer_.step_count() + 1;
    trainer::StepResult r;
    try {
      const topology::View view = membership_.view_at(round);
      if (must_reform(view)) reform(view, round, stop);
      watch_->at_round(round);
      // Gradients at the current parameters: after a re-sync they are recomputed.
      r = trainer_.compute_gradients(idx);
      if (attack_ && !options_.robust) {  // --inject-byzantine: what this member adds to the sum
        auto grads = trainer_.model().grads();
        const auto sent = attack_->apply(0, round, grads);
        std::copy(sent.begin(), sent.end(), grads.begin());
      }
      if (options_.update) {
        TrainingLoop::CommTimer comm(loop_);
        options_.update(*group_, ring_collectives(), round);
        return r;
      }
      average_gradients(round);
    } catch (const protocol::Aborted&) {
      if (!stop.stop_requested()) {  // the ring watch: the view for this step left the ring
        await_view_change(std::current_exception(), round, stop);
        continue;
      }
      // Stopped before this step touched the parameters or the optimizer's
      // state (an update of its own may have: its stop is passed on as it is).
      if (options_.update) throw;
      throw StoppedBetweenSteps(node_.id(), "the step's allreduce");
    } catch (const protocol::TransportError&) {  // PeerTimeout, or a peer evicted under our feet
      await_view_change(std::current_exception(), round, stop);
      continue;
    }
    if (!skipped_non_finite(round)) trainer_.apply_gradients(trainer_.current_lr());
    return r;
  }
}

bool AllreduceWorker::skipped_non_finite(uint64_t round) {
  const std::span<const float> grads = trainer_.model().grads();
  if (protocol::all_finite(std::as_bytes(grads))) return false;
  trainer_.count_step();
  count_non_finite(round, "summed gradient", "the step");
  return true;
}

void AllreduceWorker::count_non_finite(uint64_t round, const char* sum, const char* skipped) {
  if (options_.non_finite_steps) options_.non_finite_steps->add();
  if (non_finite_skipped_++ % 100 == 0) {
    spdlog::warn(
        "node '{}': step {}: the members' {} holds NaN or an infinity; every member skips {} ({} so far; a "
        "sum does not say which member sent it)",
        node_.id(), round, sum, skipped, non_finite_skipped_);
  }
}

void AllreduceWorker::average_gradients(uint64_t round) {
  auto grads = trainer_.model().grads();
  if (options_.robust) {
    options_.robust->run(*group_, grads, attack_ ? &*attack_ : nullptr, loop_, round);
    return report_bytes();
  }
  sum(grads);
  report_bytes();
  const float scale = 1.0f / static_cast<float>(group_->size());
  for (float& g : grads) g *= scale;
}

void AllreduceWorker::sum(std::span<float> data) {
  TrainingLoop::CommTimer comm(loop_);
  if (options_.codec.lossless()) {
    return ring_collectives().allreduce(data);
  }
  const protocol::ErrorFeedback before = feedback_;
  try {
    protocol::CompressedAllreduce(*group_, data, feedback_).run();
  } catch (...) {
    feedback_ = before;  // nothing of this call reached the replicas
    throw;
  }
}

void AllreduceWorker::use_ring(std::unique_ptr<protocol::Group> ring) {
  ring_sum_.reset();  // its levels are the old ring's
  group_ = std::move(ring);
}

protocol::HostAwareCollectives& AllreduceWorker::ring_collectives() {
  if (!ring_sum_) {
    ring_sum_ = std::make_unique<protocol::HostAwareCollectives>(
        *group_, std::nullopt, [id = node_.id()](const std::string& levels) {
          spdlog::info("node '{}': allreduce in two levels, {}", id, levels);
        });
  }
  return *ring_sum_;
}

void AllreduceWorker::await_view_change(std::exception_ptr failure, uint64_t round, std::stop_token stop) {
  const auto deadline = Clock::now() + options_.failure_timeout + options_.timeout;
  if (membership_.wait_until([&] { return ring_changed(membership_.view_at(round)); }, deadline, stop))
    return;
  if (stop.stop_requested()) throw protocol::Aborted(node_.id(), "re-forming the ring");
  std::rethrow_exception(failure);  // nobody left: a real fault
}

void AllreduceWorker::sync_from(size_t root) {
  if (options_.robust) options_.robust->restart();
  protocol::BroadcastRing(*group_, trainer_.model().params(), root).run();
  protocol::BroadcastRing(*group_, trainer_.optimizer().state(), root).run();
  std::array<float, 2> count = round_to_floats(trainer_.step_count());
  protocol::BroadcastRing(*group_, count, root).run();
  trainer_.set_step_count(round_from_floats(count.data()));
  // The learning rate follows the epoch progress, which the training loop set
  // from this member's own step count: a member that was a step ahead would
  // apply the next step with another rate and the replicas would part.
  trainer_.set_epoch_progress(static_cast<double>(trainer_.step_count()) /
                              static_cast<double>(options_.steps_per_epoch));
}

void AllreduceWorker::reform(const topology::View& view, uint64_t round, std::stop_token stop) {
  protocol::CollectiveOptions copts;
  // Members reach the re-formation up to a timeout apart (one may still be
  // waiting on the dead peer), so the barrier waits that much longer.
  copts.timeout = options_.timeout + options_.failure_timeout;
  const size_t old_size = group_ ? group_->size() : 0;
  // Members leaving one after another (a cluster whose hosts all stop)
  // change the view while the ring re-forms: the barrier is then abandoned
  // at once for the newer view, not waited out.
  std::stop_source newer;
  const std::stop_callback forward(stop, [&newer] { newer.request_stop(); });
  copts.stop = newer.get_token();
  use_ring(make_ring(view, copts));
  view_id_ = view.id();
  barrier_unless_view_changes(round, newer, stop);
  group_->options().timeout = options_.timeout;
  watch_ring(round, stop);
  // Every replica takes the state of the first member that was already
  // training (never a joiner's snapshot, which is older).
  size_t root = 0;
  while (root + 1 < group_->size() && membership_.since_round(group_->member(root)) >= round) ++root;
  sync_from(root);
  // Losing a member is worth a warning; a joiner entering is routine.
  spdlog::log(group_->size() < old_size ? spdlog::level::warn : spdlog::level::info,
              "node '{}': ring re-formed over {} members (view {:08x}) from '{}', at step {}", node_.id(),
              group_->size(), view.id(), group_->member(root), trainer_.step_count());
}

void AllreduceWorker::barrier_unless_view_changes(uint64_t round, std::stop_source& newer,
                                                  std::stop_token stop) {
  std::jthread watch([&](std::stop_token done) {
    const auto ever = Clock::now() + std::chrono::hours(24);  // `done` ends it
    if (membership_.wait_until([&] { return ring_changed(membership_.view_at(round)); }, ever, done))
      newer.request_stop();
  });
  try {
    protocol::Barrier(*group_).run();
  } catch (const protocol::Aborted&) {
    if (stop.stop_requested()) throw;
    throw protocol::TransportError(node_.id(), "", "the view changed while the ring re-formed");
  }
}

std::vector<std::string> AllreduceWorker::ring_members(const topology::View& view) const {
  return options_.ring_of ? options_.ring_of(view) : view.members();
}

void AllreduceWorker::watch_ring(uint64_t round, std::stop_token stop) {
  watch_.reset();  // the old ring's
  const std::vector<std::string> ring = group_->members();
  watch_ = std::make_unique<ViewWatch>(
      membership_,
      [this, ring, view_id = view_id_](uint64_t r) {
        const topology::View v = membership_.view_at(r);
        return options_.ring_of ? ring_members(v) != ring : v.id() != view_id;
      },
      round, stop);
  group_->options().stop = watch_->token();
  ring_sum_.reset();  // made anew at its first use, with the watch's stop
}

bool AllreduceWorker::ring_changed(const topology::View& view) const {
  if (!options_.ring_of) return view.id() != view_id_;
  return !group_ || ring_members(view) != group_->members();
}

std::unique_ptr<protocol::Group> AllreduceWorker::make_ring(const topology::View& view,
                                                            protocol::CollectiveOptions copts) {
  std::vector<std::string> members = ring_members(view);
  // A tag per view (or per ring): the old ring's messages can never be taken for the new one's.
  const uint32_t tag = options_.ring_tag
                           ? options_.ring_tag(members)
                           : protocol::tags::range(protocol::tags::User::kReformedRing).at(view.id());
  return std::make_unique<protocol::Group>(node_, tag, std::move(members), copts);
}

AllreduceWorkerOptions allreduce_worker_options(const WorkerContext& c) {
  AllreduceWorkerOptions w;
  w.steps_per_epoch = c.steps_per_epoch;
  w.timeout = std::chrono::milliseconds(c.options.timeout_ms);
  w.startup_timeout = std::chrono::milliseconds(c.options.startup_timeout_ms);
  w.failure_timeout = std::chrono::milliseconds(eviction_bound_ms(c.options));
  w.joined = c.joined;
  w.snapshot_header = c.snapshot_header;
  w.checkpointer = c.checkpointer;
  w.resumed = c.resumed;
  w.state = &c.state;
  w.non_finite_steps = &c.metrics.counter(
      "gossipd_steps_skipped_non_finite_total",
      "AllReduce-SGD steps (--local-steps: averages) every member skipped: the sum held NaN or an infinity");
  return w;
}

std::unique_ptr<Worker> make_allreduce_worker(WorkerContext& c, const AllreduceFlags& flags) {
  AllreduceWorkerOptions w = allreduce_worker_options(c);
  w.local_steps = flags.local_steps;
  w.outer_momentum = flags.outer_momentum;
  w.codec = flags.codec;
  w.attack = flags.attack;
  if (flags.defence) {
    RobustReport report(c.node.id(), "gradient blocks", c.metrics, c.state);
    report.evict_through(c.membership, flags.evict_quorum);
    w.robust = std::make_shared<RobustAverage>(
        *flags.defence, std::move(report),
        c.trainer().hosted() ? 0.0f : c.trainer().optimizer().options().momentum);
  }
  w.last_step = static_cast<uint64_t>(c.options.train.epochs) * c.steps_per_epoch;
  return std::make_unique<AllreduceWorker>(c.node, c.members, c.membership, c.trainer(), c.loop(), w);
}

}  // namespace gossipd::daemon
