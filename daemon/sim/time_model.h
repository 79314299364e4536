#pragma once

#include <cstdint>
#include <vector>

#include "daemon/plan/link_model.h"
#include "daemon/worker/round_traffic.h"

namespace gossipd::daemon {

// gossipctl simulate's clock: each member's time as rounds of a mode's
// traffic (round_traffic.h) run over alpha-beta links, one host per member.
// A round is a training step's compute (step_s times the member's factor),
// then the mode's stages. In a paced stage (gossipd run --pace) a message
// leaves no earlier than its receiver's note that it is in the exchange
// (the receiver's stage start, plus a latency), and its sender's later
// messages wait behind it, as the daemon's loop sends them in order. A message leaves once its sender's link
// is free and the receiver's link is free to take it, and takes bytes over the slower of the two links plus
// the sender's latency; so a host's link carries what it sends (and receives) one message after the other,
// shared by all it sends at once. A member's message stage ends when the last message it waits for has
// arrived, or at its segment deadline (counted from the stage's start, as the daemon's round counts it): what
// is later, and what the drop rate loses, is skipped. An allreduce starts when its last member is ready and
// takes the steps of the schedule protocol::allreduce_schedule picks for its size (ring: 2 (n - 1) steps of
// bytes / n; butterfly: 2 log2 n steps moving 2 (n - 1) / n of the bytes;
// doubling: log2 n steps of all of them) over the slowest link in it.
// Deterministic: drops are drawn from the seed.
struct TimeModelOptions {
  double step_s = 0;
  std::vector<LinkModel> links;  // one per member (view order)
  std::vector<double> compute;   // one per member: its step_s multiplier
  double drop_rate = 0;          // of point-to-point messages
  double deadline_s = 2;         // gossipd run --segment-deadline-ms
  double burst_bytes = 0;        // each link direction's token bucket (tc tbf's burst)
  uint64_t seed = 1;
};

// One direction of a host's link: free again at `free`; with a burst, a
// token bucket (tc tbf) that fills at the link's rate while it is idle, so a
// link that was idle sends its first burst bytes at once.
struct LinkSide {
  double free = 0;
  double tokens = 0;
  // Sends `bytes` from `start` (no earlier than `free`): when the last has gone.
  double send(double start, double bytes, double rate, double burst);
};

struct ModelledRound {
  double slowest_s = 0;     // the last member's clock at the end of the round
  uint64_t bytes_sent = 0;  // every member's together
  uint64_t skipped = 0;     // messages skipped: late or dropped
};

class TimeModel {
 public:
  explicit TimeModel(TimeModelOptions options);
  ModelledRound run_round(uint64_t round, const std::vector<TrafficStage>& stages);
  // Each member's clock at the end of its last round, and the seconds it
  // spent waiting on exchanges so far (its clock less its compute).
  const std::vector<double>& clocks() const { return clock_; }
  const std::vector<double>& waited() const { return waited_; }

 private:
  void messages(uint64_t round, const TrafficStage& stage, ModelledRound& r);
  void allreduces(const TrafficStage& stage, ModelledRound& r);
  bool dropped(uint64_t round, uint64_t message) const;
  // When each member may start sending a paced stage's messages.
  std::vector<double> pace_gates(const TrafficStage& stage);

  TimeModelOptions o_;
  std::vector<double> clock_, waited_;
  std::vector<LinkSide> up_, down_;
  // Paced (Pace::kAfterLast): whom each member sent to in its last such stage.
  std::vector<std::vector<uint32_t>> last_receivers_;
  // Folded stages (OSGP): arrivals owed to each member in the next round.
  std::vector<std::vector<double>> owed_;
};

}  // namespace gossipd::daemon
