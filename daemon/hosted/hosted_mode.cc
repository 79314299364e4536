#include "daemon/hosted/hosted_mode.h"

#include <algorithm>
#include <utility>

#include "daemon/config/cli.h"
#include "daemon/config/train_flags.h"
#include "daemon/worker/mode_set.h"

namespace gossipd::daemon {

HostedMode::HostedMode(const Mode& inner, HostedLayout layout, StepRendezvous& rendezvous,
                       std::stop_token stop, std::function<void(HostedArena)> loaded)
    : inner_(inner),
      layout_(std::move(layout)),
      rendezvous_(rendezvous),
      stop_(std::move(stop)),
      loaded_(std::move(loaded)) {
  if (!inner.hostable()) {
    std::vector<std::string> ok;  // "a, b or c"
    const ModeSet modes;
    for (const auto& m : modes.all())
      if (m->hostable()) ok.push_back(m->name());
    std::string names;
    for (size_t i = 0; i < ok.size(); ++i)
      names += (i == 0 ? "" : i + 1 == ok.size() ? " or " : ", ") + ok[i];
    throw UsageError("algo '" + inner.name() +
                     "' is not data parallel over whole replicas: a host trains with " + names);
  }
  if (const std::string why = inner.why_not_hosted(); !why.empty()) throw UsageError(why);
  if (layout_.steps_per_epoch == 0) throw UsageError("steps_per_epoch must be at least 1");
  if (layout_.state_per_param > 8)
    throw UsageError(
        "state_per_param " + std::to_string(layout_.state_per_param) +
        ": an optimizer's state is 0 (kept in the parameters' segments) to 8 floats a parameter");
  if (!layout_.initial_state.empty() &&
      layout_.initial_state.size() != layout_.state_per_param * layout_.initial.size())
    throw UsageError("the initial optimizer state holds " + std::to_string(layout_.initial_state.size()) +
                     " floats, not " + std::to_string(layout_.state_per_param) + " x " +
                     std::to_string(layout_.initial.size()));
}

namespace {

// The trainer wants a training set whose samples fit the model's input: a
// hosted model takes one float, and the host reads its own data.
trainer::Dataset placeholder_data(size_t samples) {
  trainer::Dataset d;
  d.height = d.width = d.channels = 1;
  d.classes = 1;
  d.images.assign(samples, 0.0f);
  d.labels.assign(samples, 0);
  return d;
}

}  // namespace

std::unique_ptr<Replica> HostedMode::load(const RunOptions& o, const Placement&) const {
  if (layout_.initial.empty())
    throw UsageError("a hosted member loads its model once: its initial values went to the first load");
  auto model = std::make_unique<trainer::Model>(trainer::Shape{});
  try {
    // Handed over, not copied: at 31M parameters a copy kept is 124 MB a process.
    model->host(layout_.segments, std::exchange(layout_.initial, {}));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("the hosted model's layout: ") + e.what());
  }
  const protocol::SegmentTable segments = checked_segment_table(o, *model);
  trainer::TrainerOptions topts = trainer_options(o.train);
  topts.optimizer.state_per_param = layout_.state_per_param;
  auto replica = std::make_unique<TrainedReplica>(placeholder_data(std::max<size_t>(topts.batch, 1)),
                                                  placeholder_data(0), std::move(model), topts, segments);
  trainer::Trainer& t = replica->trainer();
  StepRendezvous& r = rendezvous_;
  std::stop_token stop = stop_;
  t.host(trainer::HostedStep{.gradients = [&r, stop] { return r.gradients(stop); },
                             .apply = [&r, stop](float lr) { r.apply(lr, stop); },
                             .evaluate = [&r] { return r.evaluation(); }});
  if (inner_.retries_failed_steps()) r.keep_gradients(t.model().grads());
  if (!layout_.initial_state.empty()) {
    std::copy(layout_.initial_state.begin(), layout_.initial_state.end(), t.optimizer().state().begin());
    std::vector<float>().swap(layout_.initial_state);  // the arena holds it now
  }
  loaded_(HostedArena{t.model().params(), t.model().grads(), t.optimizer().state()});
  return replica;
}

}  // namespace gossipd::daemon
