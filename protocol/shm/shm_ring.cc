#include "protocol/shm/shm_ring.h"

#include <linux/futex.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace gossipd::protocol {
namespace {

constexpr size_t kAlign = 64;
constexpr uint64_t kWrap = ~uint64_t{0};  // a header's floats: go back to the start

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void futex_wait(std::atomic<uint32_t>& word, uint32_t seen, ShmRing::Clock::time_point until) {
  const auto left = until - ShmRing::Clock::now();
  if (left <= ShmRing::Clock::duration::zero()) return;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  // Not FUTEX_PRIVATE: the word is in memory another process maps.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace

// The writer's half and the reader's half on cache lines of their own.
struct ShmRing::Control {
  alignas(kAlign) std::atomic<uint64_t> tail;  // bytes published, ever
  std::atomic<uint32_t> published;             // commits, ever (the reader's futex)
  std::atomic<uint32_t> reader_sleeps;
  alignas(kAlign) std::atomic<uint64_t> head;  // bytes freed, ever
  std::atomic<uint32_t> freed;                 // pops, ever (the writer's futex)
  std::atomic<uint32_t> writer_sleeps;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);

size_t ShmRing::mapping_bytes(size_t capacity) { return align_up(sizeof(Control)) + align_up(capacity); }

ShmRing::ShmRing(std::byte* base, size_t capacity, bool init)
    : c_(reinterpret_cast<Control*>(base)),
      data_(base + align_up(sizeof(Control))),
      capacity_(align_up(capacity)) {
  if (init) new (c_) Control{};
}

float* ShmRing::reserve(size_t floats) {
  if (floats > max_floats(capacity_)) return nullptr;
  const size_t need = align_up(kFrameHeader + floats * sizeof(float));
  uint64_t tail = c_->tail.load(std::memory_order_relaxed);
  const uint64_t head = c_->head.load(std::memory_order_acquire);
  const size_t off = tail % capacity_;
  const size_t skip = off + need > capacity_ ? capacity_ - off : 0;
  if (capacity_ - (tail - head) < skip + need) return nullptr;
  if (skip > 0) {  // the frame would wrap: mark the rest of the ring skipped
    std::memcpy(data_ + off + sizeof(uint64_t), &kWrap, sizeof(kWrap));
    tail += skip;
    c_->tail.store(tail, std::memory_order_release);
  }
  reserved_at_ = tail;
  reserved_bytes_ = need;
  const uint64_t n = floats;
  std::memcpy(data_ + tail % capacity_ + sizeof(uint64_t), &n, sizeof(n));
  return reinterpret_cast<float*>(data_ + tail % capacity_ + kFrameHeader);
}

void ShmRing::commit(uint64_t seq) {
  std::memcpy(data_ + reserved_at_ % capacity_, &seq, sizeof(seq));
  c_->tail.store(reserved_at_ + reserved_bytes_, std::memory_order_release);
  c_->published.fetch_add(1, std::memory_order_seq_cst);
  if (c_->reader_sleeps.load(std::memory_order_seq_cst) != 0) futex_wake(c_->published);
}

std::optional<ShmRing::Frame> ShmRing::front() {
  for (;;) {
    const uint64_t head = c_->head.load(std::memory_order_relaxed);
    const uint64_t tail = c_->tail.load(std::memory_order_acquire);
    if (head == tail) return std::nullopt;
    if (tail - head > capacity_ || head % kAlign != 0)
      throw std::runtime_error("shared-memory ring: positions " + std::to_string(head) + ".." +
                               std::to_string(tail) + " do not fit its " + std::to_string(capacity_) +
                               " bytes");
    const size_t off = head % capacity_, have = tail - head;
    uint64_t seq = 0, floats = 0;  // read once: the writer is another process
    std::memcpy(&seq, data_ + off, sizeof(seq));
    std::memcpy(&floats, data_ + off + sizeof(uint64_t), sizeof(floats));
    if (floats == kWrap) {
      if (capacity_ - off > have)
        throw std::runtime_error("shared-memory ring: a wrap mark past what was published");
      c_->head.store(head + (capacity_ - off), std::memory_order_release);
      continue;
    }
    if (floats > max_floats(capacity_))
      throw std::runtime_error("shared-memory ring: a frame of " + std::to_string(floats) +
                               " floats, more than the ring takes");
    const size_t need = align_up(kFrameHeader + floats * sizeof(float));
    if (off + need > capacity_ || need > have)
      throw std::runtime_error("shared-memory ring: a frame of " + std::to_string(floats) +
                               " floats past what was published");
    front_bytes_ = need;
    return Frame{seq, {reinterpret_cast<const float*>(data_ + off + kFrameHeader), floats}};
  }
}

void ShmRing::pop() {
  const uint64_t head = c_->head.load(std::memory_order_relaxed);
  c_->head.store(head + front_bytes_, std::memory_order_release);
  c_->freed.fetch_add(1, std::memory_order_seq_cst);
  if (c_->writer_sleeps.load(std::memory_order_seq_cst) != 0) futex_wake(c_->freed);
}

uint32_t ShmRing::published() const { return c_->published.load(std::memory_order_seq_cst); }
uint32_t ShmRing::freed() const { return c_->freed.load(std::memory_order_seq_cst); }

void ShmRing::wait_published(uint32_t seen, Clock::time_point until) {
  c_->reader_sleeps.store(1, std::memory_order_seq_cst);
  if (published() == seen) futex_wait(c_->published, seen, until);
  c_->reader_sleeps.store(0, std::memory_order_seq_cst);
}

void ShmRing::wait_freed(uint32_t seen, Clock::time_point until) {
  c_->writer_sleeps.store(1, std::memory_order_seq_cst);
  if (freed() == seen) futex_wait(c_->freed, seen, until);
  c_->writer_sleeps.store(0, std::memory_order_seq_cst);
}

// --- ShmSegment ---

namespace {
size_t segment_bytes(size_t capacity) { return 2 * ShmRing::mapping_bytes(capacity); }
}  // namespace

ShmSegment::ShmSegment(std::unique_ptr<ShmMapping> mapping, size_t capacity, bool init)
    : mapping_(std::move(mapping)) {
  const size_t one = ShmRing::mapping_bytes(capacity);
  rings_[0] = std::make_unique<ShmRing>(mapping_->base(), capacity, init);
  rings_[1] = std::make_unique<ShmRing>(mapping_->base() + one, capacity, init);
}

std::unique_ptr<ShmSegment> ShmSegment::create(size_t capacity) {
  return std::unique_ptr<ShmSegment>(
      new ShmSegment(ShmMapping::create(segment_bytes(capacity)), capacity, true));
}

std::unique_ptr<ShmSegment> ShmSegment::open(const std::string& name, size_t capacity) {
  return std::unique_ptr<ShmSegment>(
      new ShmSegment(ShmMapping::open(name, segment_bytes(capacity)), capacity, false));
}

ShmSegment::~ShmSegment() = default;

}  // namespace gossipd::protocol
