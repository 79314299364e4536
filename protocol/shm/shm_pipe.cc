#include "protocol/shm/shm_pipe.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace gossipd::protocol {
namespace {

constexpr size_t kPipeAlign = 64;
size_t pipe_align_up(size_t n) { return (n + kPipeAlign - 1) / kPipeAlign * kPipeAlign; }

}  // namespace

// The writer's half and the reader's half on cache lines of their own.
struct ShmPipe::Control {
  alignas(kPipeAlign) std::atomic<uint64_t> tail;  // bytes published, ever
  std::atomic<uint32_t> writer_sleeps;
  alignas(kPipeAlign) std::atomic<uint64_t> head;  // bytes freed, ever
  std::atomic<uint32_t> reader_sleeps;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);

size_t ShmPipe::mapping_bytes(size_t capacity) {
  return pipe_align_up(sizeof(Control)) + pipe_align_up(capacity);
}

ShmPipe::ShmPipe(std::byte* base, size_t capacity, bool init)
    : c_(reinterpret_cast<Control*>(base)),
      data_(base + pipe_align_up(sizeof(Control))),
      capacity_(pipe_align_up(capacity)) {
  if (init) new (c_) Control{};
}

size_t ShmPipe::write(const std::byte* data, size_t n) {
  const uint64_t tail = c_->tail.load(std::memory_order_relaxed);
  const uint64_t head = c_->head.load(std::memory_order_acquire);
  const size_t room = capacity_ - static_cast<size_t>(tail - head);
  n = std::min(n, room);
  if (n == 0) return 0;
  const size_t off = tail % capacity_;
  const size_t first = std::min(n, capacity_ - off);
  std::memcpy(data_ + off, data, first);
  std::memcpy(data_, data + first, n - first);
  c_->tail.store(tail + n, std::memory_order_seq_cst);
  return n;
}

bool ShmPipe::full() const {
  return c_->tail.load(std::memory_order_relaxed) - c_->head.load(std::memory_order_seq_cst) >= capacity_;
}

std::span<const std::byte> ShmPipe::readable() const {
  const uint64_t head = c_->head.load(std::memory_order_relaxed);
  const uint64_t tail = c_->tail.load(std::memory_order_seq_cst);
  if (tail - head > capacity_)
    throw std::runtime_error("shared-memory pipe: positions " + std::to_string(head) + ".." +
                             std::to_string(tail) + " do not fit its " + std::to_string(capacity_) +
                             " bytes");
  const size_t off = head % capacity_;
  return {data_ + off, std::min(static_cast<size_t>(tail - head), capacity_ - off)};
}

void ShmPipe::consume(size_t n) {
  c_->head.store(c_->head.load(std::memory_order_relaxed) + n, std::memory_order_seq_cst);
}

void ShmPipe::set_reader_sleeps(bool sleeps) { c_->reader_sleeps.store(sleeps, std::memory_order_seq_cst); }
void ShmPipe::set_writer_sleeps(bool sleeps) { c_->writer_sleeps.store(sleeps, std::memory_order_seq_cst); }
bool ShmPipe::reader_sleeps() const { return c_->reader_sleeps.load(std::memory_order_seq_cst) != 0; }
bool ShmPipe::writer_sleeps() const { return c_->writer_sleeps.load(std::memory_order_seq_cst) != 0; }

}  // namespace gossipd::protocol
