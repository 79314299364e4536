#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "daemon/hosted/step_rendezvous.h"
#include "daemon/worker/mode.h"
#include "trainer/model.h"

namespace gossipd::daemon {

// The model a host process computes (a PyTorch module): its parameters as
// segments in order (one per module, say) and their values at the start.
struct HostedLayout {
  std::vector<trainer::ParamSegment> segments;
  std::vector<float> initial;
  size_t steps_per_epoch = 1000;  // the host's loader length: the epochs /status counts
  // The host optimizer's state floats per parameter (SGD's momentum: 1,
  // Adam's two moments: 2): the arena's optimizer_state holds that many
  // runs of the parameters' length; 0 where the host keeps its state in
  // the parameters' segments (gossipd.torch's layout.py, under gossip).
  size_t state_per_param = 1;
  std::vector<float> initial_state;  // empty: zeros; else state_per_param runs of the parameters' length
};

// The buffers a hosted member trains on: the model's parameters and
// gradients and the optimizer's state, each one flat float run that the
// host binds its tensors to.
struct HostedArena {
  std::span<float> params;
  std::span<float> grads;
  std::span<float> optimizer_state;
};

// A data-parallel mode (crossover, sgp, osgp, allreduce) run for a host
// process: everything is the inner mode's (its flags, checks, worker,
// joins, checkpoints) except what is trained: a trainer over the hosted
// layout whose local step is the host's (StepRendezvous), no data set of
// its own, no background evaluations (the host evaluates).
class HostedMode : public Mode {
 public:
  // Throws UsageError for a mode that is not data parallel over whole
  // replicas. `loaded` hears of the arena once the member has built it (on
  // the member's thread).
  HostedMode(const Mode& inner, HostedLayout layout, StepRendezvous& rendezvous, std::stop_token stop,
             std::function<void(HostedArena)> loaded);

  std::string name() const override { return inner_.name(); }
  std::string summary() const override { return inner_.summary(); }
  void check_flags(const RunOptions& o) const override { inner_.check_flags(o); }
  std::unique_ptr<Replica> load(const RunOptions& o, const Placement& where) const override;
  size_t steps_per_epoch(const RunOptions&, size_t, size_t, size_t) const override {
    return layout_.steps_per_epoch;
  }
  bool accepts_joins() const override { return inner_.accepts_joins(); }
  std::string join_name() const override { return inner_.join_name(); }
  bool shares_on_segments() const override { return inner_.shares_on_segments(); }
  void model_in_state(const ReplicaState& st, const protocol::SegmentTable& segments,
                      std::span<float> params) const override {
    inner_.model_in_state(st, segments, params);
  }
  bool writes_checkpoints() const override { return inner_.writes_checkpoints(); }
  bool one_replica() const override { return inner_.one_replica(); }
  bool hostable() const override { return inner_.hostable(); }
  bool retries_failed_steps() const override { return inner_.retries_failed_steps(); }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override { return inner_.make_worker(c); }
  std::unique_ptr<trainer::Model> eval_model(const RunOptions&) const override { return nullptr; }
  std::vector<std::string> final_report(const proto::Status& s) const override {
    return inner_.final_report(s);
  }

 private:
  const Mode& inner_;
  mutable HostedLayout layout_;  // its initial values move into the model at load()
  StepRendezvous& rendezvous_;
  std::stop_token stop_;
  std::function<void(HostedArena)> loaded_;
};

}  // namespace gossipd::daemon
