#include "protocol/compressed_allreduce.h"

#include <algorithm>
#include <memory>

#include "protocol/errors.h"

namespace gossipd::protocol {

CompressedAllreduce::CompressedAllreduce(Group& group, std::span<float> data, ErrorFeedback& feedback)
    : group_(group),
      data_(data),
      feedback_(feedback),
      layout_(group, data.size(), {}, "compressed allreduce") {
  if (feedback_.spec().lossless())
    throw ProtocolConfigError("CompressedAllreduce needs a lossy codec (float32 is Allreduce)");
}

size_t CompressedAllreduce::block_at(size_t step) const {
  const size_t n = group_.size();
  return (group_.rank() + n * (step + 1) - step) % n;
}

EncodedSegment CompressedAllreduce::encode(BlockRange p) {
  const std::span<const float> x = data_.subspan(p.begin, p.size());
  EncodedSegment e = feedback_.encode(p.begin, x);
  feedback_.sent(p.begin, x, e);  // a failed call is undone by the caller
  return e;
}

void CompressedAllreduce::run() {
  if (group_.size() == 1 || data_.empty()) return;
  CollectiveChannel channel(group_, "compressed allreduce");
  reduce_scatter(channel);
  allgather(channel);
}

// Step s (0 .. n-2): block r - s goes right, block r - s - 1 comes from the
// left and is added; what came in at step s goes on at step s + 1.
void CompressedAllreduce::reduce_scatter(CollectiveChannel& channel) {
  const size_t n = group_.size(), right = group_.rank() + 1, left = group_.rank() + n - 1;
  const CodecSpec& spec = feedback_.spec();
  std::vector<float> got;
  for (size_t j = 0; j < layout_.pieces(); ++j) {
    const BlockRange p = layout_.piece(block_at(0), j);
    if (p.size() > 0) channel.send(right, 0, static_cast<uint32_t>(j), encode(p));
  }
  for (size_t s = 0; s + 1 < n; ++s) {
    const size_t block = block_at(s + 1);
    for (size_t j = 0; j < layout_.pieces(); ++j) {
      const BlockRange p = layout_.piece(block, j);
      if (p.size() == 0) continue;
      const auto step = static_cast<uint32_t>(s), chunk = static_cast<uint32_t>(j);
      const Message msg = channel.recv(left, step, chunk, spec, p.size());
      got.resize(p.size());
      decode(spec, msg.bytes(), got);  // fits() checked its length
      float* dst = data_.data() + p.begin;
      for (size_t i = 0; i < got.size(); ++i) dst[i] += got[i];
      if (s + 2 < n) channel.send(right, step + 1, chunk, encode(p));
    }
  }
}

// This member owns block r + 1: it encodes it once and keeps the decoded
// values; step n - 1 + t brings block r - t from the left, decoded here and
// passed on as it came.
void CompressedAllreduce::allgather(CollectiveChannel& channel) {
  const size_t n = group_.size(), right = group_.rank() + 1, left = group_.rank() + n - 1;
  const CodecSpec& spec = feedback_.spec();
  const auto first = static_cast<uint32_t>(n - 1);
  for (size_t j = 0; j < layout_.pieces(); ++j) {
    const BlockRange p = layout_.piece(block_at(n - 1), j);
    if (p.size() == 0) continue;
    const EncodedSegment e = encode(p);
    decode(spec, *e.bytes, data_.subspan(p.begin, p.size()));
    channel.send(right, first, static_cast<uint32_t>(j), e);
  }
  for (size_t t = 0; t + 1 < n; ++t) {
    const size_t block = block_at(t);
    for (size_t j = 0; j < layout_.pieces(); ++j) {
      const BlockRange p = layout_.piece(block, j);
      if (p.size() == 0) continue;
      const auto step = static_cast<uint32_t>(first + t), chunk = static_cast<uint32_t>(j);
      const Message msg = channel.recv(left, step, chunk, spec, p.size());
      const std::span<const std::byte> bytes = msg.bytes();
      decode(spec, bytes, data_.subspan(p.begin, p.size()));
      if (t + 2 < n) {
        EncodedSegment on{spec, p.size(),
                          std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end())};
        channel.send(right, step + 1, chunk, on);
      }
    }
  }
}

}  // namespace gossipd::protocol
