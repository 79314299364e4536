#include "daemon/allreduce_worker.h"

#include "protocol/broadcast_ring.h"
#include "protocol/group.h"
#include "protocol/ring_collectives.h"

namespace gossipd::daemon {
namespace {

constexpr uint32_t kAllreduceTag = 1;

}  // namespace

AllreduceWorker::AllreduceWorker(protocol::Node& node, std::vector<std::string> members,
                                 trainer::Trainer& trainer, TrainingLoop& loop, AllreduceWorkerOptions options)
    : node_(node), members_(std::move(members)), trainer_(trainer), loop_(loop), options_(options) {}

void AllreduceWorker::run(std::stop_token stop) {
  protocol::CollectiveOptions copts;
  copts.timeout = options_.startup_timeout;
  copts.stop = stop;
  protocol::Group group(node_, kAllreduceTag, members_, copts);
  const float scale = 1.0f / static_cast<float>(group.size());
  protocol::Barrier(group).run();  // every member is up before the first step
  group.options().timeout = options_.timeout;

  const size_t steps = TrainingLoop::steps_per_epoch(options_.train_size, group.size(), trainer_.options().batch);
  loop_.run(steps, stop, [&](std::span<const uint32_t> idx) {
    trainer::StepResult r = trainer_.compute_gradients(idx);
    auto grads = trainer_.model().grads();
    protocol::AllreduceRing(group, grads).run();
    for (float& g : grads) g *= scale;
    trainer_.apply_gradients(trainer_.current_lr());
    return r;
  });
}

}  // namespace gossipd::daemon
