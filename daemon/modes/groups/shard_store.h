#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "daemon/modes/groups/momentum_lineup.h"
#include "daemon/modes/groups/shard_clip.h"
#include "daemon/modes/groups/shard_layout.h"
#include "trainer/optimizer.h"

namespace gossipd::daemon {

// A group's gradient of one shard, averaged over the group.
struct ShardPush {
  std::string group;     // the pushing group's label
  uint64_t step = 0;     // the group's step
  uint64_t version = 0;  // the shard's version the group pulled (its gradient was computed on)
  float lr = 0;          // the group's learning rate for the step
  size_t shard = 0;
  std::span<const float> grad;
  std::string from{};  // the member that pushed it (--robust judges members, not groups)
};

// kRefused: --robust named its pusher; answered, not applied.
enum class PushOutcome { kApplied, kDuplicate, kNotOwned, kMisSized, kUnseeded, kRefused };

// Applied pushes of staleness k in bucket k; the last bucket k and above.
constexpr size_t kStalenessBuckets = 32;

struct ShardStats {
  std::vector<uint32_t> owned;
  uint64_t applied = 0, duplicate = 0, not_owned = 0, mis_sized = 0;
  uint64_t clipped = 0, refused = 0;  // --robust clip: pushes applied clipped; refused (a named pusher's)
  uint64_t seeded_later = 0;          // shards seeded after the start (their owner left)
  uint64_t lost = 0;                  // updates a group had pulled that the seeding copy did not hold
  std::vector<uint64_t> staleness = std::vector<uint64_t>(kStalenessBuckets, 0);
  double staleness_sum = 0;
  uint64_t staleness_max = 0;
  MomentumLineup::Sums fit;
  double staleness_mean() const { return applied ? staleness_sum / static_cast<double>(applied) : 0.0; }
};

// The shards one member owns, as their server: each shard's values, its
// optimizer state (velocity) and version (updates applied). A group's push
// is applied as it arrives, exactly once per (group, step, shard): a group
// moves to its next step only after its pushes were answered, so anything
// at or below the last step applied for that group is a repeat (a resend,
// a duplicate on the wire, a group that re-formed and redid the step); it is
// answered with the values, not applied. Thread-safe.
class ShardStore {
 public:
  // `optimizer` must be element-wise (SGD: momentum, Nesterov, weight decay);
  // the momentum fit lines up every `lineup_every`-th version.
  ShardStore(ShardLayout layout, trainer::OptimizerOptions optimizer,
             size_t lineup_every = MomentumLineup::kEvery);

  const ShardLayout& layout() const { return layout_; }
  void set_momentum(float momentum);
  float momentum() const;
  // The shards owned from now on: kept ones keep their state, the others
  // are dropped (with their pushers' latest pushes, --robust), new ones have
  // no values until seeded.
  void own(const std::vector<size_t>& shards);
  bool owns(size_t shard) const;
  // Seeds an owned shard that has no values (the first seed wins; false
  // otherwise). A seed of version 0 is the start's values; a later one, a
  // group's copy of a shard whose owner left, is counted.
  bool seed(size_t shard, std::span<const float> values, uint64_t version);
  PushOutcome push(const ShardPush& p);
  // push() in two halves: the update, then (kApplied only) the momentum
  // fit's line-up of its gradient, which an owner runs after it has
  // answered, off the pushing group's wait.
  PushOutcome apply_only(const ShardPush& p);
  void line_up(const ShardPush& p);
  // The values (into `out`, the shard's size) and version of an owned,
  // seeded shard; nullopt otherwise.
  std::optional<uint64_t> read(size_t shard, std::span<float> out) const;
  ShardStats stats() const;

  // --robust clip: every push from now on applied as ShardClip centres it.
  void defend(protocol::ClipSpec spec, const std::string& self);
  // A push of `from`'s refused as non-finite (counted against it, --robust).
  void refused(const std::string& from);
  // --robust: ends the owner's round (ShardClip::end_round); the pushers named.
  std::vector<std::string> end_round();
  // --robust: what this owner saw of each pusher.
  std::map<std::string, protocol::PeerClipping> pushers() const;

 private:
  struct Shard {
    std::vector<float> values;  // empty: not seeded
    std::unique_ptr<trainer::Optimizer> optimizer;
    uint64_t version = 0;
    std::map<std::string, uint64_t> last_step;  // per group
    MomentumLineup lineup;
    std::set<std::pair<std::string, uint64_t>> clipped;  // (group, step): not lined up
  };
  Shard make_shard(size_t shard) const;
  PushOutcome apply(Shard& s, const ShardPush& p);  // mutex_ held

  ShardLayout layout_;
  trainer::OptimizerOptions options_;
  size_t lineup_every_;
  mutable std::mutex mutex_;
  std::map<size_t, Shard> shards_;
  ShardStats stats_;
  std::unique_ptr<ShardClip> clip_;  // --robust clip
};

}  // namespace gossipd::daemon
