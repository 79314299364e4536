#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gossipd::protocol {

// How long a gossip round waits for its peers' segments (gossipd run
// --deadline). Fixed: `ceiling` after the round's start, every round.
// Adaptive: learned from the arrivals this member has seen. Each peer's
// typical arrival is the median of its last `per_peer` segments (counted
// from the start of the round they were for: phase noise between members
// moves single arrivals, not medians); the deadline is the `quantile` of
// those medians over the peers seen, times 1 + `slack`, plus `margin`; never
// above `ceiling` (--segment-deadline-ms) nor below `floor`. So a slow link
// or member — fewer than 1 − quantile of the peers — costs its own segments
// (skipped, as a late one always was) and not everyone's round; a per-peer
// deadline would wait for it every round it is drawn.
struct DeadlineSpec {
  std::chrono::milliseconds ceiling{2000};
  bool adaptive = false;
  double quantile = 0.8;
  double slack = 0.25;
  std::chrono::milliseconds margin{2};
  std::chrono::milliseconds floor{1};
  size_t per_peer = 8;
  // Until this many peers are seen the ceiling holds.
  size_t warm_up = 4;
};

// One member's segment deadlines, learned round by round. A segment that
// missed its deadline counts as one of its peer's that arrived at twice the
// deadline (up to the ceiling): a peer that stays late is left out, one
// whose segments come in time again is taken back as they do, and when most
// peers miss, the deadline doubles round by round until it takes them in:
// a network that slows down is followed, not cut off.
class SegmentDeadlines {
 public:
  using Clock = std::chrono::steady_clock;
  using Duration = Clock::duration;

  explicit SegmentDeadlines(DeadlineSpec spec);

  // How long after a round's start its segments are waited for now.
  Duration current() const { return current_; }
  // `peer`'s segment arrived `after` its round's start (0 if it came before).
  void arrived(const std::string& peer, Duration after);
  // `peer`'s segment was not in by the deadline current() gave its round.
  void missed(const std::string& peer);
  // `peer`'s typical arrival now (its median); the ceiling for a peer not seen.
  Duration typical(const std::string& peer) const;
  // Peers with at least one arrival or miss recorded.
  size_t peers_seen() const { return peers_.size(); }

  const DeadlineSpec& spec() const { return spec_; }

 private:
  struct Samples {
    std::vector<Duration> ring;
    size_t next = 0;
    Duration median{};
  };
  void record(const std::string& peer, Duration sample);
  Duration from_medians() const;

  DeadlineSpec spec_;
  std::map<std::string, Samples> peers_;
  Duration current_;
};

}  // namespace gossipd::protocol
