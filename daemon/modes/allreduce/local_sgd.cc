// AllReduce-SGD with --local-steps H: local SGD (Stich 2019; Lin et al.,
// "Don't use large mini-batches, use local SGD", 2020). Every member takes
// its own steps on its own gradients; every H-th step, and the last, the
// ring averages the parameters, so the replicas are identical again. Each
// member keeps its own momentum.
#include <algorithm>
#include <vector>

#include "daemon/modes/allreduce/allreduce_worker.h"
#include "protocol/collectives.h"
#include "protocol/errors.h"

namespace gossipd::daemon {

trainer::StepResult AllreduceWorker::local_step(std::span<const uint32_t> idx, std::stop_token stop) {
  const uint64_t round = trainer_.step_count() + 1;
  const bool average = round % options_.local_steps == 0 || round == options_.last_step;
  membership_.at_step(trainer_.step_count(), [&](const ShareSpan&) { return capture(); });
  if (options_.checkpointer) options_.checkpointer->at_step(trainer_.step_count(), [&] { return capture(); });
  const std::span<float> params = trainer_.model().params();
  if (!outer_) {  // the first window starts where training does
    outer_ = std::make_unique<OuterMomentum>(options_.outer_momentum);
    outer_->restart(params);
  }
  const trainer::StepResult r = trainer_.train_step(idx);
  if (!average) return r;
  const std::vector<float> before(params.begin(), params.end());
  for (;;) {
    try {
      const topology::View view = membership_.view_at(round);
      // A re-formed ring starts from its first member's replica: the
      // average below is then of equal replicas, and the outer step starts
      // afresh from it on every member.
      if (!group_ || ring_changed(view)) {
        reform(view, round, stop);
        outer_->restart(params);
      }
      {
        TrainingLoop::CommTimer comm(loop_);
        protocol::Allreduce(*group_, params).run();
      }
      const float scale = 1.0f / static_cast<float>(group_->size());
      for (float& v : params) v *= scale;
      outer_->step(params);
      report_bytes();
      return r;
    } catch (const protocol::Aborted&) {
      throw;
    } catch (const protocol::TransportError&) {  // a member died mid-average: ours is whole again
      std::copy(before.begin(), before.end(), params.begin());
      await_view_change(std::current_exception(), round, stop);
    }
  }
}

}  // namespace gossipd::daemon
