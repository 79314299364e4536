#include "daemon/modes/allreduce/allreduce_mode.h"

#include "daemon/modes/allreduce/allreduce_worker.h"

namespace gossipd::daemon {
namespace {

// Data parallel, every replica the same: the gradients allreduced every step.
class AllreduceMode : public Mode {
 public:
  std::string name() const override { return "allreduce"; }
  std::string summary() const override { return "AllReduce-SGD: ring allreduce of the gradients every step"; }
  bool one_replica() const override { return true; }
  bool hostable() const override { return true; }
  int default_compare_order() const override { return 3; }  // after Crossover-SGD and SGP
  // After a member dies the ring re-forms and the step is taken again
  // (AllreduceWorker::step).
  bool retries_failed_steps() const override { return true; }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override { return make_allreduce_worker(c); }
  // One allreduce of every gradient per step.
  std::unique_ptr<RoundTraffic> traffic(const TrafficContext& c) const override {
    struct Step : RoundTraffic {
      TrafficStage stage;
      std::vector<TrafficStage> round(uint64_t) const override { return {stage}; }
    };
    auto r = std::make_unique<Step>();
    uint64_t floats = 0;
    for (const auto& s : c.segments) floats += s.length;
    r->stage = one_allreduce(c.members.size(), floats * sizeof(float));
    return r;
  }
};

}  // namespace

std::unique_ptr<Mode> make_allreduce_mode() { return std::make_unique<AllreduceMode>(); }

}  // namespace gossipd::daemon
