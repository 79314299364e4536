#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// What a Member tells whoever holds it, as it happens. The Member prints
// nothing and never exits: gossipd run prints these as its lines (and
// --control-out's records); a process embedding a member logs them or not.
class MemberEvents {
 public:
  virtual ~MemberEvents() = default;
  // --check-config: everything checked (`summary`: the replica's size,
  // `resumes_at`: the checkpoint round it would resume from, 0: none).
  virtual void config_ok(const std::string& algo, const std::string& summary, uint64_t resumes_at) {
    (void)algo, (void)summary, (void)resumes_at;
  }
  // The node listens (and serves HTTP when asked): record.event is "listening".
  virtual void listening(const proto::ControlRecord& record) { (void)record; }
  // A joiner evaluated the state it downloaded (at `round`) before using it.
  virtual void downloaded(uint64_t round, double test_accuracy) { (void)round, (void)test_accuracy; }
  // A joiner was admitted through `contact`: it enters at `since_round` of `total_rounds`.
  virtual void joined(const std::string& contact, uint64_t since_round, uint64_t total_rounds,
                      uint64_t epoch) {
    (void)contact, (void)since_round, (void)total_rounds, (void)epoch;
  }
  // A joiner left its own checkpoint (of `round`) for the cluster's newer state.
  virtual void left_checkpoint(uint64_t round) { (void)round; }
  // Restarted from its checkpoint of `round`.
  virtual void resumed(uint64_t round, uint32_t epoch, double test_accuracy) {
    (void)round, (void)epoch, (void)test_accuracy;
  }
  // An evaluation's record (after `record.progress()` of `epochs` epochs).
  virtual void evaluated(const proto::EpochRecord& record, int epochs) { (void)record, (void)epochs; }
  // The end: record.event is "done", "stopped", "failed" or "cut_off" (the
  // member was cut off from its cluster: CutOff, which its holder may answer
  // with a rejoin), with the final
  // status and the injected faults; `mode_lines` the mode's own report
  // (Mode::final_report).
  virtual void ended(const proto::ControlRecord& record, const std::vector<std::string>& mode_lines) {
    (void)record, (void)mode_lines;
  }
};

}  // namespace gossipd::daemon
