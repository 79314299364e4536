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

// The round trips to a member's peers, measured with PINGs whose sequence
// numbers have the top bit set (the Prober's never reach it), each matched
// to its ACK. One PING out per peer at a time; one unanswered for `give_up`
// is forgotten, and its late ACK ignored: it would time the peer's start or
// a queue, not the link. Not thread-safe (Membership's lock).
class RoundTrips {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint64_t kSeqBit = uint64_t{1} << 63;
  static constexpr size_t kSamples = 3;  // a peer's round trip: the least of this many answers
  static constexpr size_t kTries = 3;    // PINGs unanswered: a peer this far (or gone) is not near

  explicit RoundTrips(Clock::duration give_up) : give_up_(give_up) {}

  // The PINGs to send now, (peer, seq), to those of `peers` not settled.
  std::vector<std::pair<std::string, uint64_t>> due(const std::vector<std::string>& peers,
                                                    Clock::time_point now);
  // True when `seq` is one of these PINGs' (then its ACK is this class's
  // business, not the Prober's); the answer counts if `from` is its peer.
  bool acked(uint64_t seq, const std::string& from, Clock::time_point now);
  // Every one of `peers` answered kSamples PINGs or left kTries unanswered.
  bool settled(const std::vector<std::string>& peers) const;
  // The least round trip to each peer that answered.
  std::map<std::string, Clock::duration> least() const;

 private:
  struct Out {
    std::string peer;
    Clock::time_point sent;
  };
  struct Peer {
    Clock::duration least = Clock::duration::max();
    size_t answered = 0, unanswered = 0;
    uint64_t out = 0;  // the seq of the PING out (0: none)
  };
  bool settled(const Peer& p) const { return p.answered >= kSamples || p.unanswered >= kTries; }

  Clock::duration give_up_;
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
