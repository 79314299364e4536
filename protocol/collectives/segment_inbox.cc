#include "protocol/collectives/segment_inbox.h"

#include "protocol/transport/modelled_losses.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::protocol {

SegmentInbox::SegmentInbox(Node& node, uint32_t tag, uint64_t round, bool finish, CodecSpec codec)
    : node_(node), tag_(tag), round_(round), finish_(finish), codec_(codec) {}

SegmentInbox::~SegmentInbox() {
  if (!finish_) return;
  node_.mailbox().finish(tag_, round_);
  node_.mailbox().finish(tags::ready_tag(tag_), round_, Mailbox::Late::kExpected);  // notes are repeated
}

void SegmentInbox::announce_ready(const std::string& peer) {
  announced_.insert(peer);
  send_note(peer);
}

void SegmentInbox::send_note(const std::string& peer) {
  proto::Envelope env = node_.envelope(proto::COLLECTIVE_CHUNK);
  env.set_round(round_);
  env.set_collective_tag(tags::ready_tag(tag_));
  env.set_collective_seq(round_);
  env.set_count(0);
  env.set_dtype(proto::DTYPE_FLOAT32);
  std::vector<OutFrame> frames;
  frames.push_back(envelope_frame(env));
  frames.push_back(OutFrame::copy_of(nullptr, 0));
  try {
    node_.transport().send(peer, std::move(frames), std::chrono::milliseconds(0));
  } catch (const TransportError&) {  // a full queue or a member that just left: it sends late or not at all
  }
}

std::optional<Message> SegmentInbox::pop(const ChunkKey& key, std::chrono::steady_clock::time_point deadline,
                                         std::stop_token stop, std::chrono::milliseconds renudge) {
  for (;;) {
    const auto until =
        renudge.count() > 0 ? std::min(deadline, std::chrono::steady_clock::now() + renudge) : deadline;
    auto msg = node_.mailbox().pop_chunk(key, until, stop);
    if (msg || until >= deadline || stop.stop_requested()) return msg;
    // Still waiting: our notes may have been lost, and their peers may be
    // waiting on them (while we wait on theirs).
    for (const auto& p : announced_) send_note(p);
  }
}

bool SegmentInbox::await_ready(const std::string& peer, std::chrono::steady_clock::time_point deadline,
                               std::stop_token stop, std::chrono::milliseconds renudge) {
  if (ready_.count(peer)) return true;
  if (!pop(ChunkKey{tags::ready_tag(tag_), round_, peer}, deadline, stop, renudge)) return false;
  ready_.insert(peer);
  return true;
}

size_t SegmentInbox::send(const std::string& peer, uint32_t segment, std::span<const float> data,
                          std::optional<double> weight, std::chrono::milliseconds timeout,
                          std::optional<uint64_t> sender_step) {
  return send_frame(peer, segment, data.size(), CodecSpec{},
                    OutFrame::copy_of(data.data(), data.size_bytes()), weight, timeout, sender_step);
}

size_t SegmentInbox::send(const std::string& peer, uint32_t segment, const EncodedSegment& data,
                          std::optional<double> weight, std::chrono::milliseconds timeout,
                          std::optional<uint64_t> sender_step) {
  return send_frame(peer, segment, data.count, data.spec,
                    OutFrame::borrowed(data.bytes->data(), data.bytes->size(), data.bytes), weight, timeout,
                    sender_step);
}

size_t SegmentInbox::send_frame(const std::string& peer, uint32_t segment, size_t count, CodecSpec spec,
                                OutFrame payload, std::optional<double> weight,
                                std::chrono::milliseconds timeout, std::optional<uint64_t> sender_step) {
  proto::Envelope env = node_.envelope(proto::SEGMENT);
  env.set_round(round_);
  env.set_collective_tag(tag_);
  env.set_collective_seq(round_);
  env.set_segment_id(segment);
  env.set_offset(0);
  env.set_count(count);
  env.set_dtype(codec_dtype(spec.codec));
  if (spec.codec == Codec::kInt8) env.set_codec_block(spec.block);
  if (weight) env.set_push_sum_weight(*weight);
  if (sender_step) env.set_sender_step(*sender_step);
  std::vector<OutFrame> frames;
  frames.push_back(envelope_frame(env));
  frames.push_back(std::move(payload));
  const size_t bytes = frames[0].size + frames[1].size;
  try {
    node_.transport().send(peer, std::move(frames), timeout);
  } catch (const TransportError&) {  // a full queue (PeerTimeout) or a member that just left (PeerGone)
    return 0;
  }
  return bytes;
}

std::optional<Message> SegmentInbox::finite(const std::string& peer, uint32_t segment, Message msg) {
  if (all_finite(msg.bytes())) return msg;
  refused_.insert({peer, segment});
  node_.reject_log().reject(peer, RejectReason::kNonFinite,
                            "segment " + std::to_string(segment) +
                                " holding NaN or an infinity (skipped, and held against its sender)");
  return std::nullopt;
}

std::optional<Message> SegmentInbox::accept(const std::string& peer, uint32_t segment, size_t count,
                                            Message msg) {
  const std::string what = "segment " + std::to_string(segment);
  if (msg.envelope.count() != count || msg.envelope.offset() != 0) {
    node_.reject_log().reject(peer, RejectReason::kSegment,
                              what + " with " + std::to_string(msg.envelope.count()) +
                                  " elements at offset " + std::to_string(msg.envelope.offset()) +
                                  ", expected " + std::to_string(count));
    return std::nullopt;
  }
  const auto spec = declared_spec(msg.envelope);
  if (!spec || !(*spec == codec_)) {
    node_.reject_log().reject(peer, RejectReason::kCodec,
                              what + " in dtype " + std::to_string(msg.envelope.dtype()) +
                                  ", this run agreed to --compress " + spec_name(codec_));
    return std::nullopt;
  }
  if (codec_.lossless()) return msg;
  // Decoded straight into the frame's bytes (new'd storage, aligned for float).
  std::vector<std::byte> plain(count * sizeof(float));
  if (!decode(codec_, msg.bytes(), std::span<float>(reinterpret_cast<float*>(plain.data()), count))) {
    node_.reject_log().reject(peer, RejectReason::kCodec, what + " with a scale that is not a finite number");
    return std::nullopt;
  }
  msg.payload.at(0) = Frame(std::move(plain));
  msg.envelope.set_dtype(proto::DTYPE_FLOAT32);
  msg.envelope.clear_codec_block();
  return msg;
}

std::optional<Message> SegmentInbox::receive(const std::string& peer, uint32_t segment, size_t count,
                                             std::chrono::steady_clock::time_point deadline,
                                             std::stop_token stop, std::chrono::milliseconds renudge) {
  // A modelled network's late or dropped segment: skipped as the deadline
  // would skip it; if it came, it is dropped with the round as stale.
  const ModelledLosses* losses = node_.transport().modelled_losses();
  if (losses && losses->lost(round_, peer, node_.id(), segment)) return std::nullopt;
  if (auto it = early_.find({peer, segment}); it != early_.end()) {
    Message m = std::move(it->second);
    early_.erase(it);
    if (auto ok = accept(peer, segment, count, std::move(m))) return finite(peer, segment, std::move(*ok));
  }
  const ChunkKey key{tag_, round_, peer};
  for (;;) {
    auto msg = pop(key, deadline, stop, renudge);
    if (!msg) return std::nullopt;
    const uint32_t got = msg->envelope.segment_id();
    if (got != segment) {
      // The sender skipped `segment` (its send timed out) or this one
      // overtook it: keep it for when it is asked for.
      early_.insert_or_assign({peer, got}, std::move(*msg));
      if (got > segment) return std::nullopt;  // sent in order: `segment` is not coming
      continue;
    }
    // Its one segment `segment` this round: a refused one is not coming again.
    if (auto ok = accept(peer, segment, count, std::move(*msg))) return finite(peer, segment, std::move(*ok));
  }
}

}  // namespace gossipd::protocol
