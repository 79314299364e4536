#pragma once

#include <cstdint>
#include <vector>

#include "daemon/plan/link_model.h"
#include "daemon/worker/round_traffic.h"

namespace gossipd::daemon {

// gossipctl simulate's clock: each member's time as rounds of a mode's
// traffic (round_traffic.h) run over alpha-beta links: each host's link to
// the network, shared by its members, and between members on one host the
// host's own link (a copy through the kernel: one per member and direction).
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
// doubling: log2 n steps of all of them) over the slowest link in it; one
// spanning hosts over their network links, each host's carrying what all of
// its members send across at once (the ring: those whose next member is on
// another host; the other schedules: all of them).
// Deterministic: drops are drawn from the seed.
//
// On a WAN (`wan`, gossipctl simulate --topology / --preset wan) the hosts
// are in regions, as gossipctl compare --netns --topology emulates them: a
// message between two hosts takes its regions' path, its delay and, where
// one of its TCP packets is lost (drawn from the seed), two delays more for
// the retransmission (gossipd run --wan's transport); it leaves through the
// path's HTB class of the sender's link (the path's rate), under the host's
// own cap (links[h]); what a host receives is capped only by
// receive_bytes_per_s. An allreduce over a WAN sends its bytes at the
// slowest path's rate and takes its steps' latencies as wan_ring_step_s (the
// ring) and wan_paired_s (the schedules that pair members) say.
// Jitter (mean zero) is not modelled.
struct WanPath {
  double delay_s = 0;      // one way
  double loss = 0;         // of TCP packets
  double bytes_per_s = 0;  // the sender's class for this path
};
struct WanModel {
  std::vector<uint32_t> region;             // per host
  std::vector<std::vector<WanPath>> paths;  // [region][region]
  double receive_bytes_per_s = 0;           // every host's incoming side
  bool empty() const { return region.empty(); }
};

struct TimeModelOptions {
  double step_s = 0;
  std::vector<LinkModel> links;  // one per host
  std::vector<uint32_t> host;    // each member's host (view order); empty: a host per member
  LinkModel host_link{};         // between two members on one host
  std::vector<double> compute;   // one per member: its step_s multiplier
  double drop_rate = 0;          // of point-to-point messages
  double deadline_s = 2;         // gossipd run --segment-deadline-ms
  double burst_bytes = 0;        // each link direction's token bucket (tc tbf's burst)
  uint64_t seed = 1;
  WanModel wan;  // empty: each host's link alone, at links[h]'s latency
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

// A message the model skips (late or dropped): the round it was sent in,
// its sender and receiver, its segment.
struct LostMessage {
  uint64_t round = 0;
  uint32_t from = 0, to = 0, segment = 0;
};

struct ModelledRound {
  double slowest_s = 0;           // the last member's clock at the end of the round
  uint64_t bytes_sent = 0;        // every member's together
  uint64_t skipped = 0;           // messages skipped: late or dropped
  std::vector<LostMessage> lost;  // which (skipped of them)
};

class TimeModel {
 public:
  // A step of a schedule that pairs members (doubling, butterfly): each
  // member exchanges `bytes` with its rank ^ distance.
  struct PairedStep {
    size_t distance = 1;
    double bytes = 0;
  };

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
  // Whether a WAN message of `bytes` lost a packet (and is retransmitted).
  bool retransmitted(uint64_t round, uint64_t message, uint64_t bytes, double loss) const;
  // When each member may start sending a paced stage's messages.
  std::vector<double> pace_gates(const TrafficStage& stage);

  // A message's way: the side of a link it leaves by and the one it comes
  // in by (indices into up_ and down_), and its latency.
  // On a WAN also the class of the sender's link it passes (kNoSide: none)
  // and its path's loss.
  static constexpr size_t kNoSide = static_cast<size_t>(-1);
  struct Route {
    size_t up = 0, down = 0;
    double latency_s = 0;
    size_t via = kNoSide;
    double loss = 0;
  };
  Route route(uint32_t from, uint32_t to) const;
  // Sides [0, hosts) are the hosts' network links, [hosts, hosts + members)
  // each member's side of its host's own link, then on a WAN each host's
  // class per region (host * regions + region).
  double rate(size_t side) const;
  double receive_rate(size_t side) const;
  size_t wan_class(uint32_t host, uint32_t region) const;
  double burst(size_t side) const { return side < o_.links.size() ? o_.burst_bytes : 0; }
  // The sides an allreduce over `group` holds, its latency and the time its
  // schedule's bytes (`ring`: the ring's) take each member.
  struct AllreducePath {
    std::vector<size_t> sides;
    double latency_s = 0, s_per_byte = 0;
    // On a WAN, each message's path the schedule takes (latency_s is
    // their slowest delay): the ring's step latency from them (wan_ring_step_s).
    struct Hop {
      double delay_s = 0, loss = 0;
    };
    std::vector<Hop> hops;
    bool ring = false;
  };
  AllreducePath allreduce_path(const std::vector<uint32_t>& group, bool ring) const;
  // The same over a WAN: each message's route, one per sender and receiver
  // its schedule pairs (the ring: each member and the next).
  AllreducePath wan_allreduce_path(const std::vector<uint32_t>& group, bool ring) const;
  // The ring's step latency over a WAN, `step_bytes` a message: it
  // pipelines, so its steps take the hops' mean (a chunk goes round the
  // ring hop after hop), each delay with its expected retransmissions.
  static double wan_ring_step_s(const AllreducePath& path, double step_bytes);
  // The latency of the other schedules' steps over a WAN: each step waits
  // for its slowest pair (the members `distance` apart in `group`'s order),
  // two delays more where any of its n messages lost a packet. The
  // butterfly's pairs 1 and 2 apart stay inside a region of four
  // consecutive hosts, and only its other steps pay the delays between.
  double wan_paired_s(const std::vector<uint32_t>& group, const std::vector<PairedStep>& steps) const;

  TimeModelOptions o_;
  std::vector<double> clock_, waited_;
  std::vector<LinkSide> up_, down_;
  // Paced (Pace::kAfterLast): whom each member sent to in its last such stage.
  std::vector<std::vector<uint32_t>> last_receivers_;
  // A message at its receiver: when it arrived (never: dropped) and which.
  struct Arrival {
    double at = 0;
    LostMessage message;
  };
  // Folded stages (OSGP): arrivals owed to each member in the next round.
  std::vector<std::vector<Arrival>> owed_;
};

}  // namespace gossipd::daemon
