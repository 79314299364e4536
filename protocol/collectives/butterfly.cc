#include "protocol/collectives/butterfly.h"

#include "protocol/wire/errors.h"

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

std::span<float> Butterfly::piece(BlockRange r, size_t j) const {
  const BlockRange p = block_range(r.size(), piece_count(r.size(), group_.options()), j);
  return data_.subspan(r.begin + p.begin, p.size());
}

void Butterfly::run() {
  const size_t n = group_.size();
  if (n == 1 || data_.empty()) return;
  CollectiveChannel channel(group_, name_of(kind_));
  SendTracker tracker(1);
  try {
    uint32_t step = 0;
    if (kind_ == Kind::kReduceScatter) {
      size_t lo = 0, hi = n;
      for (size_t d = n / 2; d >= 1; d /= 2) halve(channel, tracker, step++, d, lo, hi);
    } else {
      for (size_t d = 1; d < n; d *= 2) double_up(channel, tracker, step++, d);
    }
    channel.wait_sent(tracker, group_.rank() ^ 1);
  } catch (...) {
    release(channel, tracker);
    throw;
  }
}

Butterfly::Halves Butterfly::halves(size_t d, size_t lo, size_t hi) const {
  const size_t mid = lo + (hi - lo) / 2;
  const bool upper = (group_.rank() & d) != 0;
  return upper ? Halves{span_of(mid, hi), span_of(lo, mid), mid}
               : Halves{span_of(lo, mid), span_of(mid, hi), mid};
}

void Butterfly::halve(CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t d, size_t& lo,
                      size_t& hi) {
  const Halves h = halves(d, lo, hi);
  exchange(channel, tracker, step, group_.rank() ^ d, h.give, h.keep, Fold::kAdd);
  ((group_.rank() & d) != 0 ? lo : hi) = h.mid;
}

void Butterfly::double_up(CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t d) {
  const size_t partner = group_.rank() ^ d;
  const size_t mine = group_.rank() / d * d, theirs = partner / d * d;
  exchange(channel, tracker, step, partner, span_of(mine, mine + d), span_of(theirs, theirs + d),
           Fold::kCopy);
}

void Butterfly::release(CollectiveChannel& channel, SendTracker& tracker) const {
  std::vector<size_t> partners;
  for (size_t d = 1; d < group_.size(); d *= 2) partners.push_back(group_.rank() ^ d);
  channel.release_sends(tracker, partners);
}

// Sends `out` to the partner and folds the partner's `in` into ours, both in
// pieces of chunk_bytes (the partner cuts its `out`, our `in`, the same way).
// `out` and `in` never overlap, and what a rank sent is never written later
// in the call, so sends need no wait before the end.
void Butterfly::exchange(CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t partner,
                         BlockRange out, BlockRange in, Fold fold) {
  const auto pieces_of = [&](BlockRange r) { return piece_count(r.size(), group_.options()); };
  const size_t in_pieces = pieces_of(in);
  for (size_t j = 0; j < in_pieces; ++j)
    channel.expect(partner, step, static_cast<uint32_t>(j), piece(in, j), fold);
  for (size_t j = 0; j < pieces_of(out); ++j)
    channel.send(partner, step, static_cast<uint32_t>(j), piece(out, j), tracker.token(0));
  for (size_t j = 0; j < in_pieces; ++j)
    channel.recv_into(partner, step, static_cast<uint32_t>(j), piece(in, j), fold);
}

void AllreduceButterfly::run() {
  const size_t n = group_.size();
  if (n == 1 || data_.empty()) return;
  Butterfly b(group_, data_, Butterfly::Kind::kReduceScatter);
  CollectiveChannel channel(group_, "allreduce");
  SendTracker tracker(1);
  try {
    uint32_t step = 0;
    size_t lo = 0, hi = n;
    for (size_t d = n / 2; d >= 2; d /= 2) b.halve(channel, tracker, step++, d, lo, hi);
    fused_step(b, channel, tracker, step, lo, hi);
    step += 2;
    for (size_t d = 2; d < n; d *= 2) b.double_up(channel, tracker, step++, d);
    channel.wait_sent(tracker, group_.rank() ^ 1);
  } catch (...) {
    b.release(channel, tracker);
    throw;
  }
}

// Halving at distance 1 (step), then doubling at distance 1 (step + 1): each
// piece of the block we keep is sent back as soon as the partner's copy of
// it is added. The partner's doubling pieces land where our halving pieces
// left from; a partner sends one only after it has all of ours before it,
// so they were written to the kernel by then.
void AllreduceButterfly::fused_step(Butterfly& b, CollectiveChannel& channel, SendTracker& tracker,
                                    uint32_t step, size_t lo, size_t hi) {
  using Fold = CollectiveChannel::Fold;
  const size_t partner = group_.rank() ^ 1;
  const auto [keep, give, mid] = b.halves(1, lo, hi);
  const size_t keep_pieces = piece_count(keep.size(), group_.options());
  const size_t give_pieces = piece_count(give.size(), group_.options());
  for (size_t j = 0; j < keep_pieces; ++j)
    channel.expect(partner, step, static_cast<uint32_t>(j), b.piece(keep, j), Fold::kAdd);
  for (size_t j = 0; j < give_pieces; ++j)
    channel.send(partner, step, static_cast<uint32_t>(j), b.piece(give, j), tracker.token(0));
  for (size_t j = 0; j < give_pieces; ++j)
    channel.expect(partner, step + 1, static_cast<uint32_t>(j), b.piece(give, j), Fold::kCopy);
  for (size_t j = 0; j < keep_pieces; ++j) {
    channel.recv_into(partner, step, static_cast<uint32_t>(j), b.piece(keep, j), Fold::kAdd);
    channel.send(partner, step + 1, static_cast<uint32_t>(j), b.piece(keep, j), tracker.token(0));
  }
  for (size_t j = 0; j < give_pieces; ++j)
    channel.recv_into(partner, step + 1, static_cast<uint32_t>(j), b.piece(give, j), Fold::kCopy);
}

}  // namespace gossipd::protocol
