#include "daemon/bench/trainer_bench.h"

#include <algorithm>
#include <chrono>

#include "daemon/bench/bench_workers.h"
#include "daemon/config/cli.h"
#include "trainer/gemm_set.h"
#include "trainer/models.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

trainer::Dataset synthetic_dataset(trainer::Shape shape, size_t samples, uint64_t seed) {
  trainer::Dataset d;
  d.height = shape.height;
  d.width = shape.width;
  d.channels = shape.channels;
  trainer::Rng rng(seed);
  d.images.resize(samples * shape.size());
  for (auto& x : d.images) x = static_cast<float>(rng.normal());
  d.labels.resize(samples);
  for (auto& l : d.labels) l = static_cast<uint8_t>(rng.below(10));
  return d;
}

}  // namespace

TrainerBenchResult bench_trainer(const TrainerBenchOptions& o, int threads) {
  set_blas_threads(threads);
  trainer::ModelOptions mo;
  mo.name = o.model;
  auto model = trainer::make_model(mo, 1);
  const auto shapes = model->gemm_shapes(static_cast<int>(o.batch));
  trainer::Dataset data = synthetic_dataset(model->input_shape(), o.batch * 8, 7);

  trainer::TrainerOptions to;
  to.batch = o.batch;
  to.schedule.base_lr = 0.01f;
  to.optimizer.weight_decay = 5e-4f;
  trainer::Trainer t(std::move(model), data, to);

  trainer::GemmSet gemms(shapes);
  TrainerBenchResult r;
  r.threads = threads;
  r.gemm_flops_per_step = gemms.flops();

  auto train_steps = [&](int n) {
    for (int s = 0; s < n; ++s) {
      auto idx = t.sampler().next_batch(o.batch);
      if (idx.size() < o.batch) {
        t.sampler().start_epoch(0);
        idx = t.sampler().next_batch(o.batch);
      }
      t.train_step(idx);
    }
  };
  auto gemm_steps = [&](int n) {
    for (int s = 0; s < n; ++s) gemms.run();
  };

  train_steps(3);  // warm-up: buffers sized, caches and BLAS threads up
  gemm_steps(3);
  std::vector<double> step_times, gemm_times;
  for (int trial = 0; trial < o.trials; ++trial) {
    auto t0 = Clock::now();
    train_steps(o.steps);
    auto t1 = Clock::now();
    gemm_steps(o.steps);
    auto t2 = Clock::now();
    step_times.push_back(std::chrono::duration<double>(t1 - t0).count() / o.steps);
    gemm_times.push_back(std::chrono::duration<double>(t2 - t1).count() / o.steps);
  }
  r.step_seconds = median_of(step_times);
  r.sgemm_seconds = median_of(gemm_times);
  return r;
}

}  // namespace gossipd::daemon
