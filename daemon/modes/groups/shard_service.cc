#include "daemon/modes/groups/shard_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/modes/groups/shard_wire.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

ShardService::ShardService(protocol::Node& node, AliveMembers alive, protocol::ChangeSignal& changes,
                           ShardStore& store, std::map<std::string, std::string> labels,
                           std::chrono::milliseconds send_timeout, ShardTags tags, protocol::CodecSpec codec)
    : node_(node),
      alive_(std::move(alive)),
      changes_(changes),
      store_(store),
      send_timeout_(send_timeout),
      tags_(tags),
      requests_(node, store, std::move(labels), send_timeout, changes, tags.answer, codec),
      thread_([this](std::stop_token stop) { loop(stop); }) {}

ShardService::~ShardService() { thread_.request_stop(); }

void ShardService::follow_view() { store_.own(store_.layout().owned_by(node_.id(), alive_())); }

void ShardService::loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    follow_view();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    auto m = node_.mailbox().pop_tag(tags_.request, deadline, stop);
    if (!m) continue;
    try {
      requests_.handle(*m);
    } catch (const std::exception& e) {  // a peer gone while answering: its group resends or re-forms
      spdlog::debug("node '{}': serving a shard push from '{}': {}", node_.id(), m->envelope.sender(),
                    e.what());
    }
  }
}

void ShardService::finish(std::stop_token stop) {
  const auto everyone_done = [&] {
    const std::vector<std::string> alive = alive_();
    return std::all_of(alive.begin(), alive.end(),
                       [&](const std::string& id) { return id == node_.id() || requests_.finished(id); });
  };
  for (;;) {
    // The note at once, then every second until everyone is done: a note may be lost.
    for (const auto& id : alive_())
      if (id != node_.id())
        send_shard(node_, id, tags_.request, {proto::SHARD_DONE, 0, 0, {}}, {}, send_timeout_);
    if (changes_.wait_until(everyone_done, std::chrono::steady_clock::now() + std::chrono::seconds(1), stop))
      return;
    if (stop.stop_requested())
      throw protocol::Aborted(node_.id(), "serving shards until every group is done");
  }
}

}  // namespace gossipd::daemon
