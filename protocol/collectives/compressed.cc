#include "protocol/collectives/compressed.h"

#include <memory>

#include "protocol/wire/errors.h"

namespace gossipd::protocol {

CompressedRing::CompressedRing(Kind kind, Group& group, std::span<float> data, ErrorFeedback& feedback,
                               std::span<const size_t> counts)
    : kind_(kind),
      group_(group),
      data_(data),
      feedback_(feedback),
      layout_(group, data.size(), counts, "compressed ring"),
      owned_(kind == Kind::kAllreduce ? (group.rank() + 1) % group.size() : group.rank()) {
  if (feedback_.spec().lossless())
    throw ProtocolConfigError("a compressed ring needs a lossy codec (float32 is ring_collectives.h)");
}

size_t CompressedRing::block(size_t k) const {
  const size_t n = group_.size();
  return (owned_ + n * (k / n + 1) - k) % n;
}

EncodedSegment CompressedRing::encode(BlockRange p) {
  const std::span<const float> x = data_.subspan(p.begin, p.size());
  EncodedSegment e = feedback_.encode(p.begin, x);
  feedback_.sent(p.begin, x, e);  // a failed call is undone by the caller
  return e;
}

void CompressedRing::run() {
  if (group_.size() == 1 || data_.empty()) return;
  CollectiveChannel channel(group_, "compressed ring");
  if (kind_ != Kind::kAllgather) reduce_scatter(channel);
  if (kind_ != Kind::kReduceScatter) allgather(channel, kind_ == Kind::kAllgather ? 0 : group_.size() - 1);
}

// Step s (0 .. n-2): block owned - 1 - s goes right, block owned - 2 - s
// comes from the left and is added; what came in at step s goes on at
// step s + 1, and the last to come in is the owned block, whole.
void CompressedRing::reduce_scatter(CollectiveChannel& channel) {
  const size_t n = group_.size(), right = group_.rank() + 1, left = group_.rank() + n - 1;
  const CodecSpec& spec = feedback_.spec();
  std::vector<float> got;
  for (size_t j = 0; j < layout_.pieces(); ++j) {
    const BlockRange p = layout_.piece(block(1), j);
    if (p.size() > 0) channel.send(right, 0, static_cast<uint32_t>(j), encode(p));
  }
  for (size_t s = 0; s + 1 < n; ++s) {
    for (size_t j = 0; j < layout_.pieces(); ++j) {
      const BlockRange p = layout_.piece(block(s + 2), j);
      if (p.size() == 0) continue;
      const auto step = static_cast<uint32_t>(s), chunk = static_cast<uint32_t>(j);
      const Message msg = channel.recv(left, step, chunk, spec, p.size());
      got.resize(p.size());
      decode(spec, msg.bytes(), got);  // recv checked its length
      float* dst = data_.data() + p.begin;
      for (size_t i = 0; i < got.size(); ++i) dst[i] += got[i];
      if (s + 2 < n) channel.send(right, step + 1, chunk, encode(p));
    }
  }
}

// The owned block is encoded once and keeps the decoded values; step
// first + t brings block owned - 1 - t from the left, decoded here and
// passed on as it came.
void CompressedRing::allgather(CollectiveChannel& channel, uint32_t first_step) {
  const size_t n = group_.size(), right = group_.rank() + 1, left = group_.rank() + n - 1;
  const CodecSpec& spec = feedback_.spec();
  for (size_t j = 0; j < layout_.pieces(); ++j) {
    const BlockRange p = layout_.piece(block(0), j);
    if (p.size() == 0) continue;
    const EncodedSegment e = encode(p);
    decode(spec, *e.bytes, data_.subspan(p.begin, p.size()));
    channel.send(right, first_step, static_cast<uint32_t>(j), e);
  }
  for (size_t t = 0; t + 1 < n; ++t) {
    for (size_t j = 0; j < layout_.pieces(); ++j) {
      const BlockRange p = layout_.piece(block(t + 1), j);
      if (p.size() == 0) continue;
      const auto step = static_cast<uint32_t>(first_step + t), chunk = static_cast<uint32_t>(j);
      const Message msg = channel.recv(left, step, chunk, spec, p.size());
      const std::span<const std::byte> bytes = msg.bytes();
      decode(spec, bytes, data_.subspan(p.begin, p.size()));
      if (t + 2 < n) {
        const EncodedSegment on{spec, p.size(),
                                std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end())};
        channel.send(right, step + 1, chunk, on);
      }
    }
  }
}

}  // namespace gossipd::protocol
