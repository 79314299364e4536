#include "protocol/shm/payload_ring.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

namespace gossipd::protocol {
namespace {

constexpr char kMagic[8] = {'G', 'D', 'S', 'H', 'M', 'P', 'D', '1'};
constexpr size_t kFixed = sizeof(kMagic) + 4 * sizeof(uint64_t) + sizeof(uint16_t);
constexpr size_t kMaxName = 255;
constexpr size_t kLine = 64;  // the ring's header, every slot's header, and slot alignment

enum SlotState : uint32_t { kPending = 1, kReading = 2, kTaken = 3, kReclaimed = 4, kPad = 5 };
// The ring header's reader flag: 0 until the reader maps the segment.
constexpr uint32_t kReaderMapped = 1, kReaderGaveUp = 2;

// A slot's header, at a 64-byte boundary of the segment.
struct SlotHeader {
  uint32_t state;
  uint32_t reserved;
  uint64_t seq;
  uint64_t length;
};
static_assert(sizeof(SlotHeader) <= kLine);

SlotHeader* header_at(std::byte* base, uint64_t offset) {
  return reinterpret_cast<SlotHeader*>(base + offset);
}
std::atomic_ref<uint32_t> state_of(SlotHeader* h) { return std::atomic_ref<uint32_t>(h->state); }
// The reader's "mapped" flag, in the ring's own header line.
std::atomic_ref<uint32_t> mapped_flag(std::byte* base) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base));
}

size_t slot_size(size_t length) { return (kLine + length + kLine - 1) / kLine * kLine; }

// Appends v's bytes. resize and memcpy rather than insert(end, p, p + n):
// GCC 12 at -O3 warns falsely (-Warray-bounds) on the inlined insert when
// this file is compiled alone or with few others (its own room's batch).
template <class T>
void put_raw(std::vector<std::byte>& out, const T& v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <class T>
T get_raw(std::span<const std::byte> in, size_t& at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}

}  // namespace

std::vector<std::byte> encode_descriptor(const PayloadDescriptor& d) {
  std::vector<std::byte> out(reinterpret_cast<const std::byte*>(kMagic),
                             reinterpret_cast<const std::byte*>(kMagic) + sizeof(kMagic));
  put_raw(out, d.ring_bytes);
  put_raw(out, d.offset);
  put_raw(out, d.length);
  put_raw(out, d.seq);
  put_raw(out, static_cast<uint16_t>(d.ring.size()));
  const auto* name = reinterpret_cast<const std::byte*>(d.ring.data());
  out.insert(out.end(), name, name + d.ring.size());
  return out;
}

std::optional<PayloadDescriptor> decode_descriptor(std::span<const std::byte> bytes) {
  if (bytes.size() < kFixed || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) return std::nullopt;
  size_t at = sizeof(kMagic);
  PayloadDescriptor d;
  d.ring_bytes = get_raw<uint64_t>(bytes, at);
  d.offset = get_raw<uint64_t>(bytes, at);
  d.length = get_raw<uint64_t>(bytes, at);
  d.seq = get_raw<uint64_t>(bytes, at);
  const auto name_size = get_raw<uint16_t>(bytes, at);
  if (name_size > kMaxName || bytes.size() != kFixed + name_size) return std::nullopt;
  d.ring.assign(reinterpret_cast<const char*>(bytes.data() + at), name_size);
  return d;
}

PayloadRingWriter::PayloadRingWriter(size_t bytes, std::chrono::milliseconds reclaim_after)
    : mapping_(ShmMapping::create(bytes)), reclaim_after_(reclaim_after) {
  if (bytes < kMinPayloadRingBytes || bytes > kMaxPayloadRingBytes || bytes % kLine != 0)
    throw std::invalid_argument("payload ring of " + std::to_string(bytes) + " bytes");
}

bool PayloadRingWriter::mapped_by_reader() const {
  return mapped_flag(mapping_->base()).load(std::memory_order_acquire) == kReaderMapped;
}

bool PayloadRingWriter::given_up_by_reader() const {
  return mapped_flag(mapping_->base()).load(std::memory_order_acquire) == kReaderGaveUp;
}

// Frees slots from the oldest on: taken ones, and pending ones older than
// reclaim_after_ that the reader has not begun (the CAS decides the race).
void PayloadRingWriter::reclaim(Clock::time_point now) {
  while (!in_flight_.empty()) {
    const InFlight& f = in_flight_.front();
    SlotHeader* h = header_at(mapping_->base(), kLine + f.position % (bytes() - kLine));
    uint32_t s = state_of(h).load(std::memory_order_acquire);
    if (s == kPending && now - f.put >= reclaim_after_ &&
        state_of(h).compare_exchange_strong(s, kReclaimed, std::memory_order_acq_rel)) {
      ++reclaimed_;
      s = kReclaimed;
    }
    if (s != kTaken && s != kReclaimed && s != kPad) return;
    tail_ = f.position + f.size;
    in_flight_.pop_front();
  }
}

std::optional<PayloadDescriptor> PayloadRingWriter::put(std::span<const std::byte> data,
                                                        Clock::time_point now) {
  const uint64_t capacity = bytes() - kLine;
  const size_t need = slot_size(data.size());
  if (need > capacity / 2) return std::nullopt;
  reclaim(now);
  const uint64_t at = head_ % capacity;
  const uint64_t pad = at + need > capacity ? capacity - at : 0;  // the end's rest, skipped
  if (head_ + pad + need - tail_ > capacity) return std::nullopt;
  std::byte* base = mapping_->base();
  if (pad > 0) {
    SlotHeader* h = header_at(base, kLine + at);
    h->length = pad - kLine;
    state_of(h).store(kPad, std::memory_order_release);
    in_flight_.push_back({head_, static_cast<size_t>(pad), now});
    head_ += pad;
  }
  const uint64_t offset = kLine + head_ % capacity;
  SlotHeader* h = header_at(base, offset);
  h->seq = ++seq_;
  h->length = data.size();
  std::memcpy(base + offset + kLine, data.data(), data.size());
  state_of(h).store(kPending, std::memory_order_release);
  in_flight_.push_back({head_, need, now});
  head_ += need;
  return PayloadDescriptor{name(), bytes(), offset, data.size(), seq_};
}

void PayloadRingWriter::cancel(const PayloadDescriptor& d) {
  SlotHeader* h = header_at(mapping_->base(), d.offset);
  uint32_t s = kPending;
  state_of(h).compare_exchange_strong(s, kTaken, std::memory_order_acq_rel);
}

ShmMapping* PayloadRingReader::ring(const std::string& name, uint64_t bytes) {
  const auto it = rings_.find(name);
  if (it != rings_.end()) {
    if (it->second.mapping->bytes() != bytes) return nullptr;
    it->second.last_use = ++uses_;
    return it->second.mapping.get();
  }
  if (bytes < kMinPayloadRingBytes || bytes > kMaxPayloadRingBytes) return nullptr;
  auto mapping = ShmMapping::open(name, bytes);  // unlinks the name: nothing stays in /dev/shm
  mapped_flag(mapping->base()).store(kReaderMapped, std::memory_order_release);
  if (rings_.size() >= max_rings_) {  // its name is gone: its writer must make another (given_up_by_reader)
    const auto oldest = std::min_element(rings_.begin(), rings_.end(), [](const auto& a, const auto& b) {
      return a.second.last_use < b.second.last_use;
    });
    mapped_flag(oldest->second.mapping->base()).store(kReaderGaveUp, std::memory_order_release);
    rings_.erase(oldest);
  }
  ShmMapping* m = mapping.get();
  rings_[name] = Mapped{std::move(mapping), ++uses_};
  return m;
}

bool PayloadRingReader::map(const std::string& name, uint64_t bytes, std::string* why) {
  try {
    if (ring(name, bytes)) return true;
    if (why) *why = "a ring of a size no writer makes";
  } catch (const std::exception& e) {
    if (why) *why = e.what();
  }
  return false;
}

std::optional<std::vector<std::byte>> PayloadRingReader::take(const PayloadDescriptor& d, std::string* why) {
  const auto refuse = [&](const char* what) -> std::optional<std::vector<std::byte>> {
    if (why) *why = what;
    return std::nullopt;
  };
  ShmMapping* m = nullptr;
  try {
    m = ring(d.ring, d.ring_bytes);
  } catch (const std::exception&) {
    return refuse("its ring cannot be mapped");
  }
  if (!m) return refuse("its ring is not of a size a writer makes");
  if (d.offset < kLine || d.offset % kLine != 0 || d.length > m->bytes() ||
      d.offset > m->bytes() - kLine - d.length)
    return refuse("its slot lies outside the ring");
  SlotHeader* h = header_at(m->base(), d.offset);
  const auto holds_it = [&] { return h->seq == d.seq && h->length == d.length; };
  uint32_t s = state_of(h).load(std::memory_order_acquire);
  if (s != kPending) return refuse("its slot is not waiting to be read (taken, reclaimed, or never written)");
  if (!holds_it()) return refuse("its slot holds another payload");
  if (!state_of(h).compare_exchange_strong(s, kReading, std::memory_order_acq_rel))
    return refuse("its slot was taken or reclaimed meanwhile");
  if (!holds_it()) {  // reclaimed and written again between the look and the swap
    state_of(h).store(kPending, std::memory_order_release);
    return refuse("its slot holds another payload");
  }
  const std::byte* from = m->base() + d.offset + kLine;
  std::vector<std::byte> out(from, from + d.length);
  state_of(h).store(kTaken, std::memory_order_release);
  return out;
}

}  // namespace gossipd::protocol
