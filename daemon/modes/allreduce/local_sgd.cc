// AllReduce-SGD with --local-steps H: local SGD (Stich 2019; Lin et al.,
// "Don't use large mini-batches, use local SGD", 2020). Every member takes
// its own steps on its own gradients; every H-th step, and the last, the
// ring averages the parameters, so the replicas are identical again. Each
// member keeps its own momentum. With --compress the ring sums each
// window's change (the parameters less the last average, which every
// replica holds) in the codec: a change is small, so the codec's steps are,
// and every replica adds the same decoded average to the same start. An
// average that holds NaN or an infinity (one member's replica did) is the
// same on every member: each keeps its own replica for that window.
#include <algorithm>
#include <vector>

#include "daemon/modes/allreduce/allreduce_worker.h"
#include "protocol/collectives/collectives.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

trainer::StepResult AllreduceWorker::local_step(std::span<const uint32_t> idx, std::stop_token stop) {
  const uint64_t round = trainer_.step_count() + 1;
  const bool average = round % options_.local_steps == 0 || round == options_.last_step;
  membership_.at_step(trainer_.step_count(), [&](const ShareSpan&) { return capture(); });
  if (options_.checkpointer) options_.checkpointer->at_step(trainer_.step_count(), [&] { return capture(); });
  const std::span<float> params = trainer_.model().params();
  if (!outer_) {  // the first window starts where training does
    outer_ = std::make_unique<OuterMomentum>(options_.outer_momentum);
    restart_window(params);
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
      if (must_reform(view)) {
        reform(view, round, stop);
        restart_window(params);
      }
      watch_->at_round(round);
      average_parameters(params);
      if (!protocol::all_finite(std::as_bytes(params))) {  // one member's NaN: every member keeps its own
        std::copy(before.begin(), before.end(), params.begin());
        count_non_finite(round, "parameters' average", "its average");
        return r;
      }
      outer_->step(params);
      if (!options_.codec.lossless()) window_start_.assign(params.begin(), params.end());
      report_bytes();
      return r;
    } catch (const protocol::Aborted&) {  // stopped mid-average: this member's own step is whole again
      std::copy(before.begin(), before.end(), params.begin());
      if (!stop.stop_requested()) {  // the ring watch: the view for this step left the ring
        await_view_change(std::current_exception(), round, stop);
        continue;
      }
      throw StoppedBetweenSteps(node_.id(), "the parameters' average");
    } catch (const protocol::TransportError&) {  // a member died mid-average: ours is whole again
      std::copy(before.begin(), before.end(), params.begin());
      await_view_change(std::current_exception(), round, stop);
    }
  }
}

void AllreduceWorker::restart_window(std::span<const float> params) {
  outer_->restart(params);
  if (!options_.codec.lossless()) window_start_.assign(params.begin(), params.end());
}

void AllreduceWorker::average_parameters(std::span<float> params) {
  const float scale = 1.0f / static_cast<float>(group_->size());
  if (options_.codec.lossless()) {
    sum(params);
    for (float& v : params) v *= scale;
    return;
  }
  std::vector<float> change(params.size());
  for (size_t i = 0; i < params.size(); ++i) change[i] = params[i] - window_start_[i];
  sum(change);
  for (size_t i = 0; i < params.size(); ++i) params[i] = window_start_[i] + change[i] * scale;
}

}  // namespace gossipd::daemon
