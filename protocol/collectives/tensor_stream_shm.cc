// TensorStream between members on one host: a shared segment per pair
// (protocol/shm/shm_ring.h), set up by share_memory() over the stream itself.
#include <sched.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <map>

#include "protocol/collectives/tensor_stream.h"
#include "protocol/shm/shm_ring.h"
#include "protocol/transport/data_socket.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

// The handshake's tensors, far above any seq Group::next_seq() reaches.
constexpr uint64_t kOfferSeq = uint64_t{1} << 62;
constexpr uint64_t kAnswerSeq = kOfferSeq + 1;
// An offer: the name's length, then its bytes, in floats' bits (a length of
// 0: this side shares no memory with the other).
constexpr size_t kOfferFloats = 16;
// Out-of-order tensors kept per peer before the oldest is dropped (counted).
constexpr size_t kMaxStashed = 256;

std::vector<float> encode_offer(const std::string& name) {
  std::vector<float> f(kOfferFloats, 0.0f);
  const auto n = static_cast<float>(name.size());
  f[0] = n;
  if (name.size() <= (kOfferFloats - 1) * sizeof(float)) std::memcpy(f.data() + 1, name.data(), name.size());
  return f;
}

// The offered name, "" for none or a malformed offer.
std::string decode_offer(const std::vector<float>& f) {
  const float n = f[0];
  if (!(n >= 1.0f && n <= static_cast<float>((kOfferFloats - 1) * sizeof(float)))) return {};
  std::string name(static_cast<size_t>(n), '\0');
  std::memcpy(name.data(), f.data() + 1, name.size());
  return name;
}

// A segment to offer, or none when this host cannot give one (a full
// /dev/shm, say): the pair keeps the sockets, with a warning in the log.
std::unique_ptr<ShmSegment> make_segment(Node& node, size_t ring_bytes) {
  try {
    return ShmSegment::create(ring_bytes);
  } catch (const std::runtime_error& e) {
    spdlog::warn("{}: no shared memory for tensors ({}); they take the sockets", node.id(), e.what());
    return nullptr;
  }
}

}  // namespace

struct TensorStream::Shared {
  struct Peer {
    std::unique_ptr<ShmSegment> segment;
    ShmRing* out = nullptr;
    ShmRing* in = nullptr;
    std::map<uint64_t, std::vector<float>> stash;  // arrived before their receive
  };
  std::vector<Peer> peers;  // by rank; no segment: not shared
  size_t max_floats = 0;
  size_t count = 0;  // peers with a segment
};

TensorStream::TensorStream(Group& group) : group_(group) {}
TensorStream::~TensorStream() = default;

bool TensorStream::shared_with(size_t rank, size_t floats) const {
  return shared_ && rank < shared_->peers.size() && shared_->peers[rank].segment &&
         floats <= shared_->max_floats;
}

size_t TensorStream::share_memory(size_t ring_bytes) {
  if (shared_) return shared_->count;
  Node& node = group_.node();
  const size_t n = group_.size(), me = group_.rank();
  // The same test as the direct links' pipes: one host, a direct path, no
  // injected faults, shared memory not turned off (--shm-kb 0).
  const auto eligible = [&](size_t r) { return node.shares_memory_with(group_.member(r)); };
  auto s = std::make_unique<Shared>();
  s->peers.resize(n);
  s->max_floats = ShmRing::max_floats(ring_bytes);
  std::vector<SendHandle> sent;
  std::vector<std::vector<float>> offers(n);
  for (size_t r = me + 1; r < n; ++r) {  // offer every higher rank a segment (or none)
    if (eligible(r)) s->peers[r].segment = make_segment(node, ring_bytes);
    offers[r] = encode_offer(s->peers[r].segment ? s->peers[r].segment->name() : "");
    sent.push_back(send_counted(r, kOfferSeq, offers[r], false));
  }
  std::vector<std::vector<float>> answers(n, std::vector<float>(1, 0.0f));
  for (size_t r = 0; r < me; ++r) {  // map what every lower rank offers, and say whether it worked
    std::vector<float> offer(kOfferFloats);
    recv(r, kOfferSeq, offer);
    const std::string name = decode_offer(offer);
    if (!name.empty() && eligible(r)) {
      try {
        s->peers[r].segment = ShmSegment::open(name, ring_bytes);
        answers[r][0] = 1.0f;
      } catch (const std::runtime_error& e) {
        node.reject_log().reject(group_.member(r), RejectReason::kBadBody, e.what());
      }
    }
    sent.push_back(send_counted(r, kAnswerSeq, answers[r], false));
  }
  for (size_t r = me + 1; r < n; ++r) {
    recv(r, kAnswerSeq, answers[r]);
    if (s->peers[r].segment) s->peers[r].segment->unlink();  // mapped on both sides, or never will be
    if (answers[r][0] != 1.0f) s->peers[r].segment.reset();
  }
  for (const SendHandle& h : sent) wait(h);
  for (size_t r = 0; r < n; ++r) {
    Shared::Peer& p = s->peers[r];
    if (!p.segment) continue;
    p.out = &p.segment->ring(r > me ? 0 : 1);
    p.in = &p.segment->ring(r > me ? 1 : 0);
    ++s->count;
  }
  shared_ = std::move(s);
  return shared_->count;
}

void TensorStream::send_shared(size_t to_rank, uint64_t seq, size_t floats,
                               const std::function<void(float*)>& fill) {
  ShmRing& ring = *shared_->peers[to_rank].out;
  const auto deadline = Clock::now() + group_.options().timeout;
  const auto spin_until = Clock::now() + group_.options().spin;
  for (;;) {
    const uint32_t seen = ring.freed();
    if (float* to = ring.reserve(floats)) {
      fill(to);
      ring.commit(seq);
      return;
    }
    if (group_.options().stop.stop_requested()) throw Aborted(group_.node().id(), "tensor send");
    const auto now = Clock::now();
    if (now >= deadline)
      throw PeerTimeout(group_.node().id(), group_.member(to_rank), group_.options().timeout, "tensor send");
    if (now < spin_until) {
      sched_yield();  // as GroupWire::drive: the peer may need this core
    } else {
      ring.wait_freed(seen, std::min(deadline, now + std::chrono::milliseconds(10)));
    }
  }
}

bool TensorStream::recv_shared(size_t from_rank, uint64_t seq, size_t floats,
                               const std::function<void(const float*)>& use, Clock::time_point deadline) {
  Shared::Peer& p = shared_->peers[from_rank];
  Node& node = group_.node();
  const std::string& peer = group_.member(from_rank);
  if (auto it = p.stash.find(seq); it != p.stash.end() && it->second.size() == floats) {
    use(it->second.data());
    p.stash.erase(it);
    return true;
  }
  const auto spin_until = Clock::now() + group_.options().spin;
  for (;;) {
    const uint32_t seen = p.in->published();
    std::optional<ShmRing::Frame> f;
    try {
      f = p.in->front();
    } catch (const std::runtime_error& e) {
      node.reject_log().reject(peer, RejectReason::kBadBody, e.what());
      throw PeerLost(node.id(), peer, "tensor receive", e.what());
    }
    if (f && f->seq == seq && f->data.size() == floats) {
      use(f->data.data());
      p.in->pop();
      return true;
    }
    if (f) {  // another tensor: kept for its receive (a wrong size for this one is dropped)
      if (f->seq == seq) {
        node.reject_log().reject(peer, RejectReason::kSizeMismatch,
                                 "tensor " + std::to_string(seq) + " of " + std::to_string(f->data.size()) +
                                     " floats, expected " + std::to_string(floats));
      } else {
        if (p.stash.size() >= kMaxStashed) {
          node.reject_log().reject(peer, RejectReason::kStale,
                                   "tensor " + std::to_string(p.stash.begin()->first) + " never received");
          p.stash.erase(p.stash.begin());
        }
        p.stash[f->seq].assign(f->data.begin(), f->data.end());
      }
      p.in->pop();
      continue;
    }
    if (group_.options().stop.stop_requested()) throw Aborted(node.id(), "tensor receive");
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now < spin_until) {
      sched_yield();  // as GroupWire::drive: the peer may need this core
    } else {
      p.in->wait_published(seen, std::min(deadline, now + std::chrono::milliseconds(10)));
    }
  }
}

}  // namespace gossipd::protocol
