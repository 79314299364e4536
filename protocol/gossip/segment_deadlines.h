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
// above `ceiling` (--segment-deadline-ms) nor below `floor`. A peer whose
// typical arrival is past that deadline is not waited for at all (its
// segment is taken if it is in when the round has the others), except
// every `probe_every`-th time it is drawn: so a slow link or member —
// fewer than 1 − quantile of the peers — costs its own segments (skipped,
// as a late one always was) and not everyone's round, and one that comes
// in time again is seen to.
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
  // A peer typically later than the deadline is waited for every this many
  // times it is drawn (1: always, as a fixed deadline does).
  size_t probe_every = 8;
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
  // How long after a round's start `peer`'s segment is waited for this
  // time it is drawn: current(), or zero for a peer typically later than
  // that (adaptive, warmed up), but for every probe_every-th draw of it.
  Duration wait_for(const std::string& peer);
  // `peer`'s segment arrived `after` its round's start (0 if it came before).
  void arrived(const std::string& peer, Duration after);
  // `peer`'s segment was not in by the wait wait_for gave it (above zero).
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
    size_t passed = 0;  // draws not waited for since the last wait
  };
  void record(const std::string& peer, Duration sample);
  Duration from_medians() const;

  DeadlineSpec spec_;
  std::map<std::string, Samples> peers_;
  Duration current_;
};

}  // namespace gossipd::protocol
