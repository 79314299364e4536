#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "daemon/modes/groups/shard_store.h"
#include "daemon/modes/groups/shard_wire.h"
#include "protocol/transport/change_signal.h"
#include "protocol/transport/node.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/message.h"

namespace gossipd::daemon {

// What an owner does with one message on the shards' request tag (the
// service's thread calls it; the fuzz target too). A push from a group
// member is applied and answered with the shard's values, or answered again
// when it repeats one already applied (counted as a stale reject); one for a
// shard it has no values for is answered UNSEEDED; a seed seeds an owned
// shard that has none; a DONE note marks its sender finished (and notifies
// `changes`, which ShardService::finish waits on). A push from
// outside the groups, for a shard it does not own, of the wrong size, or a
// message of another kind is dropped and counted as a reject. With a codec
// (--compress) pushes come and answers go in it (shard_codec); a push in
// another is dropped and counted (codec).
class ShardRequests {
 public:
  // Answers go on `answer_tag` (ShardTags).
  ShardRequests(protocol::Node& node, ShardStore& store, std::map<std::string, std::string> labels,
                std::chrono::milliseconds send_timeout, protocol::ChangeSignal& changes, uint32_t answer_tag,
                protocol::CodecSpec codec = {})
      : node_(node),
        store_(store),
        labels_(std::move(labels)),
        send_timeout_(send_timeout),
        changes_(changes),
        answer_tag_(answer_tag),
        codec_(codec) {}

  void handle(const protocol::Message& m);
  // Whether `id` has said it is done (SHARD_DONE).
  bool finished(const std::string& id) const;

 private:
  void push(const protocol::Message& m, const std::string& group, const ShardMessage& msg);
  void answer(const std::string& to, uint64_t step, uint32_t shard);

  protocol::Node& node_;
  ShardStore& store_;
  std::map<std::string, std::string> labels_;
  std::chrono::milliseconds send_timeout_;
  protocol::ChangeSignal& changes_;
  uint32_t answer_tag_;
  protocol::CodecSpec codec_;
  mutable std::mutex mu_;
  std::set<std::string> finished_;
};

}  // namespace gossipd::daemon
