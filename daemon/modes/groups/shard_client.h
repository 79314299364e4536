#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "daemon/modes/groups/shard_service.h"
#include "daemon/modes/groups/shard_store.h"
#include "protocol/collectives/error_feedback.h"
#include "protocol/collectives/group.h"
#include "protocol/robust/attack.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

struct ShardClientOptions {
  std::chrono::milliseconds first_resend{250};  // a push unanswered this long is sent again (then 2x, ...)
  std::chrono::milliseconds give_up{13000};     // an owner still in the view silent this long fails the step
  std::chrono::milliseconds send_timeout{1000};
  protocol::CodecSpec codec{};  // --compress: pushes go and answers come in it (shard_wire.h)
  ShardTags tags{};             // the compute groups' (shard_tags of Mode::tags)
  // --inject-byzantine: what this member pushes to other owners is attacked
  // (its own shards' pushes, into its own store, are not).
  std::optional<protocol::AttackSpec> attack{};
};

// A group member's side of the parameter shards: pushes the group's
// averaged gradient of the shards of its slice to their owners (the
// member's own shards straight into its store) and takes the values they
// answer with, resending what is not answered in time — to the new owner
// when the view moved the shard — and seeding an owner that has no values
// with the group's copy. What an owner applies twice is its to refuse.
// With a codec a push is encoded once, with error feedback per element (a
// resend sends the same bytes), and the answers are decoded.
class ShardClient {
 public:
  ShardClient(protocol::Node& node, AliveMembers alive, ShardStore& store, ShardService& service,
              std::string group, ShardClientOptions options);

  // Shards [first, last) of step `step`: their gradient is in `grads`, their
  // fresh values go to `params` (both whole parameter vectors). The pushes
  // say the gradient was computed on the versions last pulled, or on
  // `computed_on` (one per shard) when given (--group-overlap: a step
  // older).
  void exchange(uint64_t step, float lr, std::pair<size_t, size_t> shards, std::span<const float> grads,
                std::span<float> params, std::stop_token stop, std::span<const uint64_t> computed_on = {});
  // The version of each shard this member last pulled (or took from its ring).
  const std::vector<uint64_t>& versions() const { return versions_; }
  uint64_t resends() const { return resends_.load(std::memory_order_relaxed); }
  // Every member of the group takes the versions its ring's members pulled
  // (ranks' slices as in `exchange`), so whoever pushes or seeds a shard
  // next — after the ring re-formed, say — knows the version of its copy.
  void share_versions(protocol::Group& ring);

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    size_t shard = 0;
    std::string owner;
    Clock::time_point resend, give_up;
    std::chrono::milliseconds backoff{0};
    protocol::EncodedSegment push{};  // a compressed push, once encoded
  };
  struct Step {
    uint64_t step = 0;
    float lr = 0;
    std::span<const float> grads;
    std::span<float> params;
    std::span<const uint64_t> computed_on;  // empty: versions_
    uint64_t pushed_at(size_t shard, const std::vector<uint64_t>& pulled) const {
      return computed_on.empty() ? pulled[shard] : computed_on[shard];
    }
  };
  std::string owner_of(size_t shard) const;
  // Applies and reads a shard this member owns; false when it does not (yet).
  bool local(const Step& s, size_t shard);
  void push(const Step& s, Pending& p);
  void seed(const Step& s, const Pending& p);
  // Handles one answer; true when it completed a pending shard.
  bool take(const Step& s, const protocol::Message& m, std::vector<Pending>& pending);
  void resend_due(const Step& s, std::vector<Pending>& pending);
  std::span<const float> piece(std::span<const float> v, size_t shard) const;
  // The gradient of `shard` as this member pushes it: attacked, with --inject-byzantine.
  std::span<const float> outgoing(const Step& s, size_t shard);

  protocol::Node& node_;
  AliveMembers alive_;
  ShardStore& store_;
  ShardService& service_;
  std::string group_;
  ShardClientOptions options_;
  std::vector<uint64_t> versions_;                 // per shard, as this member last took it
  protocol::ErrorFeedback feedback_;               // the pushes' rounding (--compress)
  std::optional<protocol::SegmentAttack> attack_;  // --inject-byzantine
  std::atomic<uint64_t> resends_{0};               // read by /status while an overlapped exchange runs
};

}  // namespace gossipd::daemon
