#include "protocol/collectives/collective_channel.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <exception>
#include <map>
#include <tuple>

#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = CollectiveChannel::Clock;

// libzmq frees dropped frames within a few I/O loop iterations after a
// socket closes; if it has not after this long, memory safety is gone.
constexpr std::chrono::seconds kReleaseGrace{10};

}  // namespace

void send_chunk(Node& node, const std::string& peer, const ChunkAddress& at, proto::DType dtype,
                uint64_t count, OutFrame payload, std::chrono::milliseconds timeout, uint32_t codec_block) {
  proto::Envelope env = node.envelope(proto::COLLECTIVE_CHUNK);
  env.set_collective_tag(at.tag);
  env.set_collective_seq(at.seq);
  env.set_step(at.step);
  env.set_chunk(at.chunk);
  env.set_count(count);
  env.set_dtype(dtype);
  if (codec_block != 0) env.set_codec_block(codec_block);
  std::vector<OutFrame> frames;
  frames.reserve(2);
  frames.push_back(envelope_frame(env));
  frames.push_back(std::move(payload));
  node.transport().send(peer, std::move(frames), timeout);
}

namespace {

// Pieces as ZeroMQ messages through the node's transport and mailbox.
class ZmqPath : public CollectiveChannel::Path {
 public:
  ZmqPath(Group& group, uint64_t seq) : group_(group), seq_(seq) {}
  ~ZmqPath() override { group_.node().mailbox().finish(group_.tag(), seq_); }

  void send(size_t to_rank, uint32_t step, uint32_t chunk, const CollectiveChannel::Piece& piece,
            std::shared_ptr<const void> owner) override {
    send_chunk(group_.node(), group_.member(to_rank), {group_.tag(), seq_, step, chunk}, piece.dtype,
               piece.count, OutFrame::borrowed(piece.data, piece.bytes, std::move(owner)),
               group_.options().timeout, piece.codec_block);
  }

  std::optional<Message> next(size_t from_rank, uint32_t step, uint32_t chunk,
                              Clock::time_point deadline) override;

  bool wait_slot(SendTracker& tracker, size_t slot, Clock::time_point deadline) override {
    return tracker.wait(slot, deadline);
  }
  bool wait_all(SendTracker& tracker, Clock::time_point deadline) override {
    return tracker.wait_all(deadline);
  }

  void release(SendTracker& tracker, std::span<const size_t> to_ranks) override {
    if (tracker.wait_all(Clock::now())) return;
    for (size_t r : to_ranks) {
      if (r % group_.size() != group_.rank()) group_.node().transport().reset(group_.member(r));
    }
    if (!tracker.wait_all(Clock::now() + kReleaseGrace)) {
      spdlog::critical("node '{}': transport kept a zero-copy buffer after reset; aborting",
                       group_.node().id());
      std::terminate();
    }
  }

 private:
  Group& group_;
  uint64_t seq_;
  // Pieces that came before their turn (the network reordered them), by
  // (sender rank, step, chunk). Transports keep order; this is for when one
  // does not.
  std::map<std::tuple<size_t, uint32_t, uint32_t>, Message> early_;
};

std::optional<Message> ZmqPath::next(size_t from_rank, uint32_t step, uint32_t chunk,
                                     Clock::time_point deadline) {
  Node& node = group_.node();
  const std::string& peer = group_.member(from_rank);
  const ChunkKey key{group_.tag(), seq_, peer};
  for (;;) {
    std::optional<Message> msg;
    if (auto it = early_.find({from_rank, step, chunk}); it != early_.end()) {
      msg = std::move(it->second);
      early_.erase(it);
    } else {
      msg = node.mailbox().pop_chunk(key, deadline, group_.options().stop);
    }
    if (!msg) return std::nullopt;
    const auto& env = msg->envelope;
    if (std::make_pair(env.step(), env.chunk()) > std::make_pair(step, chunk)) {
      early_.insert_or_assign({from_rank, env.step(), env.chunk()}, std::move(*msg));
      continue;
    }
    if (env.step() != step || env.chunk() != chunk) {  // a duplicate of one already taken
      node.reject_log().reject(peer, RejectReason::kUnexpected,
                               "step " + std::to_string(env.step()) + " chunk " +
                                   std::to_string(env.chunk()) + ", expected " + std::to_string(step) + "/" +
                                   std::to_string(chunk));
      continue;
    }
    return msg;
  }
}

}  // namespace

CollectiveChannel::CollectiveChannel(Group& group, std::string what)
    : group_(group), what_(std::move(what)), seq_(group.next_seq()) {
  if (group_.wire()) {
    path_ = make_direct_path(group_, seq_, what_);
  } else {
    path_ = std::make_unique<ZmqPath>(group_, seq_);
  }
}

CollectiveChannel::~CollectiveChannel() = default;

void CollectiveChannel::send(size_t to_rank, uint32_t step, uint32_t chunk, std::span<const float> data,
                             std::shared_ptr<const void> owner) {
  group_.node().count_payload_sent(data.size_bytes());
  const Piece piece{proto::DTYPE_FLOAT32, 0, data.size(), reinterpret_cast<const std::byte*>(data.data()),
                    data.size_bytes()};
  path_->send(to_rank, step, chunk, piece, std::move(owner));
}

void CollectiveChannel::send(size_t to_rank, uint32_t step, uint32_t chunk, const EncodedSegment& data) {
  const auto& bytes = *data.bytes;
  group_.node().count_payload_sent(bytes.size());
  const uint32_t block = data.spec.codec == Codec::kInt8 ? data.spec.block : 0;
  const Piece piece{codec_dtype(data.spec.codec), block, data.count, bytes.data(), bytes.size()};
  path_->send(to_rank, step, chunk, piece, data.bytes);
}

Message CollectiveChannel::recv(size_t from_rank, uint32_t step, uint32_t chunk, const CodecSpec& spec,
                                size_t count) {
  const auto deadline = Clock::now() + group_.options().timeout;
  for (;;) {
    std::optional<Message> msg = path_->next(from_rank, step, chunk, deadline);
    if (!msg) missed(from_rank, step);
    if (fits(*msg, from_rank, spec, count)) return std::move(*msg);
  }
}

Message CollectiveChannel::recv(size_t from_rank, uint32_t step, uint32_t chunk, size_t count) {
  const auto deadline = Clock::now() + group_.options().timeout;
  for (;;) {
    std::optional<Message> msg = path_->next(from_rank, step, chunk, deadline);
    if (!msg) missed(from_rank, step);
    if (fits(*msg, from_rank, count)) return std::move(*msg);
  }
}

void CollectiveChannel::recv_into(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst,
                                  Fold fold) {
  const auto deadline = Clock::now() + group_.options().timeout;
  for (;;) {
    Path::Received got = path_->next_into(from_rank, step, chunk, dst, fold, deadline);
    if (got.landed) return;
    if (!got.msg) missed(from_rank, step);
    if (!fits(*got.msg, from_rank, dst.size())) continue;
    const std::byte* src = got.msg->payload[0].data();
    if (fold == Fold::kAdd) {
      add_floats(dst.data(), src, dst.size());
    } else {
      std::memcpy(dst.data(), src, dst.size_bytes());
    }
    return;
  }
}

void CollectiveChannel::expect(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst,
                               Fold fold) {
  path_->expect(from_rank, step, chunk, dst, fold);
}

void CollectiveChannel::missed(size_t from_rank, uint32_t step) const {
  Node& node = group_.node();
  if (group_.options().stop.stop_requested()) throw Aborted(node.id(), what_);
  throw PeerTimeout(
      node.id(), group_.member(from_rank), group_.options().timeout,
      what_ + " (group " + std::to_string(group_.tag()) + ", step " + std::to_string(step) + ")");
}

bool CollectiveChannel::fits(const Message& msg, size_t from_rank, size_t count) const {
  const auto& env = msg.envelope;
  if (env.count() == count && env.dtype() == proto::DTYPE_FLOAT32) return true;
  group_.node().reject_log().reject(
      group_.member(from_rank), RejectReason::kSizeMismatch,
      std::to_string(env.count()) + " elements, expected " + std::to_string(count));
  return false;
}

bool CollectiveChannel::fits(const Message& msg, size_t from_rank, const CodecSpec& spec,
                             size_t count) const {
  const auto& env = msg.envelope;
  const std::optional<CodecSpec> sent = declared_spec(env);
  if (!sent || !(*sent == spec)) {
    group_.node().reject_log().reject(
        group_.member(from_rank), RejectReason::kCodec,
        "a piece in dtype " + std::to_string(env.dtype()) + ", agreed on " + spec_name(spec));
    return false;
  }
  const size_t bytes = msg.payload.empty() ? 0 : msg.payload[0].size();
  if (env.count() == count && bytes == encoded_bytes(spec, count)) return true;
  group_.node().reject_log().reject(group_.member(from_rank), RejectReason::kSizeMismatch,
                                    std::to_string(env.count()) + " values in " + std::to_string(bytes) +
                                        " bytes, expected " + std::to_string(count));
  return false;
}

bool CollectiveChannel::wait_slot(SendTracker& tracker, size_t slot, Clock::time_point deadline) {
  return path_->wait_slot(tracker, slot, deadline);
}

void CollectiveChannel::release_sends(SendTracker& tracker, std::span<const size_t> to_ranks) {
  path_->release(tracker, to_ranks);
}

void CollectiveChannel::wait_sent(SendTracker& tracker, size_t to_rank) {
  if (path_->wait_all(tracker, Clock::now() + group_.options().timeout)) return;
  throw PeerTimeout(group_.node().id(), group_.member(to_rank), group_.options().timeout,
                    what_ + " (final send)");
}

}  // namespace gossipd::protocol
