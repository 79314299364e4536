#include "daemon/groups/shard_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "daemon/groups/shard_wire.h"
#include "protocol/errors.h"

namespace gossipd::daemon {

ShardService::ShardService(protocol::Node& node, AliveMembers alive, ShardStore& store,
                           std::map<std::string, std::string> labels, std::chrono::milliseconds send_timeout)
    : node_(node),
      alive_(std::move(alive)),
      store_(store),
      labels_(std::move(labels)),
      send_timeout_(send_timeout),
      thread_([this](std::stop_token stop) { loop(stop); }) {}

ShardService::~ShardService() { thread_.request_stop(); }

void ShardService::follow_view() { store_.own(store_.layout().owned_by(node_.id(), alive_())); }

void ShardService::loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    follow_view();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    auto m = node_.mailbox().pop_tag(kShardRequestTag, deadline, stop);
    if (!m) continue;
    try {
      serve(*m);
    } catch (const std::exception& e) {  // a peer gone while answering: its group resends or re-forms
      spdlog::debug("node '{}': serving a shard push from '{}': {}", node_.id(), m->envelope.sender(),
                    e.what());
    }
  }
}

void ShardService::serve(const protocol::Message& m) {
  const std::string& from = m.envelope.sender();
  const auto msg = read_shard(node_, m);
  if (!msg) return;
  const auto group = labels_.find(from);
  if (group != labels_.end() && msg->kind == proto::SHARD_DONE) {
    std::lock_guard lock(finished_mu_);
    finished_.insert(from);
    return;
  }
  if (group == labels_.end() || (msg->kind != proto::SHARD_PUSH && msg->kind != proto::SHARD_SEED)) {
    node_.reject_log().reject(
        from, protocol::RejectReason::kUnexpected,
        "shard message of kind " + std::to_string(msg->kind) + " from outside the groups");
    return;
  }
  if (msg->kind == proto::SHARD_SEED) {
    store_.seed(msg->shard, shard_values(m), msg->note.version());
    return;
  }
  const ShardPush push{group->second, msg->step,      msg->note.version(), msg->note.learning_rate(),
                       msg->shard,    shard_values(m)};
  switch (store_.push(push)) {
    case PushOutcome::kApplied:
      break;
    case PushOutcome::kDuplicate:
      node_.reject_log().reject(from, protocol::RejectReason::kStale,
                                "shard " + std::to_string(msg->shard) + " push of step " +
                                    std::to_string(msg->step) + " already applied (answered again)");
      break;
    case PushOutcome::kNotOwned:
      node_.reject_log().reject(
          from, protocol::RejectReason::kSegment,
          "push for shard " + std::to_string(msg->shard) + ", which this member does not own");
      return;
    case PushOutcome::kMisSized:
      node_.reject_log().reject(from, protocol::RejectReason::kSizeMismatch,
                                "push for shard " + std::to_string(msg->shard) + " with " +
                                    std::to_string(push.grad.size()) + " elements");
      return;
    case PushOutcome::kUnseeded:
      send_shard(node_, from, kShardAnswerTag, {proto::SHARD_UNSEEDED, msg->step, msg->shard, {}}, {},
                 send_timeout_);
      return;
  }
  answer(from, msg->step, msg->shard);
}

void ShardService::finish(std::stop_token stop) {
  using Clock = std::chrono::steady_clock;
  auto next_note = Clock::now();
  for (;;) {
    const std::vector<std::string> alive = alive_();
    if (Clock::now() >= next_note) {  // at once, then every second: a note may be lost
      for (const auto& id : alive)
        if (id != node_.id())
          send_shard(node_, id, kShardRequestTag, {proto::SHARD_DONE, 0, 0, {}}, {}, send_timeout_);
      next_note = Clock::now() + std::chrono::seconds(1);
    }
    {
      std::lock_guard lock(finished_mu_);
      if (std::all_of(alive.begin(), alive.end(),
                      [&](const std::string& id) { return id == node_.id() || finished_.contains(id); }))
        return;
    }
    if (stop.stop_requested())
      throw protocol::Aborted(node_.id(), "serving shards until every group is done");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ShardService::answer(const std::string& to, uint64_t step, uint32_t shard) {
  std::vector<float> values(store_.layout().range(shard).size());
  const auto version = store_.read(shard, values);
  if (!version) return;  // moved away meanwhile: the group resends to the new owner
  ShardMessage fresh{proto::SHARD_FRESH, step, shard, {}};
  fresh.note.set_version(*version);
  send_shard(node_, to, kShardAnswerTag, fresh, values, send_timeout_);
}

}  // namespace gossipd::daemon
