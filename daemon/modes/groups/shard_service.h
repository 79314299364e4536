#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

#include "daemon/modes/groups/shard_requests.h"
#include "daemon/modes/groups/shard_store.h"
#include "protocol/transport/node.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/message.h"

namespace gossipd::daemon {

// The members of the latest view, sorted (Membership's, or a test's).
using AliveMembers = std::function<std::vector<std::string>()>;

// Serves the shards this member owns on a thread of its own (each request
// as ShardRequests says), so a group's push is applied and answered whatever
// this member's own group is doing. It follows the view: shards move to it
// when their owner leaves (and wait for a group's seed), and leave it when
// it no longer owns them.
class ShardService {
 public:
  // `changes` is notified when the view changes (Membership::changes());
  // the service notifies it too when a member says it is done.
  // Requests come on `tags.request`, answers go on `tags.answer`.
  ShardService(protocol::Node& node, AliveMembers alive, protocol::ChangeSignal& changes, ShardStore& store,
               std::map<std::string, std::string> labels, std::chrono::milliseconds send_timeout,
               ShardTags tags, protocol::CodecSpec codec = {});
  ~ShardService();  // stops the thread
  ShardService(const ShardService&) = delete;
  ShardService& operator=(const ShardService&) = delete;

  // The shards of the latest view's owners are this member's (called by the
  // thread, and by the training thread before a step).
  void follow_view();
  // Tells every other member that this one has trained its epochs, and goes
  // on serving until every member of the view has said so too (a member that
  // dies leaves the view): a group that finishes early never takes its
  // shards away from the groups still training. Aborted when `stop` fires.
  void finish(std::stop_token stop);

 private:
  void loop(std::stop_token stop);

  protocol::Node& node_;
  AliveMembers alive_;
  protocol::ChangeSignal& changes_;
  ShardStore& store_;
  std::chrono::milliseconds send_timeout_;
  ShardTags tags_;
  ShardRequests requests_;
  std::jthread thread_;  // last: stops before the members it uses
};

}  // namespace gossipd::daemon
