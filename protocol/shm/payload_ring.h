#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/shm/shm_mapping.h"

namespace gossipd::protocol {

// Where a payload put in a PayloadRing lies: what travels on the socket in
// its place (SharedPayloadTransport).
struct PayloadDescriptor {
  std::string ring;     // the segment's name
  uint64_t ring_bytes;  // its size
  uint64_t offset;      // of the slot's 64-byte header
  uint64_t length;      // payload bytes after it
  uint64_t seq;         // the writer's count of puts; the header must say the same
};

std::vector<std::byte> encode_descriptor(const PayloadDescriptor& d);
// nullopt for bytes that are not an encoded descriptor.
std::optional<PayloadDescriptor> decode_descriptor(std::span<const std::byte> bytes);

// Smallest and largest ring a reader maps.
constexpr size_t kMinPayloadRingBytes = size_t{64} << 10;
constexpr size_t kMaxPayloadRingBytes = size_t{1} << 30;

// One writer's ring of payloads towards one reader, in a segment both map
// (ShmMapping). Each payload takes a slot: a 64-byte header (its state, its
// put's seq, its length) and the bytes. The reader takes slots in any order
// (their descriptors may arrive out of order, over two connections); the
// writer reuses space from the oldest slot on once it is taken. A slot whose
// descriptor never came (lost with a closed connection) is reclaimed by the
// writer after `reclaim_after`: a reader that comes later finds it
// reclaimed and refuses it, so a slot is read by one side or reused by the
// other, never both (a compare-and-swap on its state decides).
class PayloadRingWriter {
 public:
  using Clock = std::chrono::steady_clock;
  // Throws ShmError (or std::runtime_error) when the segment cannot be made.
  PayloadRingWriter(size_t bytes, std::chrono::milliseconds reclaim_after);

  // Copies `data` into a slot: its descriptor, or nullopt when the ring has
  // no room for it now (the caller sends it inline). Payloads above half
  // the ring never go in.
  std::optional<PayloadDescriptor> put(std::span<const std::byte> data, Clock::time_point now = Clock::now());
  // A slot whose descriptor did not go out: free at once.
  void cancel(const PayloadDescriptor& d);
  // Whether the reader has mapped the segment (its name is gone then), and
  // whether it has unmapped it again to map others (the writer then makes
  // a new ring: the old name cannot be opened again).
  bool mapped_by_reader() const;
  bool given_up_by_reader() const;
  const std::string& name() const { return mapping_->name(); }
  size_t bytes() const { return mapping_->bytes(); }
  uint64_t reclaimed() const { return reclaimed_; }

 private:
  struct InFlight {
    uint64_t position;  // monotonic byte position of the slot
    size_t size;        // header, payload, alignment
    Clock::time_point put;
  };
  void reclaim(Clock::time_point now);
  std::unique_ptr<ShmMapping> mapping_;
  std::chrono::milliseconds reclaim_after_;
  uint64_t head_ = 0, tail_ = 0, seq_ = 0, reclaimed_ = 0;
  std::deque<InFlight> in_flight_;
};

// The reading side: the rings named by descriptors, mapped on first use
// (at most `max_rings`; the least recently used is unmapped to map another,
// and its writer told so through the ring's header).
class PayloadRingReader {
 public:
  explicit PayloadRingReader(size_t max_rings = 64) : max_rings_(max_rings) {}
  // The payload `d` describes, copied out, its slot freed for the writer; or
  // nullopt with `why` when the descriptor does not match what the ring
  // holds (a name not ours, bounds, a header of another seq or length, a
  // slot already taken or reclaimed).
  std::optional<std::vector<std::byte>> take(const PayloadDescriptor& d, std::string* why);
  // Maps the ring a writer announced (telling it so through the ring's
  // header); false with `why` when it cannot be (a name not ours, gone, of
  // another size: a segment this process cannot open).
  bool map(const std::string& name, uint64_t bytes, std::string* why);
  bool maps(const std::string& name) const { return rings_.count(name) > 0; }

 private:
  ShmMapping* ring(const std::string& name, uint64_t bytes);
  size_t max_rings_;
  uint64_t uses_ = 0;
  struct Mapped {
    std::unique_ptr<ShmMapping> mapping;
    uint64_t last_use;
  };
  std::map<std::string, Mapped> rings_;
};

}  // namespace gossipd::protocol
