#include "trainer/sampler.h"

#include <numeric>
#include <stdexcept>
#include <string>

#include "trainer/rng.h"

namespace gossipd::trainer {

BatchSampler::BatchSampler(size_t dataset_size, SamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  if (options.worker_count < 1 || options.worker_index < 0 || options.worker_index >= options.worker_count) {
    throw std::invalid_argument("worker index " + std::to_string(options.worker_index) + " is outside 0.." +
                                std::to_string(options.worker_count - 1));
  }
  if (options.mode == SamplingMode::kRandom) {
    // Every worker may draw any sample; an epoch is still n / W samples.
    shard_.resize(dataset_size / static_cast<size_t>(options.worker_count));
    std::iota(shard_.begin(), shard_.end(), 0u);
  } else {
    std::vector<uint32_t> all(dataset_size);
    std::iota(all.begin(), all.end(), 0u);
    Rng(options.seed).shuffle(std::span<uint32_t>(all));
    const size_t w = static_cast<size_t>(options.worker_count);
    const size_t k = static_cast<size_t>(options.worker_index);
    shard_.assign(all.begin() + static_cast<std::ptrdiff_t>(k * dataset_size / w),
                  all.begin() + static_cast<std::ptrdiff_t>((k + 1) * dataset_size / w));
  }
  start_epoch(0);
}

size_t BatchSampler::batches_per_epoch(size_t batch) const {
  return batch == 0 ? 0 : (shard_.size() + batch - 1) / batch;
}

void BatchSampler::start_epoch(uint32_t epoch) {
  epoch_ = epoch;
  cursor_ = 0;
  random_draws_ = 0;
  if (options_.mode == SamplingMode::kShard) {
    order_ = shard_;
    Rng::derive(options_.seed, static_cast<uint64_t>(options_.worker_index) + 1, epoch)
        .shuffle(std::span<uint32_t>(order_));
  }
}

std::span<const uint32_t> BatchSampler::next_batch(size_t batch) {
  const size_t remaining = shard_.size() - cursor_;
  const size_t take = std::min(batch, remaining);
  if (options_.mode == SamplingMode::kShard) {
    std::span<const uint32_t> out(order_.data() + cursor_, take);
    cursor_ += take;
    return out;
  }
  // Per-(worker, epoch, batch) stream: the same draws whatever batch sizes came before.
  Rng rng = Rng::derive(options_.seed ^ 0x5bd1e995ULL,
                        (static_cast<uint64_t>(options_.worker_index) << 32) | epoch_, random_draws_++);
  random_batch_.resize(take);
  for (auto& idx : random_batch_) idx = static_cast<uint32_t>(rng.below(dataset_size_));
  cursor_ += take;
  return random_batch_;
}

}  // namespace gossipd::trainer
