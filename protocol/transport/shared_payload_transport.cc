#include "protocol/transport/shared_payload_transport.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "protocol/transport/data_socket.h"
#include "protocol/transport/lanes.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

// The trailer after a message's frames: magic, the ring's size and name when
// announced (0 and none otherwise), then the indices (uint16) of the frames
// that are descriptors.
constexpr char kTrailer[8] = {'G', 'D', 'S', 'H', 'M', 'T', 'R', '2'};
// A reader's word back: the ring it could not map (a message of one frame).
constexpr char kNotice[8] = {'G', 'D', 'S', 'H', 'M', 'N', 'O', '1'};
constexpr size_t kTrailerFixed = sizeof(kTrailer) + sizeof(uint64_t) + sizeof(uint16_t);
constexpr size_t kMaxPayloadFrames = 64;
constexpr size_t kMaxRingName = 255;
constexpr int kRefusalsBeforeOff = 3;  // a peer that cannot map our rings: its payloads go inline

bool starts_with(const Frame& f, const char (&magic)[8]) {
  return f.size() >= sizeof(magic) && std::memcmp(f.data(), magic, sizeof(magic)) == 0;
}

OutFrame encode_trailer(const PayloadTrailer& t) {
  std::string s(kTrailer, sizeof(kTrailer));
  s.append(reinterpret_cast<const char*>(&t.ring_bytes), sizeof(t.ring_bytes));
  const auto n = static_cast<uint16_t>(t.ring.size());
  s.append(reinterpret_cast<const char*>(&n), sizeof(n)).append(t.ring);
  s.append(reinterpret_cast<const char*>(t.indices.data()), t.indices.size() * sizeof(uint16_t));
  return OutFrame::from_string(std::move(s));
}

std::optional<PayloadTrailer> decode_trailer(const Frame& f) {
  if (f.size() < kTrailerFixed || !starts_with(f, kTrailer)) return std::nullopt;
  PayloadTrailer t;
  uint16_t n = 0;
  std::memcpy(&t.ring_bytes, f.data() + sizeof(kTrailer), sizeof(t.ring_bytes));
  std::memcpy(&n, f.data() + sizeof(kTrailer) + sizeof(t.ring_bytes), sizeof(n));
  const size_t rest = f.size() - kTrailerFixed;
  if (n > kMaxRingName || n > rest || (rest - n) % sizeof(uint16_t) != 0 ||
      (rest - n) / 2 > kMaxPayloadFrames)
    return std::nullopt;
  t.ring.assign(reinterpret_cast<const char*>(f.data() + kTrailerFixed), n);
  t.indices.resize((rest - n) / sizeof(uint16_t));
  if (!t.indices.empty())  // an announcement alone has none (memcpy into no buffer is undefined)
    std::memcpy(t.indices.data(), f.data() + kTrailerFixed + n, rest - n);
  return t;
}

}  // namespace

SharedPayloadTransport::SharedPayloadTransport(std::unique_ptr<Transport> inner, SharedPayloadOptions options)
    : inner_(std::move(inner)), options_(options) {}

SharedPayloadTransport::~SharedPayloadTransport() = default;

void SharedPayloadTransport::connect(const std::string& peer, const std::string& endpoint) {
  inner_->connect(peer, endpoint);
  std::lock_guard lock(mutex_);
  std::string& known = endpoints_[peer];
  if (known != endpoint) rings_.erase(peer);  // moved: another process, which cannot map the old ring
  known = endpoint;
  // A lane carries small control messages inline: no ring of its own.
  if (!is_lane(peer) && same_host(inner_->endpoint(), endpoint) && refusals_[peer] < kRefusalsBeforeOff) {
    same_host_.insert(peer);
  } else {
    same_host_.erase(peer);
    rings_.erase(peer);
  }
}

void SharedPayloadTransport::disconnect(const std::string& peer) {
  {
    std::lock_guard lock(mutex_);
    same_host_.erase(peer);
    rings_.erase(peer);
    refusals_.erase(peer);
    endpoints_.erase(peer);
  }
  inner_->disconnect(peer);
}

PayloadRingWriter* SharedPayloadTransport::ring_for(const std::string& peer) {
  auto it = rings_.find(peer);
  if (it != rings_.end() && it->second.writer->given_up_by_reader()) {
    rings_.erase(it);
    it = rings_.end();
  }
  if (it == rings_.end()) {
    if (rings_.size() >= options_.max_rings) {
      rings_.erase(std::min_element(rings_.begin(), rings_.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      }));
    }
    try {
      auto writer = std::make_unique<PayloadRingWriter>(options_.ring_bytes, options_.reclaim_after);
      it = rings_.emplace(peer, Ring{std::move(writer), 0}).first;
    } catch (const std::exception& e) {
      if (!warned_)
        spdlog::warn("node '{}': payloads to members on this host keep the sockets: {}", node_id(), e.what());
      warned_ = true;
      same_host_.erase(peer);
      return nullptr;
    }
  }
  it->second.last_use = ++uses_;
  return it->second.writer.get();
}

// Until the peer has mapped the ring, every message announces it and its
// payloads go inline; then big frames go in and descriptors take their place.
std::vector<PayloadDescriptor> SharedPayloadTransport::put_frames(const std::string& peer,
                                                                  std::vector<OutFrame>& frames) {
  if (frames.size() < 2) return {};
  const bool big = std::any_of(frames.begin() + 1, frames.end(),
                               [&](const OutFrame& f) { return f.size >= options_.min_frame_bytes; });
  PayloadRingWriter* ring = big && frames.size() < kMaxPayloadFrames ? ring_for(peer) : nullptr;
  if (!ring) return {};
  PayloadTrailer t;
  std::vector<PayloadDescriptor> put;
  if (!ring->mapped_by_reader()) {
    t.ring = ring->name();
    t.ring_bytes = ring->bytes();
  } else {
    refusals_.erase(peer);  // only refusals in a row turn a peer's rings off
    for (size_t i = 1; i < frames.size(); ++i) {
      if (frames[i].size < options_.min_frame_bytes) continue;
      const auto d = ring->put({static_cast<const std::byte*>(frames[i].data), frames[i].size});
      if (!d) continue;  // no room now: this frame goes inline
      const std::vector<std::byte> bytes = encode_descriptor(*d);
      frames[i] = OutFrame::copy_of(bytes.data(), bytes.size());  // the caller's bytes are released here
      t.indices.push_back(static_cast<uint16_t>(i));
      put.push_back(*d);
    }
    if (put.empty()) return {};
  }
  frames.push_back(encode_trailer(t));
  return put;
}

void SharedPayloadTransport::cancel(const std::vector<PayloadDescriptor>& put) {
  std::lock_guard lock(mutex_);
  for (const PayloadDescriptor& d : put) {
    for (auto& [peer, ring] : rings_) {
      if (ring.writer->name() == d.ring) ring.writer->cancel(d);
    }
  }
}

void SharedPayloadTransport::send(const std::string& peer, std::vector<OutFrame> frames,
                                  std::chrono::milliseconds timeout) {
  std::vector<PayloadDescriptor> put;
  {
    std::lock_guard lock(mutex_);
    if (same_host_.count(peer)) put = put_frames(peer, frames);
  }
  try {
    inner_->send(peer, std::move(frames), timeout);
  } catch (...) {
    cancel(put);
    throw;
  }
  for (const PayloadDescriptor& d : put) shared_bytes_ += d.length;
}

// Tells `peer` we cannot map its ring `ring` (best effort: a notice lost
// costs one more refused payload).
void SharedPayloadTransport::notify(const std::string& peer, const std::string& ring,
                                    const std::string& why) {
  ++refused_;
  spdlog::debug("node '{}': cannot map ring {} of '{}': {}", node_id(), ring, peer, why);
  std::string notice(kNotice, sizeof(kNotice));
  notice.append(ring);
  std::vector<OutFrame> frames;
  frames.push_back(OutFrame::from_string(std::move(notice)));
  try {
    inner_->send(peer, std::move(frames), std::chrono::milliseconds(0));
  } catch (const std::exception&) {
  }
}

// Our ring to `peer` could not be mapped there (its process restarted, or
// its /dev/shm is not ours): a new ring next time, none after a few.
void SharedPayloadTransport::refused_by(const std::string& peer, const std::string& ring) {
  std::lock_guard lock(mutex_);
  const auto it = rings_.find(peer);
  if (it == rings_.end() || it->second.writer->name() != ring) return;
  rings_.erase(it);
  if (++refusals_[peer] >= kRefusalsBeforeOff) {
    same_host_.erase(peer);
    spdlog::info("node '{}': '{}' cannot map our rings: its payloads go on the socket", node_id(), peer);
  }
}

// Each descriptor frame replaced by its payload; one that does not match
// its ring by an empty frame (the validator then drops the message).
void SharedPayloadTransport::restore(RawMessage& m, const PayloadTrailer& t) {
  m.frames.pop_back();
  std::string why;
  if (!t.ring.empty() && !reader_.map(t.ring, t.ring_bytes, &why)) notify(m.peer, t.ring, why);
  for (uint16_t i : t.indices) {
    if (i == 0 || i >= m.frames.size()) continue;
    std::optional<std::vector<std::byte>> payload;
    const auto d = decode_descriptor({m.frames[i].data(), m.frames[i].size()});
    if (d) payload = reader_.take(*d, &why);
    if (payload) {
      m.frames[i] = Frame(std::move(*payload));
      continue;
    }
    m.frames[i] = Frame();
    if (d && !reader_.maps(d->ring)) {
      notify(m.peer, d->ring, why);
    } else {
      ++refused_;
    }
  }
}

std::optional<RawMessage> SharedPayloadTransport::receive(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    std::optional<RawMessage> m = inner_->receive(
        std::max(std::chrono::milliseconds(0),
                 std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
    if (!m) return m;
    if (m->frames.size() == 1 && starts_with(m->frames[0], kNotice)) {
      const Frame& f = m->frames[0];
      refused_by(m->peer, std::string(reinterpret_cast<const char*>(f.data()) + sizeof(kNotice),
                                      f.size() - sizeof(kNotice)));
      if (Clock::now() >= deadline) return std::nullopt;
      continue;
    }
    if (m->frames.size() >= 2) {
      if (const auto t = decode_trailer(m->frames.back())) restore(*m, *t);
    }
    return m;
  }
}

}  // namespace gossipd::protocol
