#include "daemon/modes/allreduce/allreduce_mode.h"

#include <CLI/CLI.hpp>

#include "daemon/config/cli.h"
#include "daemon/config/mode_flags.h"
#include "daemon/config/per_protocol.h"
#include "daemon/modes/allreduce/allreduce_worker.h"
#include "daemon/worker/compress_flags.h"
#include "daemon/worker/robust_flags.h"

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
  void add_flags(ModeFlags& f) override {
    f.option("--local-steps", local_steps_,
             "allreduce: local SGD, each member's own steps and the parameters averaged every H-th step (and "
             "the last) instead of the gradients every step")
        ->capture_default_str();
    add_outer_momentum_flag(f, outer_momentum_);
    add_compress_flags(f, compress_, "allreduce: its collectives (gradients, or the local steps' change)");
    add_robust_flags(f, robust_, "allreduce: its copy of every block of every step's gradients");
  }
  void check_flags(const RunOptions&) const override {
    if (local_steps_ == 0) throw UsageError("--local-steps 0: take at least 1 step per exchange");
    check_outer_momentum(outer_momentum_, local_steps_);
    checked_codec(compress_);
    check_attack(robust_);
    if (local_steps_ > 1 && !robust_.inject_byzantine.empty())
      throw UsageError(
          "--inject-byzantine with --local-steps: local SGD's parameter averages take no attack yet");
    checked_eviction(robust_);
    if (!checked_defence(robust_)) return;
    if (local_steps_ > 1)
      throw UsageError(
          "--robust with --local-steps: local SGD's parameter averages have no defence yet; "
          "drop one of them");
    if (!checked_codec(compress_).lossless())
      throw UsageError(
          "--robust with --compress: the robust average takes float32 gradients; drop one of them");
  }
  EntryLaunch launch(const std::string& label, const std::string& arg, const EntryContext& c) const override {
    EntryLaunch l = Mode::launch(label, arg, c);
    l.flags = compress_launch_flags(c);
    if (const std::string h = c.value_of("--local-steps", "1"); h != "1")
      l.flags.insert(l.flags.end(), {"--local-steps", checked_local_steps(h)});
    if (const std::string m = c.value_of("--outer-momentum", "0"); m != "0")
      l.flags.insert(l.flags.end(), {"--outer-momentum", checked_outer_momentum(m)});
    add_robust_launch(l, c);
    for (const auto& [k, attack] : c.byzantine) check_attack(RobustFlags{attack});
    return l;
  }
  std::string why_not_hosted() const override { return daemon::why_not_hosted(robust_); }
  std::unique_ptr<Replica> load(const RunOptions& o, const Placement& where) const override {
    return poisoned(Mode::load(o, where), robust_);
  }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    return make_allreduce_worker(
        c, {local_steps_, outer_momentum_, checked_codec(compress_),
            checked_attack(robust_, c.topology_seed ^ std::hash<std::string>{}(c.node.id())),
            checked_defence(robust_), checked_eviction(robust_)});
  }
  // One allreduce of every gradient per step, or of the parameters every
  // H-th (the last step's average, where H does not divide the run, left out),
  // in the codec.
  std::unique_ptr<RoundTraffic> traffic(const TrafficContext& c) const override {
    struct Step : RoundTraffic {
      TrafficStage stage;
      uint32_t every = 1;
      std::vector<TrafficStage> round(uint64_t r) const override {
        if (r % every != 0) return {};
        return {stage};
      }
    };
    auto r = std::make_unique<Step>();
    r->stage = one_allreduce(c.members.size(), model_bytes(c.segments), checked_codec(compress_));
    r->every = local_steps_;
    return r;
  }

 private:
  uint32_t local_steps_ = 1;
  float outer_momentum_ = 0.0f;
  CompressFlags compress_{};
  // An attack aimed with what a member receives: refused in one line.
  static void check_attack(const RobustFlags& flags) {
    if (const auto a = checked_attack(flags, 0); a && protocol::attack_observes(a->kind))
      throw UsageError("--inject-byzantine " + std::string(protocol::attack_name(a->kind)) +
                       ": allreduce's members receive no one's copy of the gradients to aim it with; use "
                       "sign_flip, scaled, noise, non_finite, stale, ipm or label_flip");
  }

  RobustFlags robust_{};  // --inject-byzantine, --robust
};

}  // namespace

std::unique_ptr<Mode> make_allreduce_mode() { return std::make_unique<AllreduceMode>(); }

}  // namespace gossipd::daemon
