#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "protocol/robust/clipped_gossip.h"

namespace gossipd::daemon {

// Compute groups' --robust clip, at a shard's owner: a group member's push
// of gradient g is applied as
//   g' = r + clip(g − r, τ),   clip(d, τ) = d·min(1, τ/‖d‖)
// where r, the shard's reference, is the coordinate-wise median of the
// latest push of every pusher not named (this one's included): centered
// clipping (Karimireddy, He and Jaggi, ICML 2021) at an asynchronous owner,
// around a point a minority of pushers cannot move beyond the honest ones'
// range. A push then moves the shard's update by at most τ beyond that
// point, whatever it holds. With fewer than kMedianOf pushers of a shard
// there is no majority to take a median of and r = 0 (the norm is clipped:
// two groups of one pusher each cannot tell which is honest). τ is
// ClippedGossip's (protocol/robust/clipped_gossip.h): adaptive from the
// shard's last distances, or fixed; before a shard has its first
// distances, τ = cold × ‖the shard's values‖. A pusher whose pushes are
// mostly far (CenteredClip's kFar × τ or beyond) in kNameAfter of the
// owner's rounds in a row (its own group's steps end them) is named, and its
// pushes are refused from then on (answered, not applied); a push of NaN or
// an infinity, refused before it gets here, counts as far (refused()).
// Measured thresholds: at ClippedGossip's (4 τ, 3 rounds) a stale replay
// was named after round 300 and honest members were named once the
// attacker had moved the replicas (tests/bench/byzantine.sh).
// Not thread-safe: the store calls it under its lock.
// out ← the coordinate-wise median of `rows` (each out.size() floats, at
// least one): the middle value of each column, or the mean of the middle
// two; 3 and 4 rows without a sort.
void coordinate_median(std::span<const float* const> rows, std::span<float> out);

class ShardClip {
 public:
  // The fewest pushers whose latest pushes the reference is the median of;
  // with fewer it is zero.
  static constexpr size_t kMedianOf = 3;

  // `self`: this owner's id (its own group's pushes are judged as the
  // others', but it never names itself).
  ShardClip(protocol::ClipSpec spec, std::string self);

  // The gradient to apply for `from`'s push `grad` of shard `shard`, whose
  // values are `values`: `grad` itself where it lies within τ of the
  // reference, else the clipped one (in a buffer valid until the next call).
  // Moves the reference.
  std::span<const float> centre(const std::string& from, size_t shard, std::span<const float> grad,
                                std::span<const float> values);
  // Whether `from` was named (its pushes are refused).
  bool named(const std::string& from) const { return from != self_ && clip_.named(from); }
  // A push of `from`'s refused as non-finite.
  void refused(const std::string& from) { clip_.refused(from); }
  // The shards owned from now on: the latest pushes of the others are
  // dropped (a shard that comes back starts with no pushers).
  void keep(const std::vector<size_t>& shards);
  // Ends a round's tally: the pushers named by it.
  std::vector<std::string> end_round();
  // What this owner saw of each pusher, itself left out.
  std::map<std::string, protocol::PeerClipping> pushers() const;
  // Whether the last centre() clipped.
  bool clipped() const { return clipped_; }

 private:
  protocol::ClippedGossip clip_;
  std::string self_;
  struct Rows {
    std::map<std::string, std::vector<float>> latest;  // each pusher's last push
    std::vector<float> reference;                      // r
  };
  // r ← the coordinate-wise median of the latest pushes of the pushers not named.
  void median(Rows& rows);

  std::map<size_t, Rows> shards_;
  std::vector<const float*> take_;
  std::vector<float> out_;
  bool clipped_ = false;
};

}  // namespace gossipd::daemon
