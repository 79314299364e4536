#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gossipd::trainer {

enum class SamplingMode {
  kShard,   // disjoint shard per worker, reshuffled every epoch
  kRandom,  // every batch drawn uniformly (with replacement) from all data
};

struct SamplerOptions {
  uint64_t seed = 1;
  int worker_index = 0;
  int worker_count = 1;
  SamplingMode mode = SamplingMode::kShard;
};

// Hands out mini-batches of sample indices. In shard mode the dataset is
// permuted once with the shared seed (so all workers agree on the split) and
// worker k owns positions [k*n/W, (k+1)*n/W); its order is reshuffled per
// epoch with a per-worker stream.
class BatchSampler {
 public:
  BatchSampler(size_t dataset_size, SamplerOptions options);

  // Indices this worker trains on in one epoch (shard mode: its shard).
  size_t samples_per_epoch() const { return shard_.size(); }
  size_t batches_per_epoch(size_t batch) const;
  void start_epoch(uint32_t epoch);
  // The next batch, shorter at the end of an epoch, empty when it is over.
  std::span<const uint32_t> next_batch(size_t batch);
  std::span<const uint32_t> shard() const { return shard_; }

 private:
  size_t dataset_size_;
  SamplerOptions options_;
  std::vector<uint32_t> shard_;
  std::vector<uint32_t> order_;
  std::vector<uint32_t> random_batch_;
  size_t cursor_ = 0;
  uint32_t epoch_ = 0;
  uint64_t random_draws_ = 0;
};

}  // namespace gossipd::trainer
