#include "protocol/butterfly_collectives.h"

#include "protocol/errors.h"

namespace gossipd::protocol {
namespace {

const char* name_of(Butterfly::Kind kind) {
  return kind == Butterfly::Kind::kReduceScatter ? "reduce-scatter" : "allgather";
}

}  // namespace

Butterfly::Butterfly(Group& group, std::span<float> data, Kind kind, std::span<const size_t> counts)
    : group_(group), data_(data), kind_(kind) {
  if (!power_of_two(group.size())) {
    throw ProtocolConfigError(std::string(name_of(kind)) +
                              ": the butterfly needs a power-of-two group, not " +
                              std::to_string(group.size()));
  }
  blocks_ = block_layout(data.size(), group.size(), counts, name_of(kind));
}

BlockRange Butterfly::span_of(size_t lo, size_t hi) const { return {blocks_[lo].begin, blocks_[hi - 1].end}; }

void Butterfly::run() {
  CollectiveChannel channel(group_, name_of(kind_));
  const size_t n = group_.size();
  const size_t rank = group_.rank();
  if (n == 1 || data_.empty()) return;
  SendTracker tracker(1);
  size_t partner = rank;
  try {
    uint32_t step = 0;
    if (kind_ == Kind::kReduceScatter) {
      size_t lo = 0, hi = n;
      for (size_t d = n / 2; d >= 1; d /= 2, ++step) {
        partner = rank ^ d;
        const size_t mid = lo + (hi - lo) / 2;
        const bool upper = (rank & d) != 0;
        const BlockRange keep = upper ? span_of(mid, hi) : span_of(lo, mid);
        exchange(channel, tracker, step, partner, upper ? span_of(lo, mid) : span_of(mid, hi), keep);
        (upper ? lo : hi) = mid;
      }
    } else {
      for (size_t d = 1; d < n; d *= 2, ++step) {
        partner = rank ^ d;
        const size_t mine = rank / d * d, theirs = partner / d * d;
        exchange(channel, tracker, step, partner, span_of(mine, mine + d), span_of(theirs, theirs + d));
      }
    }
    channel.wait_sent(tracker, partner);
  } catch (...) {
    // Sends are not waited for step by step: any partner may hold some.
    std::vector<size_t> partners;
    for (size_t d = 1; d < n; d *= 2) partners.push_back(rank ^ d);
    channel.release_sends(tracker, partners);
    throw;
  }
}

// Sends `out` to the partner and folds the partner's `in` into ours, both in
// pieces of chunk_bytes (the partner cuts its `out`, our `in`, the same way).
// `out` and `in` never overlap, and what a rank sent is never written later
// in the call, so sends need no wait before the end.
void Butterfly::exchange(CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t partner,
                         BlockRange out, BlockRange in) {
  const auto pieces_of = [&](BlockRange r) { return piece_count(r.size(), group_.options()); };
  const size_t in_pieces = pieces_of(in);
  const auto fold =
      kind_ == Kind::kReduceScatter ? CollectiveChannel::Fold::kAdd : CollectiveChannel::Fold::kCopy;
  const auto in_piece = [&](size_t j) {
    const BlockRange p = block_range(in.size(), in_pieces, j);
    return data_.subspan(in.begin + p.begin, p.size());
  };
  for (size_t j = 0; j < in_pieces; ++j)
    channel.expect(partner, step, static_cast<uint32_t>(j), in_piece(j), fold);
  const size_t out_pieces = pieces_of(out);
  for (size_t j = 0; j < out_pieces; ++j) {
    const BlockRange p = block_range(out.size(), out_pieces, j);
    channel.send(partner, step, static_cast<uint32_t>(j), data_.subspan(out.begin + p.begin, p.size()),
                 tracker.token(0));
  }
  for (size_t j = 0; j < in_pieces; ++j)
    channel.recv_into(partner, step, static_cast<uint32_t>(j), in_piece(j), fold);
}

void AllreduceButterfly::run() {
  Butterfly(group_, data_, Butterfly::Kind::kReduceScatter).run();
  Butterfly(group_, data_, Butterfly::Kind::kAllgather).run();
}

}  // namespace gossipd::protocol
