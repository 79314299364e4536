#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gossipd::daemon {

// `gossipd run --group auto`: the hierarchical groups follow the network, a
// region a group. A member measures its round trips to the others (PINGs of
// its own, answered by their membership), then takes the label of the
// nearest member within `near` that has one, or else "auto-" followed by
// the lowest id among itself and the members within `near`. Members of one
// region started together thus all name their group after its lowest id,
// whatever order they decide in; a joiner takes its region's label; a
// member that measured one link too slow is pulled in by a labelled peer.
// Labels are never changed (membership.h): a group that loses its namesake
// keeps the name, and one whose members all leave is gone.
//
// A group averages its model exactly every round, so it moves at the pace
// of its slowest link: a link's rate counts beside its delay. A peer is
// measured in two stages: first its delay, with bare PINGs; then, if that
// is within `near`, with PINGs that carry kPaddingBytes and ACKs that carry
// as many back, its round trip with its rate. At the default 20 ms bound,
// hosts 2 ms apart, with one of the two links at 1 gbit the other adds
// 0.3 ms at 1 gbit (near), 2.6 ms at 100 mbit (near), 26 ms at 10 mbit:
// such a host founds a group of its own, which averages with the others
// through the deadline-bound segments as flat gossip does, instead of
// holding its region's average to its link. Padding only the near peers'
// PINGs keeps a member's padded traffic to its region's few: padded PINGs
// to all of them at once queued behind one another and timed the queue.

// The round trips to a member's peers, measured with PINGs whose sequence
// numbers have the top bit set (the Prober's never reach it), each matched
// to its ACK. One PING out per peer at a time; one unanswered for `give_up`
// is forgotten, and its late ACK ignored: it would time the peer's start or
// a queue, not the link. Not thread-safe (Membership's lock).
class RoundTrips {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint64_t kSeqBit = uint64_t{1} << 63;
  static constexpr size_t kSamples = 3;  // a stage's round trip: the least of this many answers
  static constexpr size_t kTries = 3;    // PINGs unanswered: a peer this far (or gone) is not near
  static constexpr size_t kPaddingBytes = 32 * 1024;  // carried by a rate stage's PING and its ACK

  struct Ping {
    std::string peer;
    uint64_t seq = 0;
    size_t padding = 0;  // bytes
  };

  RoundTrips(Clock::duration give_up, Clock::duration near) : give_up_(give_up), near_(near) {}

  // The PINGs to send now to those of `peers` not settled.
  std::vector<Ping> due(const std::vector<std::string>& peers, Clock::time_point now);
  // True when `seq` is one of these PINGs' (then its ACK is this class's
  // business, not the Prober's); the answer counts if `from` is its peer.
  bool acked(uint64_t seq, const std::string& from, Clock::time_point now);
  // Every one of `peers` is measured: far by its delay, or its rate stage
  // done (kSamples answers, or kTries unanswered).
  bool settled(const std::vector<std::string>& peers) const;
  // Each peer's round trip: with padding for a peer near by its delay
  // (absent if it never answered a padded PING), else its delay's.
  std::map<std::string, Clock::duration> least() const;

 private:
  struct Stage {
    Clock::duration least = Clock::duration::max();
    size_t answered = 0, unanswered = 0;
    bool done() const { return answered >= kSamples || unanswered >= kTries; }
  };
  struct Out {
    std::string peer;
    Clock::time_point sent;
    bool padded = false;
  };
  struct Peer {
    Stage delay, rate;
    uint64_t out = 0;  // the seq of the PING out (0: none)
  };
  bool near_by_delay(const Peer& p) const { return p.delay.answered > 0 && p.delay.least <= near_; }
  bool settled(const Peer& p) const { return p.delay.done() && (!near_by_delay(p) || p.rate.done()); }

  Clock::duration give_up_, near_;
  uint64_t next_ = kSeqBit;
  std::map<uint64_t, Out> out_;
  std::map<std::string, Peer> peers_;
};

struct GroupChoice {
  std::string label;
  std::vector<std::string> near;  // the members within `near`, nearest first
};

// The group label of member `self` from its measured round trips and the
// labels it knows (its peers'; "" or absent: not known yet).
GroupChoice choose_group(const std::string& self,
                         const std::map<std::string, RoundTrips::Clock::duration>& round_trips,
                         const std::map<std::string, std::string>& labels, RoundTrips::Clock::duration near);

}  // namespace gossipd::daemon
