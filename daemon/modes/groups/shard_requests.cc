#include "daemon/modes/groups/shard_requests.h"

#include "daemon/modes/groups/shard_wire.h"
#include "protocol/wire/codec.h"

namespace gossipd::daemon {

bool ShardRequests::finished(const std::string& id) const {
  std::lock_guard lock(mu_);
  return finished_.contains(id);
}

void ShardRequests::handle(const protocol::Message& m) {
  const std::string& from = m.envelope.sender();
  const auto msg = read_shard(node_, m, codec_);
  if (!msg) return;
  const auto group = labels_.find(from);
  const bool known = group != labels_.end();
  if (known && msg->kind == proto::SHARD_DONE) {
    {
      std::lock_guard lock(mu_);
      finished_.insert(from);
    }
    changes_.notify();
  } else if (known && msg->kind == proto::SHARD_SEED) {
    store_.seed(msg->shard, shard_values(m), msg->note.version());
  } else if (known && msg->kind == proto::SHARD_PUSH) {
    push(m, group->second, *msg);
  } else {
    node_.reject_log().reject(from, protocol::RejectReason::kUnexpected,
                              "shard message of kind " + std::to_string(msg->kind) +
                                  (known ? " sent to an owner" : " from outside the groups"));
  }
}

void ShardRequests::push(const protocol::Message& m, const std::string& group, const ShardMessage& msg) {
  const uint64_t step = msg.step;
  const uint32_t shard = msg.shard;
  const std::string& from = m.envelope.sender();
  const proto::ShardNote& note = msg.note;
  std::vector<float> scratch;  // only where the frame cannot be read in place
  const std::span<const float> grad = shard_view(m, scratch);
  if (!protocol::all_finite(std::as_bytes(std::span<const float>(grad)))) {
    // Held against the sender; the group goes on with the shard as it was.
    node_.reject_log().reject(from, protocol::RejectReason::kNonFinite,
                              "shard " + std::to_string(shard) + " push of step " + std::to_string(step) +
                                  " holds NaN or an infinity: not applied");
    store_.refused(from);
    answer(from, step, shard);
    return;
  }
  const ShardPush push{group, step, note.version(), note.learning_rate(), shard, grad, from};
  const PushOutcome outcome = store_.apply_only(push);
  switch (outcome) {
    case PushOutcome::kApplied:
    case PushOutcome::kRefused:  // a named pusher's (--robust): answered, its group goes on
      break;
    case PushOutcome::kDuplicate:
      node_.reject_log().reject(from, protocol::RejectReason::kStale,
                                "shard " + std::to_string(shard) + " push of step " + std::to_string(step) +
                                    " already applied (answered again)");
      break;
    case PushOutcome::kNotOwned:
      node_.reject_log().reject(
          from, protocol::RejectReason::kSegment,
          "push for shard " + std::to_string(shard) + ", which this member does not own");
      return;
    case PushOutcome::kMisSized:
      node_.reject_log().reject(from, protocol::RejectReason::kSizeMismatch,
                                "push for shard " + std::to_string(shard) + " with " +
                                    std::to_string(push.grad.size()) + " elements");
      return;
    case PushOutcome::kUnseeded:
      send_shard(node_, from, answer_tag_, {proto::SHARD_UNSEEDED, step, shard, {}}, {}, send_timeout_);
      return;
  }
  answer(from, step, shard);
  if (outcome == PushOutcome::kApplied) store_.line_up(push);  // after the answer: off the group's wait
}

void ShardRequests::answer(const std::string& to, uint64_t step, uint32_t shard) {
  const size_t count = store_.layout().range(shard).size();
  // Read straight into the frame the transport sends (no copy of a copy).
  std::shared_ptr<float[]> frame = std::make_shared_for_overwrite<float[]>(count);
  const std::span<float> values(frame.get(), count);
  const auto version = store_.read(shard, values);
  if (!version) return;  // moved away meanwhile: the group resends to the new owner
  ShardMessage fresh{proto::SHARD_FRESH, step, shard, {}};
  fresh.note.set_version(*version);
  if (codec_.lossless()) {
    send_shard_frame(node_, to, answer_tag_, fresh, count,
                     protocol::OutFrame::borrowed(frame.get(), count * sizeof(float), frame), send_timeout_);
    return;
  }
  // The store's values are exact: each answer rounds them afresh, nothing to carry.
  const protocol::EncodedSegment encoded{
      codec_, values.size(),
      std::make_shared<const std::vector<std::byte>>(protocol::encode(codec_, values))};
  send_encoded_shard(node_, to, answer_tag_, fresh, encoded, send_timeout_);
}

}  // namespace gossipd::daemon
