#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gossipd::protocol {

// A one-way byte stream through memory two processes on one host map (one
// writer, one reader): a single-producer single-consumer ring of bytes with
// its positions on cache lines of their own. The writer copies in what fits
// and publishes it with a release store; the reader uses the bytes in place
// and frees them. No system call on either side: a side that is about to
// sleep says so (sleeps flags), and the other, seeing the flag after it
// moved a position, wakes it by whatever means its owner has (DataLink rings
// a doorbell on its socket). The reader checks the positions before use:
// the writer is another process.
class ShmPipe {
 public:
  // The pipe's bytes in a mapping (control block and ring), 64-byte aligned.
  static size_t mapping_bytes(size_t capacity);

  // Over `base` (mapping_bytes(capacity) bytes, 64-byte aligned). `init`:
  // the creator zeroes the control block.
  ShmPipe(std::byte* base, size_t capacity, bool init);

  // Writer: copies up to n bytes in (what fits), publishes them; returns how many.
  size_t write(const std::byte* data, size_t n);
  bool full() const;

  // Reader: the published bytes up to the end of the ring (the rest, if
  // they wrap, after consume()); empty when none. Throws std::runtime_error
  // (what is wrong) when the positions cannot be the writer's.
  std::span<const std::byte> readable() const;
  void consume(size_t n);

  // Set by a side before it sleeps, cleared when it wakes; the other side
  // reads it after it moved its position (sequentially consistent, so one
  // of the two always sees the other).
  void set_reader_sleeps(bool sleeps);
  void set_writer_sleeps(bool sleeps);
  bool reader_sleeps() const;
  bool writer_sleeps() const;

  size_t capacity() const { return capacity_; }

 private:
  struct Control;
  Control* c_;
  std::byte* data_;
  size_t capacity_;
};

}  // namespace gossipd::protocol
