#include "daemon/modes/gossip/gossip_mode.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/config/per_protocol.h"
#include "daemon/modes/gossip/gossip_traffic.h"
#include "daemon/worker/outer_momentum.h"
#include "protocol/wire/codec.h"

namespace gossipd::daemon {
namespace {

constexpr double kMinDeadlineQuantile = 0.01;  // --deadline-quantile: the least share of peers waited for

class GossipMode : public Mode {
 public:
  explicit GossipMode(GossipAlgo algo) : algo_(algo) {}

  std::string name() const override {
    return algo_ == GossipAlgo::kCrossover ? "crossover" : algo_ == GossipAlgo::kSgp ? "sgp" : "osgp";
  }
  std::string summary() const override {
    switch (algo_) {
      case GossipAlgo::kCrossover:
        return "Crossover-SGD: segments averaged with peers drawn by random derangements";
      case GossipAlgo::kSgp:
        return "Stochastic Gradient Push: push-sum over a time-varying exponential graph";
      case GossipAlgo::kOsgp:
        break;
    }
    return "Overlapped SGP: messages folded in one round late";
  }
  // Whole replicas averaged; a round that fails is skipped, never retried.
  bool hostable() const override { return true; }
  // Crossover-SGD first, then SGP; OSGP (SGP overlapped) when asked for.
  int default_compare_order() const override {
    return algo_ == GossipAlgo::kCrossover ? 1 : algo_ == GossipAlgo::kSgp ? 2 : 0;
  }

  void add_flags(ModeFlags& f) override {
    f.option("--consensus-every", flags_.consensus_every,
             "Measure the replicas' consensus distance every N rounds (0: never; gossip protocols)")
        ->capture_default_str();
    add_exchange_flags(f);
    add_robust_flags(f, flags_.robust, "gossip: its segments");
    f.describe("--segment-deadline-ms", "gossip: a peer's segment, the own copy kept");
    add_deadline_flags(f);
    if (algo_ == GossipAlgo::kOsgp) return;
    f.flag("--pace", flags_.pace,
           "crossover: send a segment only once its receiver has finished the last round (for "
           "bandwidth-bound networks: keeps rounds from competing on the links; costs a note per peer and "
           "round)");
    f.refusal("--pace",
              "--pace is for flat --algo crossover and sgp (not osgp, allreduce or --hierarchical)");
    if (algo_ != GossipAlgo::kCrossover) return;
    add_crossover_flags(f);
  }

  void check_flags(const RunOptions& o) const override {
    if (o.group == kAutoGroup && !flags_.hierarchical)
      throw UsageError(
          "--group auto forms the groups of --hierarchical: add --hierarchical, or drop --group auto");
    if (flags_.local_steps == 0) throw UsageError("--local-steps 0: take at least 1 step per exchange");
    check_outer_momentum(flags_.outer_momentum, flags_.local_steps);
    checked_codec(flags_.compress);
    if (flags_.hierarchical && flags_.overlap)
      throw UsageError("--hierarchical and --overlap do not combine yet; pick one");
    checked_attack(flags_.robust, 0);
    const bool defended = checked_defence(flags_.robust).has_value();
    checked_eviction(flags_.robust);
    if (flags_.hierarchical && defended && !checked_codec(flags_.compress).lossless())
      throw UsageError(
          "--robust with --hierarchical and --compress: the group's robust mean takes float32 replicas; drop "
          "one of them");
    if (flags_.hierarchical && defended && flags_.group_owner == "root")
      throw UsageError(
          "--group-owner root with --robust: under the defence the owners rotate, so that each hears a "
          "partner "
          "group's every member; drop one of them");
    if (flags_.pace && !can_pace(flags_.hierarchical))
      throw UsageError("--pace is for flat --algo crossover and sgp (not osgp, allreduce or --hierarchical)");
  }

  void add_compare_flags(ModeFlags& f) override {
    CLI::Option* deadline = f.option("--deadline", compare_deadline_,
                                     "Gossip protocols' segment deadline (gossipd run --deadline): fixed or "
                                     "adaptive");
    if (f.owners("--deadline").size() == 1) deadline->check(CLI::IsMember({"fixed", "adaptive"}));
    CLI::Option* quantile =
        f.option("--deadline-quantile", compare_quantile_,
                 "With --deadline adaptive: gossipd run --deadline-quantile (0: the daemon's default)");
    if (f.owners("--deadline-quantile").size() == 1)
      quantile->check([](const std::string& v) {  // gossipd run's range, or 0
        const double q = std::strtod(v.c_str(), nullptr);
        return q == 0 || (q >= kMinDeadlineQuantile && q <= 1)
                   ? std::string()
                   : "give 0 (the default) or a share from 0.01 to 1";
      });
    if (!can_pace(false)) return;
    CLI::Option* pace =
        f.option("--pace", compare_pace_,
                 "Crossover and SGP pace their sends (gossipd run --pace): on, off, or auto = "
                 "on where --bandwidth caps the links");
    if (f.owners("--pace").size() == 1)
      pace->check(CLI::IsMember({"auto", "on", "off"}))->capture_default_str();
  }

  EntryLaunch launch(const std::string& label, const std::string& arg, const EntryContext& c) const override {
    EntryLaunch l = Mode::launch(label, arg, c);
    l.flags = {"--consensus-every", std::to_string(l.steps_per_epoch)};
    if (compare_deadline_ != "fixed") l.flags.insert(l.flags.end(), {"--deadline", compare_deadline_});
    if (compare_quantile_ > 0) {
      std::ostringstream q;
      q << compare_quantile_;
      l.flags.insert(l.flags.end(), {"--deadline-quantile", q.str()});
    }
    const bool hierarchical = algo_ == GossipAlgo::kCrossover && (c.hierarchy_groups > 1 || c.auto_groups);
    for (size_t i = 0; hierarchical && i < c.workers; ++i)
      l.per_worker.push_back({"--hierarchical", "--group",
                              c.auto_groups ? kAutoGroup : "g" + std::to_string(i % c.hierarchy_groups)});
    const bool pace = compare_pace_ == "on" || (compare_pace_ == "auto" && c.links_capped);
    l.paced = pace && can_pace(hierarchical);
    if (l.paced) l.flags.push_back("--pace");
    const std::vector<std::string> compress = compress_launch_flags(c);
    l.flags.insert(l.flags.end(), compress.begin(), compress.end());
    if (const std::string h = c.value_of("--local-steps", "1"); h != "1")
      l.flags.insert(l.flags.end(), {"--local-steps", checked_local_steps(h)});
    if (const std::string m = c.value_of("--outer-momentum", "0");
        m != "0" && algo_ == GossipAlgo::kCrossover)
      l.flags.insert(l.flags.end(), {"--outer-momentum", checked_outer_momentum(m)});
    add_robust_launch(l, c);
    if (compare_pace_ == "on" && !l.paced && can_pace(false))
      l.unmet = "--pace on is for flat crossover and sgp: drop --groups or --pace";
    return l;
  }

  // SGP sends numerators and weights: the model is their quotient.
  void model_in_state(const ReplicaState& st, const protocol::SegmentTable& segments,
                      std::span<float> params) const override {
    Mode::model_in_state(st, segments, params);
    for (size_t s = 0; s < static_cast<size_t>(st.header.push_sum_weights_size()) && s < segments.size();
         ++s) {
      const float w = static_cast<float>(st.header.push_sum_weights(static_cast<int>(s)));
      for (size_t i = segments[s].offset; i < segments[s].offset + segments[s].length; ++i) params[i] /= w;
    }
  }
  bool groups_by_label() const override { return flags_.hierarchical; }
  std::string join_name() const override { return name() + (flags_.hierarchical ? "-hierarchical" : ""); }
  bool shares_on_segments() const override { return algo_ != GossipAlgo::kCrossover; }  // push-sum weights
  std::string why_not_hosted() const override { return daemon::why_not_hosted(flags_.robust); }
  // Measured with AdamW (tests/bench/README.md#pytorch-a-users-own-script):
  // SGP nearer DDP with the moments averaged, Crossover-SGD with its own.
  bool host_averages_state() const override { return algo_ != GossipAlgo::kCrossover; }
  std::unique_ptr<Replica> load(const RunOptions& o, const Placement& where) const override {
    return poisoned(Mode::load(o, where), flags_.robust);
  }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    return make_gossip_worker(c, algo_, flags_);
  }
  std::unique_ptr<RoundTraffic> traffic(const TrafficContext& c) const override {
    return gossip_traffic(algo_, flags_, c);
  }

 private:
  // The one pacing rule: flat crossover and plain SGP pace.
  bool can_pace(bool hierarchical) const {
    return (algo_ == GossipAlgo::kCrossover && !hierarchical) || algo_ == GossipAlgo::kSgp;
  }

  void add_deadline_flags(ModeFlags& f) {
    CLI::Option* d = f.option(
        "--deadline", flags_.deadline,
        "gossip: fixed (--segment-deadline-ms every round) or adaptive (learned from the arrivals: each "
        "peer's median arrival, their --deadline-quantile over the peers x 1.25 + 2 ms, at most "
        "--segment-deadline-ms; a slow peer's segments are skipped instead of waited for)");
    if (f.owners("--deadline").size() == 1)
      d->check(CLI::IsMember({"fixed", "adaptive"}))->capture_default_str();
    f.option("--deadline-quantile", flags_.deadline_quantile,
             "gossip, --deadline adaptive: the share of the peers whose segments a round waits for")
        ->check(CLI::Range(kMinDeadlineQuantile, 1.0))
        ->capture_default_str();
  }

  void add_exchange_flags(ModeFlags& f) {
    daemon::add_compress_flags(f, flags_.compress, "gossip: its segments");
    f.option("--local-steps", flags_.local_steps,
             "Exchange every H-th step, the others local steps (local SGD): H times fewer bytes")
        ->capture_default_str();
  }

  void add_crossover_flags(ModeFlags& f) {
    f.flag("--overlap", flags_.overlap,
           "crossover: gossip on a communication thread while the next step computes (sgp: use --algo osgp)");
    f.refusal("--overlap",
              "--overlap is for --algo crossover (for SGP use --algo osgp; allreduce is synchronous)");
    add_outer_momentum_flag(f, flags_.outer_momentum);
    f.flag("--hierarchical", flags_.hierarchical,
           "crossover: exact averages inside each --group, crossover gossip between groups");
    f.option("--group-owner", flags_.group_owner,
             "Hierarchical: who exchanges a group's segments: spread (member k: segments s = k mod size) or "
             "root (under --robust clip they rotate: member (s + round) mod size)")
        ->check(CLI::IsMember({"spread", "root"}))
        ->capture_default_str();
  }

  GossipAlgo algo_;
  GossipFlags flags_;
  std::string compare_pace_ = "auto";       // gossipctl compare --pace: on, off, auto
  std::string compare_deadline_ = "fixed";  // gossipctl compare --deadline
  double compare_quantile_ = 0;             // gossipctl compare --deadline-quantile (0: the default)
};

}  // namespace

std::unique_ptr<Mode> make_gossip_mode(GossipAlgo algo) { return std::make_unique<GossipMode>(algo); }

}  // namespace gossipd::daemon
