#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gossipd::daemon {

// What gossipctl soak measures of a cluster under churn, from sweeps over
// every live member's /status (its round, its state, its view) and the
// processes' resident memory, all at times in seconds since the start:
//   gaps         each member's longest wait between two rounds it ended,
//                from its first round to its last (or its kill);
//   convergence  after each change (a kill and a join), the time until
//                every live member that answers holds the same view and
//                that view is the live members, joiner included;
//   false        members alive, once in every view, whose absence from
//                some view then lasted longer than `evicted_after` seconds;
//   split        whether the last sweep in which every live member was
//                training saw more than one view;
//   rss          the long-lived members' (never killed) resident memory.
class SoakRecord {
 public:
  explicit SoakRecord(double evicted_after) : evicted_after_(evicted_after) {}
  // How long a change may take to settle, and a live member be missing.
  double bound() const { return evicted_after_; }

  void started(const std::string& id);
  void killed(const std::string& id, double t);  // a change starts here
  void left(const std::string& id);              // ended by itself (its run done): no change
  // One member's /status in the sweep at `t` (after start_sweep(t)).
  void start_sweep(double t);
  void saw(const std::string& id, uint64_t round, const std::string& state,
           const std::vector<std::string>& view);
  void end_sweep();
  void rss(double t, double bytes);  // the long-lived members' total at t

  struct Change {
    double at = 0;
    std::optional<double> converged;  // seconds after `at`
  };
  const std::vector<Change>& changes() const { return changes_; }
  // The longest gap of each member that ended a round twice.
  std::map<std::string, double> gaps() const;
  const std::set<std::string>& falsely_evicted() const { return false_; }
  bool split_at_end() const { return split_at_end_; }
  // Whether every live member has said it trains (in one sweep or another:
  // at 32 loaded members a sweep in which all answer can be rare).
  bool saw_everyone_training() const;
  // The last sweep in which every live member was training (0: none).
  double last_full_sweep() const { return last_full_sweep_; }
  // The mean resident bytes over [from, to) seconds (nullopt: no sample).
  std::optional<double> mean_rss(double from, double to) const;

 private:
  struct Member {
    std::optional<double> killed;
    bool left = false;
    bool trained = false;  // said "training" once
    uint64_t round = 0;
    std::optional<double> last_round_at;  // when a round was last seen to end
    double gap = -1;
  };
  double evicted_after_;
  std::map<std::string, Member> members_;
  std::vector<Change> changes_;
  std::set<std::string> admitted_;               // seen in every view once
  std::map<std::string, double> missing_since_;  // admitted live members some view lacks
  std::set<std::string> false_;
  std::vector<std::pair<double, double>> rss_;
  // The sweep in progress.
  double t_ = 0;
  std::map<std::string, std::set<std::string>> views_;
  std::map<std::string, std::string> states_;
  bool split_at_end_ = false;
  double last_full_sweep_ = 0;
};

}  // namespace gossipd::daemon
