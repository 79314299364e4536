#include "daemon/allreduce_worker.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "protocol/broadcast_ring.h"
#include "protocol/errors.h"
#include "protocol/ring_collectives.h"
#include "protocol/tags.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

AllreduceWorker::AllreduceWorker(protocol::Node& node, std::vector<std::string> members, Membership& membership,
                                 trainer::Trainer& trainer, TrainingLoop& loop, AllreduceWorkerOptions options)
    : node_(node),
      members_(std::move(members)),
      membership_(membership),
      trainer_(trainer),
      loop_(loop),
      options_(options) {}

void AllreduceWorker::run(std::stop_token stop) {
  protocol::CollectiveOptions copts;
  copts.timeout = options_.startup_timeout;
  copts.stop = stop;
  group_ = std::make_unique<protocol::Group>(node_, protocol::tags::kAllreduce, members_, copts);
  protocol::Barrier(*group_).run();  // every member is up before the first step
  group_->options().timeout = options_.timeout;
  membership_.arm();
  const size_t steps = TrainingLoop::steps_per_epoch(options_.train_size, members_.size(), trainer_.options().batch);
  loop_.run(steps, stop, [&](std::span<const uint32_t> idx) { return step(idx, stop); });
}

trainer::StepResult AllreduceWorker::step(std::span<const uint32_t> idx, std::stop_token stop) {
  for (;;) {
    // Gradients at the current parameters: after a re-sync they are recomputed.
    trainer::StepResult r = trainer_.compute_gradients(idx);
    auto grads = trainer_.model().grads();
    try {
      protocol::AllreduceRing(*group_, grads).run();
    } catch (const protocol::Aborted&) {
      throw;
    } catch (const std::exception&) {  // PeerTimeout, or a peer evicted under our feet
      reform(std::current_exception(), stop);
      continue;
    }
    const float scale = 1.0f / static_cast<float>(group_->size());
    for (float& g : grads) g *= scale;
    trainer_.apply_gradients(trainer_.current_lr());
    return r;
  }
}

void AllreduceWorker::reform(std::exception_ptr failure, std::stop_token stop) {
  const auto deadline = Clock::now() + options_.failure_timeout + options_.timeout;
  while (membership_.view().epoch() == view_epoch_) {
    if (stop.stop_requested()) throw protocol::Aborted(node_.id(), "re-forming the ring");
    if (Clock::now() >= deadline) std::rethrow_exception(failure);  // nobody left: a real fault
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const topology::View view = membership_.view();
  protocol::CollectiveOptions copts;
  copts.timeout = options_.timeout;
  copts.stop = stop;
  // A tag per view: the old ring's messages can never be taken for the new one's.
  group_ = std::make_unique<protocol::Group>(node_, protocol::tags::kReformedBase + protocol::tags::epoch_offset(view.epoch()), view.members(), copts);
  view_epoch_ = view.epoch();
  protocol::Barrier(*group_).run();
  // Every replica takes rank 0's parameters, optimizer state and step count.
  protocol::BroadcastRing(*group_, trainer_.model().params(), 0).run();
  protocol::BroadcastRing(*group_, trainer_.optimizer().state(), 0).run();
  const uint64_t steps = trainer_.step_count();
  std::vector<float> count{static_cast<float>(steps & 0xffffff), static_cast<float>(steps >> 24)};
  protocol::BroadcastRing(*group_, count, 0).run();
  trainer_.set_step_count(static_cast<uint64_t>(count[0]) | (static_cast<uint64_t>(count[1]) << 24));
  spdlog::warn("node '{}': ring re-formed over {} members (view {}), resuming at step {}", node_.id(),
               group_->size(), view.epoch(), trainer_.step_count());
}

}  // namespace gossipd::daemon
