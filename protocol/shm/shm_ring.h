#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "protocol/shm/shm_mapping.h"

namespace gossipd::protocol {

// A one-way queue of float32 tensors in memory that two processes on one
// host map (one writer, one reader): the writer fills a frame in place and
// publishes it; the reader uses it in place and frees it. No system call on
// the way unless a side sleeps (a futex on the publish counter; the writer
// wakes the reader only when it said it sleeps). Frames are 64-byte aligned,
// {seq, floats} then the payload; a frame never wraps (a wrap mark sends the
// reader back to the start). The reader validates every header before use:
// the writer is another process.
class ShmRing {
 public:
  using Clock = std::chrono::steady_clock;
  // The ring's bytes in a mapping, the control block included.
  static size_t mapping_bytes(size_t capacity);
  // The largest frame (floats) a ring of `capacity` payload bytes takes: a
  // quarter, so a frame always fits once the reader caught up on two.
  static size_t max_floats(size_t capacity) { return (capacity / 4 - kFrameHeader) / sizeof(float); }

  // Over `base` (mapping_bytes(capacity), 64-byte aligned). `init`: the
  // creator zeroes the control block.
  ShmRing(std::byte* base, size_t capacity, bool init);

  // Writer: room for `floats` (at most max_floats) in place, or nullptr when
  // the reader has not yet freed enough; then commit() publishes it.
  float* reserve(size_t floats);
  void commit(uint64_t seq);

  // Reader: the oldest published frame, nullopt when none. Throws
  // std::runtime_error (what is wrong) when the header cannot be the
  // writer's; pop() frees it.
  struct Frame {
    uint64_t seq = 0;
    std::span<const float> data;
  };
  std::optional<Frame> front();
  void pop();

  // Sleeps until something is published (reader) or freed (writer), or
  // `until`; may wake early.
  void wait_published(uint32_t seen, Clock::time_point until);
  void wait_freed(uint32_t seen, Clock::time_point until);
  uint32_t published() const;
  uint32_t freed() const;

 private:
  static constexpr size_t kFrameHeader = 64;
  struct Control;
  Control* c_;
  std::byte* data_;
  size_t capacity_;
  uint64_t reserved_at_ = 0, reserved_bytes_ = 0;  // writer: the frame being filled
  uint64_t front_bytes_ = 0;                       // reader: the frame front() returned
};

// The memory two processes share for a pair of rings (one each way), made
// by the lower rank and opened by the higher (ShmMapping: a fresh random
// name, unlinked once both mapped it). Throws std::runtime_error naming what
// failed.
class ShmSegment {
 public:
  static std::unique_ptr<ShmSegment> create(size_t capacity);
  static std::unique_ptr<ShmSegment> open(const std::string& name, size_t capacity);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const std::string& name() const { return mapping_->name(); }
  void unlink() { mapping_->unlink(); }  // the name goes (done once; the mapping stays)
  // Ring 0 carries lower -> higher, ring 1 higher -> lower.
  ShmRing& ring(size_t k) { return *rings_[k]; }

 private:
  ShmSegment(std::unique_ptr<ShmMapping> mapping, size_t capacity, bool init);
  std::unique_ptr<ShmMapping> mapping_;
  std::unique_ptr<ShmRing> rings_[2];
};

}  // namespace gossipd::protocol
